"""Issue 13 item 5: render, then ``import timm``, in one Python process (a notebook).

Rendering in-process initialises Mesa llvmpipe's LLVM; a later ``import triton`` (timm →
torchvision → triton) crashed with SIGSEGV (rc 139). ``engine/server/gl/llvm_order.py`` loads
triton first. Each sequence runs in a fresh subprocess, since a crash would take pytest down.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
pytestmark = [
    pytest.mark.render,
    pytest.mark.skipif(
        importlib.util.find_spec("triton") is None or importlib.util.find_spec("timm") is None,
        reason="needs triton and timm installed (the crash involves them)",
    ),
]

IN_PROCESS = textwrap.dedent("""
    from sceneforge.assets_manifest import AssetLibrary
    from sceneforge.engine.server.gl.backend import GLBackend
    from sceneforge.engine.world import Actor, Camera, Scene, Transform, look_at_rotation
    scene = Scene()
    scene.add(Actor("box", AssetLibrary.procedural().ids()[0], Transform((500, 0, 0))))
    cam = Camera((0, 0, 150), look_at_rotation((0, 0, 150), (500, 0, 0)), 60, 32, 32)
    lib = AssetLibrary.procedural()
    out = GLBackend(lib.mesh).render(scene, cam, ("lit",))
    assert out["lit"].shape == (32, 32, 3)
    import timm, torch
    model = timm.create_model("resnet10t", pretrained=False, num_classes=2).eval()
    with torch.no_grad():
        assert model(torch.zeros(1, 3, 32, 32)).shape == (1, 2)
    print("NOTEBOOK-OK")
""")

THROUGH_SERVER = textwrap.dedent("""
    from sceneforge.engine.client import RenderClient
    from sceneforge.engine.server.launch import start_server
    from sceneforge.engine.world import Camera
    with start_server(port=0) as srv, RenderClient(srv.address) as c:
        assert c.render(0, ("lit",), camera=Camera(width=32, height=32))["lit"].shape == (32, 32, 3)
    import timm
    print("NOTEBOOK-OK")
""")


def _run(code: str, **env) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHONPATH": str(ROOT), **env},
    )


RENDER_ONLY = IN_PROCESS.split("import timm, torch")[0]


def test_render_then_import_triton_in_one_process():
    """The crashing import itself (fast: triton without torch); the full timm sequence is slow."""
    p = _run(RENDER_ONLY + "import triton\nprint('NOTEBOOK-OK')")
    assert p.returncode == 0 and "NOTEBOOK-OK" in p.stdout, (p.returncode, p.stderr[-2000:])


@pytest.mark.slow
@pytest.mark.parametrize("code", [IN_PROCESS, THROUGH_SERVER], ids=["in_process", "through_server"])
def test_render_then_import_timm_in_one_process(code):
    p = _run(code)
    assert p.returncode == 0 and "NOTEBOOK-OK" in p.stdout, (p.returncode, p.stderr[-2000:])


def test_the_crash_is_real_without_the_preload():
    """Control: with the pre-load turned off, the same sequence still crashes here, so the test
    above checks the fix (if a future Mesa/triton pair stops crashing, this documents it)."""
    p = _run(RENDER_ONLY + "import triton\nprint('NOTEBOOK-OK')", SCENEFORGE_PRELOAD_TRITON="0")
    if p.returncode == 0:
        pytest.skip("this Mesa/triton pair does not crash any more")
    assert p.returncode in (-11, 139), (p.returncode, p.stderr[-2000:])
