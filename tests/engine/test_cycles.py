"""The Cycles backend (``--renderer cycles``): Blender worker, hybrid backend, server, install checks.

Tests that need Blender are marked ``cycles`` and skip (with the install command as the reason)
when the isolated environment is absent: ``sceneforge renderers install cycles``. Images are tiny
(64 px) with few samples, so the whole file costs a few CPU-seconds beyond Blender's start-up.
"""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import sys

import numpy as np
import pytest

from sceneforge.core.errors import ConfigError, RenderError
from sceneforge.engine.server.cycles import install, wire
from sceneforge.engine.server.cycles.exr import read_exr
from sceneforge.engine.world import Camera, Rotator
from gl_scenes import MESHES, _actor, _scene

HAVE_CYCLES = install.status() is not None
needs_cycles = [
    pytest.mark.cycles,
    pytest.mark.render,
    pytest.mark.skipif(not HAVE_CYCLES, reason=f"Cycles is not installed: {install.INSTALL_HINT}"),
]


def _rotated_scene():
    """Four objects at non-axis-aligned poses (no pixel centre lies exactly on an edge)."""
    return _scene(
        _actor("a", "box", (900.0, 37.0, 0.0), 0, rotation=Rotator(0, 23.0, 0)),
        _actor("b", "sphere", (700.0, -260.0, 0.0), 1),
        _actor("c", "lshape", (1100.0, 310.0, 0.0), 2, rotation=Rotator(0, -41.0, 0)),
        _actor("d", "cyl", (600.0, 120.0, 10.0), 3, rotation=Rotator(5, 10, 0)),
        _actor("e", "small", (500.0, -40.0, 0.0), 4, tint=(250, 200, 0)),
    )


def _camera(size=64) -> Camera:
    return Camera((13.0, -21.0, 173.0), Rotator(-4.3, 3.1, 0), 61.0, size, size)


# --- no Blender needed -----------------------------------------------------------------------
def test_wire_roundtrip_keeps_dtypes_shapes_and_header():
    arrays = {
        "v": np.arange(12, dtype=np.float32).reshape(4, 3),
        "f": np.array([[0, 1, 2]], np.int32),
        "e": np.zeros((0, 3), np.uint8),
    }
    body = wire.encode({"op": "mesh", "key": "k"}, arrays)[8:]
    header, out = wire.decode(body)
    assert header == {"op": "mesh", "key": "k"}
    for k, a in arrays.items():
        assert out[k].dtype == a.dtype and np.array_equal(out[k], a)


def _exr(channels: dict[str, np.ndarray]) -> bytes:
    """A minimal single-part uncompressed scanline EXR (FLOAT channels), written by hand."""
    import struct

    h, w = next(iter(channels.values())).shape
    names = sorted(channels)
    chlist = b"".join(n.encode() + b"\0" + struct.pack("<iBxxxii", 2, 0, 1, 1) for n in names) + b"\0"

    def attr(name, typ, val):
        return name.encode() + b"\0" + typ.encode() + b"\0" + struct.pack("<i", len(val)) + val

    head = (
        struct.pack("<ii", 20000630, 2)
        + attr("channels", "chlist", chlist)
        + attr("compression", "compression", b"\0")
        + attr("dataWindow", "box2i", struct.pack("<iiii", 0, 0, w - 1, h - 1))
        + b"\0"
    )
    start = len(head) + 8 * h
    rows, offsets = [], []
    for y in range(h):
        data = b"".join(channels[n][y].astype("<f4").tobytes() for n in names)
        offsets.append(start + sum(len(r) for r in rows))
        rows.append(struct.pack("<ii", y, len(data)) + data)
    return head + np.array(offsets, "<u8").tobytes() + b"".join(rows)


def test_exr_reader_reads_channels_row_0_top():
    z = np.arange(12, dtype=np.float32).reshape(3, 4)
    out = read_exr(_exr({"V.Depth.Z": z, "V.Object Index.X": z * 2}))
    assert np.array_equal(out["V.Depth.Z"], z) and np.array_equal(out["V.Object Index.X"], z * 2)
    with pytest.raises(ValueError, match="OpenEXR"):
        read_exr(b"\0" * 64)


def test_renderer_spec_options_are_validated():
    from sceneforge.engine.server.renderers import backend_factory, parse_spec

    assert parse_spec("cycles:samples=8,seed=3") == ("cycles", {"samples": "8", "seed": "3"})
    assert parse_spec("gl") == ("gl", {})
    for bad in ("cycles:samplez=3", "gl:samples=4", "vulkan", "cycles:samples"):
        with pytest.raises(ConfigError):
            backend_factory(bad)
    from sceneforge.engine.server.cycles.backend import CyclesSettings

    s = CyclesSettings.from_options({"samples": "32", "seed": "7", "denoise": "0"}, threads=2)
    assert (s.samples, s.seed, s.denoise, s.threads) == (32, 7, False, 2)
    with pytest.raises(ConfigError, match="samples"):
        CyclesSettings.from_options({"samples": "0"}, threads=1)


def test_missing_install_is_one_line_with_the_install_command(tmp_path):
    with pytest.raises(RenderError, match="sceneforge renderers install cycles"):
        install.require(tmp_path / "nothing")
    env = {**os.environ, "SCENEFORGE_CYCLES_HOME": str(tmp_path / "nothing"), "PYTHONPATH": os.getcwd()}
    proc = subprocess.run(
        [sys.executable, "-m", "sceneforge.engine.server", "--port", "0", "--renderer", "cycles"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "sceneforge renderers install cycles" in lines[0]


def test_cycles_home_is_under_the_sceneforge_cache_unless_overridden(tmp_path, monkeypatch):
    """``$SCENEFORGE_CACHE/renderers/cycles`` (else ``~/.cache/sceneforge/...``), beside the
    assets and weights, all from ``core.paths.cache_root``; ``$SCENEFORGE_CYCLES_HOME`` wins."""
    import re

    from sceneforge.assets_manifest import library
    from sceneforge.core.paths import cache_root
    from sceneforge.probing import pretrained

    for var in ("SCENEFORGE_CYCLES_HOME", "SCENEFORGE_WEIGHTS"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("SCENEFORGE_CACHE", str(tmp_path / "cache"))
    assert install.home() == tmp_path / "cache" / "renderers" / "cycles"
    with pytest.raises(RenderError, match=re.escape(str(tmp_path / "cache" / "renderers" / "cycles"))):
        install.require()
    assert library.cache_root is cache_root and cache_root() == tmp_path / "cache"
    assert pretrained.weights_dir() == tmp_path / "cache" / "weights"
    monkeypatch.setenv("SCENEFORGE_CYCLES_HOME", str(tmp_path / "own"))
    assert install.home() == tmp_path / "own"
    monkeypatch.delenv("SCENEFORGE_CYCLES_HOME")
    monkeypatch.delenv("SCENEFORGE_CACHE")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert install.home() == tmp_path / "home" / ".cache" / "sceneforge" / "renderers" / "cycles"


# --- with Blender ----------------------------------------------------------------------------
@pytest.fixture(scope="module")
def cycles():
    if not HAVE_CYCLES:
        pytest.skip(f"Cycles is not installed: {install.INSTALL_HINT}")
    from sceneforge.engine.server.cycles.backend import CyclesBackend, CyclesSettings

    b = CyclesBackend(MESHES.__getitem__, settings=CyclesSettings(samples=4, threads=1))
    yield b
    b.close()


@pytest.mark.cycles
@pytest.mark.render
def test_cycles_ids_equal_gl_ids_on_every_pixel_and_depth_within_1_percent(cycles):
    scene, cam = _rotated_scene(), _camera(96)
    cy = cycles.render_cycles(scene, cam, ("instance_id", "depth", "plane_depth"))
    gl = cycles.gl.render(scene, cam, ("instance_id", "depth", "plane_depth"))
    assert set(np.unique(gl["instance_id"])) == {0, 1, 2, 3, 4, 5}
    assert np.array_equal(cy["instance_id"], gl["instance_id"])
    assert np.array_equal(np.isinf(cy["depth"]), np.isinf(gl["depth"]))
    hit = np.isfinite(gl["depth"])
    for kind in ("depth", "plane_depth"):
        assert np.max(np.abs(cy[kind][hit] / gl[kind][hit] - 1)) < 0.01


@pytest.mark.cycles
@pytest.mark.render
def test_hybrid_render_lit_from_cycles_rest_from_gl(cycles):
    scene, cam = _rotated_scene(), _camera(64)
    out = cycles.render(scene, cam, ("lit", "object_mask", "depth", "instance_id"))
    gl = cycles.gl.render(scene, cam, ("lit", "object_mask", "depth", "instance_id"))
    for k in ("object_mask", "depth", "instance_id"):
        assert np.array_equal(out[k], gl[k])
    lit = out["lit"]
    assert lit.shape == (64, 64, 3) and lit.dtype == np.uint8
    assert not np.array_equal(lit, gl["lit"])  # path-traced, not the rasteriser's image
    ids = gl["instance_id"]
    tinted = lit[ids == 5].astype(float).mean(axis=0)  # actor "e", tint (250, 200, 0): yellow
    assert tinted[0] > tinted[2] + 40 and tinted[1] > tinted[2] + 40
    sky = lit[np.isinf(gl["depth"])].astype(float).mean(axis=0)
    assert sky[2] > sky[0]  # blue-ish sky from the scene's Sky colours
    assert cycles.pixel_counts(scene, cam, ["a", "b"]) == cycles.gl.pixel_counts(scene, cam, ["a", "b"])


@pytest.mark.cycles
@pytest.mark.render
def test_lit_is_byte_identical_in_a_fresh_worker_with_other_threads(cycles):
    """Fixed seed + fixed samples: same bytes across processes and thread counts, OIDN on."""
    from sceneforge.engine.server.cycles.backend import CyclesBackend, CyclesSettings

    scene, cam = _rotated_scene(), _camera(48)
    first = cycles.render(scene, cam, ("lit",))["lit"]
    other = CyclesBackend(MESHES.__getitem__, settings=CyclesSettings(samples=4, threads=2), gl=cycles.gl)
    try:
        second = other.render(scene, cam, ("lit",))["lit"]
    finally:
        other.worker.close()
    assert cycles.settings.threads == 1 and other.settings.threads == 2
    assert hashlib.sha256(first.tobytes()).hexdigest() == hashlib.sha256(second.tobytes()).hexdigest()


@pytest.mark.cycles
@pytest.mark.render
def test_dead_or_hung_worker_is_a_clear_error_then_restarts(cycles):
    scene, cam = _rotated_scene(), _camera(32)
    cycles.render(scene, cam, ("lit",))
    pid, old = cycles.worker.pid, cycles.worker.timeout_s
    os.kill(pid, signal.SIGSTOP)  # hung: no reply within the timeout → killed, clear error
    cycles.worker.timeout_s = 2.0
    try:
        with pytest.raises(RenderError, match="hung"):
            cycles.render(scene, cam, ("lit",))
    finally:
        cycles.worker.timeout_s = old
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    out = cycles.render(scene, cam, ("lit",))  # a fresh worker, meshes uploaded again
    pid2 = cycles.worker.pid
    assert out["lit"].shape == (32, 32, 3) and pid2 not in (None, pid)
    os.kill(pid2, signal.SIGKILL)  # crashed
    with pytest.raises(RenderError, match="Blender worker exited"):
        cycles.render(scene, cam, ("lit",))


def test_renderers_list_says_how_to_install(tmp_path):
    env = {**os.environ, "SCENEFORGE_CYCLES_HOME": str(tmp_path / "nothing"), "PYTHONPATH": os.getcwd()}
    proc = subprocess.run(
        [sys.executable, "-m", "sceneforge.cli", "renderers", "list"], env=env, capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0
    assert "gl       built in" in proc.stdout
    assert f"cycles   not installed (sceneforge renderers install cycles → {tmp_path / 'nothing'})" in proc.stdout


@pytest.mark.cycles
@pytest.mark.render
def test_textured_material_and_alpha_cutout(cycles):
    """A wall quad facing the camera with a red|blue albedo: both halves appear; a second quad
    whose albedo alpha is 0 on the right half is cut there (the ground shows through)."""
    from sceneforge.core.meshes import Material, RenderMesh

    v = np.array([[0, -100, 0], [0, 100, 0], [0, 100, 200], [0, -100, 200]], np.float32)
    f = np.array([[0, 1, 2], [0, 2, 3]], np.int32)
    uv = np.array([[0, 1], [1, 1], [1, 0], [0, 0]], np.float32)  # glTF: v down from the top
    albedo = np.zeros((8, 8, 4), np.uint8)
    albedo[:, :4] = (230, 20, 20, 255)
    albedo[:, 4:] = (20, 20, 230, 255)
    cut = albedo.copy()
    cut[:, 4:, 3] = 0
    meshes = {
        "wall": RenderMesh(v, f, np.full((4, 3), 255, np.uint8), uvs=uv, materials=(Material(albedo=albedo),)),
        "cut": RenderMesh(v, f, np.full((4, 3), 255, np.uint8), uvs=uv, materials=(Material(albedo=cut, alpha_cutoff=0.5),)),
    }
    from sceneforge.engine.server.cycles.backend import CyclesBackend, CyclesSettings

    b = CyclesBackend(meshes.__getitem__, settings=CyclesSettings(samples=4, threads=1), gl=cycles.gl)
    try:
        cam = Camera((-400.0, 0.0, 100.0), Rotator(0, 0, 0), 60.0, 32, 32)
        wall = b.render(_scene(_actor("w", "wall", (0.0, 0.0, 0.0))), cam, ("lit",))["lit"].astype(int)
        cutout = b.render(_scene(_actor("w", "cut", (0.0, 0.0, 0.0))), cam, ("lit",))["lit"].astype(int)
    finally:
        b.worker.close()
    left, right = wall[12:20, 10:15].mean(axis=(0, 1)), wall[12:20, 18:23].mean(axis=(0, 1))
    assert left[0] > left[2] + 60 and right[2] > right[0] + 60  # image left = texture left (u = 0)
    assert np.abs(cutout[12:20, 10:15].mean(axis=(0, 1)) - left).max() < 25
    assert np.abs(cutout[12:20, 18:23].mean(axis=(0, 1)) - right).max() > 60  # cut: not the blue wall


@pytest.mark.cycles
@pytest.mark.render
def test_hdri_sky_ground_surface_and_exposure(cycles):
    """World content by id (as the server's catalogue serves it): a red HDRI replaces the
    gradient sky, a checker surface textures the ground, exposure_ev brightens the image."""
    from sceneforge.core.meshes import Material
    from sceneforge.engine.server.cycles.backend import CyclesBackend, CyclesSettings
    from sceneforge.engine.world import Ground, Look, Sky

    checker = np.zeros((2, 2, 3), np.uint8)
    checker[0, 0] = checker[1, 1] = 230

    class Content:
        def hdri(self, ident):
            return np.tile(np.array([1.0, 0.2, 0.1], np.float32), (16, 32, 1)) if ident == "red" else None

        def surface(self, ident):
            return Material(albedo=checker) if ident == "checker" else None

    b = CyclesBackend(MESHES.__getitem__, settings=CyclesSettings(samples=4, threads=1), gl=cycles.gl, content=Content())
    try:
        cam = Camera((0.0, 0.0, 300.0), Rotator(-20.0, 0, 0), 70.0, 48, 32)
        scene = _scene(ground=Ground(surface="checker", tile_cm=400.0))
        plain = b.render(_scene(), cam, ("lit",))["lit"].astype(float)
        world = b.render(replace_world(scene, sky=Sky(hdri="red")), cam, ("lit",))["lit"].astype(float)
        brighter = b.render(replace_world(_scene(), look=Look(exposure_ev=1.0)), cam, ("lit",))["lit"].astype(float)
        unknown = b.render(replace_world(_scene(), sky=Sky(hdri="nope")), cam, ("lit",))["lit"]
    finally:
        b.worker.close()
    sky, ground = slice(0, 4), slice(24, 32)
    assert plain[sky].mean(axis=(0, 1))[2] > plain[sky].mean(axis=(0, 1))[0]  # gradient: blue
    assert world[sky].mean(axis=(0, 1))[0] > world[sky].mean(axis=(0, 1))[2] + 50  # HDRI: red
    assert world[ground].mean(axis=2).std() > plain[ground].mean(axis=2).std() + 15  # checker ground
    assert brighter.mean() > plain.mean() + 20
    assert np.array_equal(unknown, plain.astype(np.uint8))  # unknown HDRI: the gradient sky


def replace_world(scene, **changes):
    for k, v in changes.items():
        setattr(scene, k, v)
    return scene
