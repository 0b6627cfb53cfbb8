"""The render-kind table (engine/render_kinds.py) is what the server serves (issue 35 item 4).

Every row is asked for through every way it is offered: ``vget /camera/[id]/<name> <format>``
(and its aliases) with the official ``unrealcv`` client, ``vget /sceneforge/render`` with ours,
and the client's stock-UnrealCV fallback; each reply must have the row's dtype and shape. A
renderer that lacks a row's kind is refused in one line naming the kind and the renderer. And a
new kind costs one row plus the renderer's code: a subprocess registers a row and a small
renderer that draws it, and the server serves it with no other edit.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest
import unrealcv

from sceneforge.engine import render_kinds
from sceneforge.engine.protocol import unpack_arrays
from sceneforge.engine.server.cycles import install
from sceneforge.engine.server.launch import start_server
from sceneforge.engine.world import Actor, Camera, Transform, class_color

pytestmark = pytest.mark.filterwarnings("error")

W, H = 48, 32
ROWS = list(render_kinds.TABLE.values())
MAGIC = {"png": b"\x89PNG", "bmp": b"BM", "npy": b"\x93NUMPY", "exr": b"v/1\x01"}


def _shape(row: render_kinds.RenderKind) -> tuple[int, ...]:
    return (H, W) if row.channels == 0 else (H, W, row.channels)


@contextlib.contextmanager
def _official(port: int):
    c = unrealcv.Client(("127.0.0.1", port))
    with contextlib.redirect_stdout(io.StringIO()):
        assert c.connect()
    try:
        yield c
    finally:
        with contextlib.redirect_stdout(io.StringIO()):
            c.disconnect()


def _scene(c) -> None:
    """A cube in front of camera 0 at W x H (over the official client: only stock and extension
    commands the server advertises)."""
    for cmd in (
        "vset /sceneforge/reset",
        "vset /objects/spawn primitive_cube box",
        "vset /object/box/location 400 0 0",
        "vset /camera/0/pose 0 0 50 0 0 0",
        f"vset /camera/0/size {W} {H}",
        "vset /camera/0/fov 90",
    ):
        assert c.request(cmd) in ("ok", "box"), cmd  # spawn answers the new name


@pytest.fixture
def uclient(server):
    with _official(server.port) as c:
        _scene(c)
        yield c
        for cmd in ("vset /sceneforge/reset", "vset /camera/0/size 320 240"):
            c.request(cmd)


def test_the_table_is_consistent():
    names = [n for k in ROWS for n in (k.name, *k.aliases)]
    assert len(names) == len(set(names))
    for k in ROWS:
        np.dtype(k.dtype)  # a numpy dtype
        assert set(k.formats) <= set(MAGIC), k.name
        assert all(s in render_kinds.TABLE and not render_kinds.TABLE[s].derived_from for s in k.derived_from)
        assert k.ue_format is None or k.ue_format in k.formats
        assert "exr" not in k.formats or k.as_image == "depth16"  # the one float image codec


@pytest.mark.parametrize("row", [k for k in ROWS if k.formats], ids=lambda k: k.name)
def test_every_camera_row_is_served_in_each_of_its_formats(uclient, row):
    """``vget /camera/0/<name> <format>`` (official client) for each format and alias of the row."""
    import cv2

    assert "gl" in render_kinds.renderers_of(row.name)  # the test server's renderer
    templates = uclient.request("vget /unrealcv/commands").splitlines()
    for name in (row.name, *row.aliases):
        assert f"vget /camera/[id]/{name} [format]" in templates
        for fmt in row.formats:
            data = uclient.request(f"vget /camera/0/{name} {fmt}")
            assert isinstance(data, bytes) and data.startswith(MAGIC[fmt]), (name, fmt, data[:40])
            if fmt == "npy":
                arr = np.load(io.BytesIO(data), allow_pickle=False)
                assert arr.dtype == np.dtype(row.dtype) and arr.shape == _shape(row), (name, arr.dtype, arr.shape)
            elif fmt in ("png", "bmp"):
                img = cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_UNCHANGED)
                assert img.shape[:2] == (H, W)
        assert uclient.request(f"vget /camera/0/{name} jpg") == "error Invalid filename type, filename jpg"
    lacking = sorted(set(MAGIC) - set(row.formats))
    for fmt in lacking:
        assert uclient.request(f"vget /camera/0/{row.name} {fmt}").startswith("error Invalid filename type")


@pytest.mark.parametrize("row", ROWS, ids=lambda k: k.name)
def test_every_row_is_served_by_the_batched_render(uclient, render_client, row):
    """``vget /sceneforge/render``: every row, rendered or derived (from its sources, rendered in
    the same pass: engine/server/derived.py), comes back with its dtype and shape (official
    client and ours)."""
    _scene(uclient)  # render_client's fixture reset the scene
    request = f"vget /sceneforge/render 0 {row.name}"
    reply = uclient.request(request)
    # the official client hands a reply that happens to be valid UTF-8 over as text
    arr = unpack_arrays(reply.encode() if isinstance(reply, str) else reply)[row.name]
    assert arr.dtype == np.dtype(row.dtype) and arr.shape == _shape(row)
    ours = render_client.render(0, (row.name,), camera=Camera((0.0, 0.0, 50.0), width=W, height=H))[row.name]
    assert ours.dtype == np.dtype(row.dtype) and ours.shape == _shape(row)


@pytest.mark.parametrize("row", [k for k in ROWS if not k.derived_from], ids=lambda k: k.name)
def test_the_stock_fallback_asks_for_the_rows_ue_format(render_client, row):
    """On a stock UnrealCV (UE) server the client asks ``vget /camera/[id]/<name> <ue_format>``; a
    row without a ``ue_format`` is refused in one line (the server here is ours, the client told
    it is stock, as in test_client.py)."""
    c = render_client
    c.templates = [t for t in c.templates if "/sceneforge/" not in t]
    c.spawn([Actor("box", "primitive_cube", Transform((400.0, 0.0, 0.0)))])
    c.set_camera(0, Camera((0.0, 0.0, 50.0), width=W, height=H))
    if row.ue_format is None:
        with pytest.raises(Exception, match=f"{row.name!r} is not available from a stock UnrealCV server"):
            c.render(0, (row.name,))
        return
    arr = c.render(0, (row.name,))[row.name]
    assert arr.dtype == np.dtype(row.dtype) and arr.shape == _shape(row)


TOY_SERVER = """
import sys

import numpy as np

from sceneforge.engine import render_kinds
from sceneforge.engine.render_kinds import RenderKind
from sceneforge.engine.server.backend import RenderBackend
from sceneforge.engine.server.renderers import register_renderer

# 1. the row
render_kinds.register_kind(RenderKind(
    "inverse_depth", "float32", 0, "data", "1 / ray depth in 1/cm; 0 where nothing is hit",
    formats=("npy", "exr"), as_image="depth16", renderers=("toy",)))


# 2. the renderer that draws it (here from the GL backend's depth)
class Toy(RenderBackend):
    name = renderer = "toy"

    def __init__(self, mesh_provider, threads):
        from sceneforge.engine.server.gl.backend import GLBackend
        self.gl = GLBackend(mesh_provider, threads=threads)

    def render(self, scene, camera, kinds):
        kinds = render_kinds.require(self.renderer, kinds)
        depth = self.gl.render(scene, camera, ("depth",))["depth"]
        return {k: (1.0 / depth).astype(np.float32) for k in kinds}

    def pixel_counts(self, scene, camera, names):
        return self.gl.pixel_counts(scene, camera, names)

    def close(self):
        self.gl.close()


register_renderer("toy", "test: inverse depth only")(lambda mesh_provider, threads: Toy(mesh_provider, threads))

from sceneforge.engine.server.main import main  # noqa: E402 - after the row: the camera commands are made from the table

sys.exit(main(sys.argv[1:]))
"""


def test_a_new_kind_is_one_row_and_a_renderer(tmp_path):
    """A row and a renderer registered in a fresh server process: the server lists and serves the
    new kind (camera command, both formats; ``/sceneforge/render``) with the row's dtype, and
    refuses the built-in kinds the toy renderer lacks in one line."""
    script, ready = tmp_path / "toy_server.py", tmp_path / "ready"
    script.write_text(textwrap.dedent(TOY_SERVER))
    proc = subprocess.Popen(
        [sys.executable, str(script), "--port", "0", "--renderer", "toy", "--ready-file", str(ready)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 60
        while not ready.exists() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.1)
        assert ready.exists(), proc.stderr.read().decode() if proc.poll() is not None else "no ready file"
        with _official(int(ready.read_text())) as c:
            _scene(c)
            assert "vget /camera/[id]/inverse_depth [format]" in c.request("vget /unrealcv/commands").splitlines()
            inv = np.load(io.BytesIO(c.request("vget /camera/0/inverse_depth npy")))
            depth_cm = 1.0 / inv[H // 2, W // 2]
            assert inv.dtype == np.float32 and inv.shape == (H, W) and 300 < depth_cm < 400  # the cube's face
            assert c.request("vget /camera/0/inverse_depth exr").startswith(MAGIC["exr"])
            reply = c.request("vget /sceneforge/render 0 inverse_depth")
            batched = unpack_arrays(reply.encode() if isinstance(reply, str) else reply)["inverse_depth"]
            assert np.array_equal(batched, inv)
            assert c.request("vget /camera/0/lit png") == (
                "error render kind 'lit' is not implemented by renderer 'toy' (renderers of lit: gl, cycles)"
            )
            assert c.request("vget /camera/0/optical_flow npy").startswith(
                "error render kind 'plane_depth' is not implemented by renderer 'toy'"
            )
            assert c.request("vget /unrealcv/status").startswith("Is Listening")  # still serving
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        proc.stderr.close()


def test_the_gl_server_does_not_know_a_kind_it_was_not_given(uclient):
    """(The toy kind above lives in its own process only.)"""
    with pytest.warns(UserWarning, match="may not support"):  # not advertised: the official client warns
        assert uclient.request("vget /camera/0/inverse_depth npy").startswith("error No handler found")
    assert uclient.request("vget /sceneforge/render 0 inverse_depth").startswith("error render: unknown kind(s)")


def test_the_class_mask_is_the_class_of_each_pixels_actor(server, render_client):
    """``class_mask`` (derived from ``instance_id`` and the catalog's classes) in a batch with
    ``instance_id``: every pixel has the class colour of the actor ``instance_id`` names, actors of
    one class share a colour, the background is black; the official client reads the same image
    from ``vget /camera/0/class_mask png`` and the batch."""
    import cv2

    listing = json.loads(render_client.request("vget /sceneforge/assets"))
    by_class: dict[str, list[str]] = {}
    for a in listing:
        by_class.setdefault(a["class"], []).append(a["id"])
    two = sorted(c for c, ids in by_class.items() if c != "primitive")[:2]
    actors = [
        Actor("p0", by_class[two[0]][0], Transform((600.0, -150.0, 0.0))),
        Actor("p1", by_class[two[0]][-1], Transform((600.0, 150.0, 0.0))),
        Actor("q0", by_class[two[1]][0], Transform((900.0, 0.0, 0.0))),
    ]
    render_client.spawn(actors)
    cam = Camera((0.0, 0.0, 120.0), width=96, height=64)
    out = render_client.render(0, ("instance_id", "class_mask", "lit"), camera=cam)
    ids, mask = out["instance_id"], out["class_mask"]
    classes = {k: listing_class for k, listing_class in enumerate((two[0], two[0], two[1]), start=1)}
    seen = set(np.unique(ids)) - {0}
    assert len(seen) >= 2, "the scene should show at least two of the actors"
    for k in seen:
        assert (mask[ids == k] == np.array(class_color(classes[k]), np.uint8)).all(), (k, classes[k])
    assert (mask[ids == 0] == 0).all()
    assert class_color(two[0]) != class_color(two[1])
    with _official(server.port) as c:
        png = c.request("vget /camera/0/class_mask png")
        img = cv2.cvtColor(cv2.imdecode(np.frombuffer(png, np.uint8), cv2.IMREAD_COLOR), cv2.COLOR_BGR2RGB)
        reply = c.request("vget /sceneforge/render 0 class_mask")
        batched = unpack_arrays(reply.encode() if isinstance(reply, str) else reply)["class_mask"]
    assert np.array_equal(img, mask) and np.array_equal(batched, mask)


PLUGIN_KIND = """
import numpy as np

from sceneforge.engine.render_kinds import DerivedKind, RenderKind


def _near(state, cam_id, camera, arrays):
    return (arrays["depth"] < 500.0).astype(np.uint8) * 255


NEAR = DerivedKind(RenderKind("near", "uint8", 0, "data", "255 where the ray depth is under 5 m", derived_from=("depth",)), _near)
"""


def test_a_derived_kind_from_an_installed_package_is_served_in_batches(tmp_path):
    """A ``sceneforge.render_kinds`` entry point (a distribution on a fresh server's path) adds a
    derived kind: the batched render serves it beside the kind it is made from."""
    site = tmp_path / "site"
    (site / "near_kind-0.1.dist-info").mkdir(parents=True)
    (site / "near_kind-0.1.dist-info" / "METADATA").write_text("Metadata-Version: 2.1\nName: near-kind\nVersion: 0.1\n")
    (site / "near_kind-0.1.dist-info" / "entry_points.txt").write_text("[sceneforge.render_kinds]\nnear = near_kind:NEAR\n")
    (site / "near_kind.py").write_text(textwrap.dedent(PLUGIN_KIND))
    ready = tmp_path / "ready"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.Popen(
        [sys.executable, "-m", "sceneforge.engine.server", "--port", "0", "--ready-file", str(ready)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=env,
    )
    try:
        deadline = time.monotonic() + 60
        while not ready.exists() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.1)
        assert ready.exists(), proc.stderr.read().decode() if proc.poll() is not None else "no ready file"
        with _official(int(ready.read_text())) as c:
            _scene(c)
            reply = c.request("vget /sceneforge/render 0 depth,near")
            arrays = unpack_arrays(reply.encode() if isinstance(reply, str) else reply)
            assert arrays["near"].dtype == np.uint8 and arrays["near"].shape == (H, W)
            assert np.array_equal(arrays["near"], (arrays["depth"] < 500.0).astype(np.uint8) * 255)
            assert arrays["near"].any() and not arrays["near"].all()  # the cube at 4 m, the sky beyond
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        proc.stderr.close()


@pytest.mark.cycles
@pytest.mark.skipif(install.status() is None, reason=f"Cycles is not installed: {install.INSTALL_HINT}")
def test_every_rendered_row_is_served_by_the_cycles_renderer():
    """The other built-in renderer: every row naming ``cycles`` comes back from a Cycles server
    with its dtype and shape (one request; 2 samples at 48 x 32), a derived one too."""
    rows = [k for k in ROWS if "cycles" in render_kinds.renderers_of(k.name)]
    assert {k.name for k in rows} == set(render_kinds.TABLE)  # today: every kind
    srv = start_server(port=0, renderer="cycles:samples=2")
    try:
        with _official(srv.port) as c:
            _scene(c)
            rendered = [k for k in rows if not k.derived_from]
            reply = c.request(f"vget /sceneforge/render 0 {','.join(k.name for k in rendered)}")
            arrays = unpack_arrays(reply.encode() if isinstance(reply, str) else reply)
            for k in rendered:
                assert arrays[k.name].dtype == np.dtype(k.dtype) and arrays[k.name].shape == _shape(k), k.name
            for k in rows:
                if k.formats:
                    arr = np.load(io.BytesIO(c.request(f"vget /camera/0/{k.name} npy")))
                    assert arr.dtype == np.dtype(k.dtype) and arr.shape == _shape(k), k.name
    finally:
        srv.stop()


@pytest.mark.parametrize("row", ROWS, ids=lambda k: k.name)
def test_the_writers_file_each_kind_as_its_row_says(row):
    """scenarios/output/writers.py: a colour kind becomes a PNG, a data kind an .npy in the row's
    dtype (what sparrta's masks and depth are written with)."""
    from sceneforge.scenarios.output.writers import kind_bytes, kind_file

    array = np.arange(H * W * max(row.channels, 1)).reshape(_shape(row)).astype(np.float64)
    data = kind_bytes(row.name, array.astype(np.uint8) if row.role == render_kinds.COLOR else array)
    assert kind_file(row.name) == ("png" if row.role == render_kinds.COLOR else "npy")
    assert data.startswith(MAGIC[kind_file(row.name)])
    if kind_file(row.name) == "npy":
        back = np.load(io.BytesIO(data), allow_pickle=False)
        assert back.dtype == np.dtype(row.dtype) and back.shape == _shape(row)
