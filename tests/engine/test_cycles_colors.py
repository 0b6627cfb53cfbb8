"""Cycles' colours match GL's, object by object (issue 33, item 4).

Real assets (Sweet Home 3D's truck and barrel) came out of Cycles with a brown cab, white tyres
and a white barrel. Two causes, each with an object here built like the asset library builds
real assets (``assets_manifest.normalize``: UVs, per-face materials, vertex colours baked from
them), since the procedural pack (what tests see with ``SCENEFORGE_NO_FETCH=1``) has neither:

* ``cab``: a material without a texture on a mesh with UVs. Its vertex colours already are the
  material's colour (the flat fallback), and Cycles multiplied them by the base colour again:
  the colour squared (a red cab turned dark brown). GL uses the base colour alone.
* ``tyre``: a textured part that uses only the top half of its texture (an atlas: dark rubber
  above, white below). Cycles flipped v a second time (RenderMesh UVs are already OpenGL's,
  v = 1 at row 0, like Blender's once the rows are stored bottom first), so it sampled the
  white half.
* ``paint``: vertex colours only, no material (the path that was already right): the control.

Each object's mean ``lit`` colour over its GL instance mask is compared between GL's PBR look
and Cycles on the same camera. The renderers' tone curves differ (ACES in GL, Blender's Standard
view in Cycles: Cycles lifts these mid-dark colours by ~30 levels, the same for every object),
so the comparison is in two parts that such a lift leaves alone: each object's chroma (its mean
colour minus its own grey level) and its brightness change GL → Cycles relative to the control's.
Measured (sRGB means, GL / Cycles; chroma and brightness errors): before the fix cab
[116, 32, 27] / [84, 45, 39] (29.7, 35.1), tyre [25, 49, 18] / [233, 236, 228] (14.6, 168.7),
paint [20, 126, 175] / [60, 156, 204]; after it cab / [142, 65, 60] (4.5, 3.1), tyre /
[59, 83, 51] (0.5, 5.8), paint / [57, 151, 196] (9.3, 0: the control).
"""

from __future__ import annotations

import numpy as np
import pytest
import trimesh

from sceneforge.core.meshes import Material, RenderMesh
from sceneforge.engine.server.cycles import install
from sceneforge.engine.world import Camera, Rotator, Sun
from gl_scenes import _actor, _scene

HAVE_CYCLES = install.status() is not None
pytestmark = [
    pytest.mark.cycles,
    pytest.mark.render,
    pytest.mark.skipif(not HAVE_CYCLES, reason=f"Cycles is not installed: {install.INSTALL_HINT}"),
]

CHROMA_TOL = 15  # max |GL - Cycles| per channel of an object's mean sRGB colour minus its grey (0..255)
BRIGHTNESS_TOL = 15  # max |(Cycles - GL grey level) of an object - the same of the control|
MAX_LIFT = 45  # Cycles' grey level above GL's on the control (the tone curves' difference)


def _box(size: float) -> tuple[np.ndarray, np.ndarray]:
    """A box, base on z = 0, unshared corners (one colour / uv per face corner)."""
    m = trimesh.creation.box(extents=(size, size, size))
    v = np.asarray(m.vertices, np.float32)[np.asarray(m.faces)].reshape(-1, 3)
    v[:, 2] -= v[:, 2].min()
    return v, np.arange(len(v), dtype=np.int32).reshape(-1, 3)


def _asset(materials: tuple[Material, ...], uvs: np.ndarray | None, size: float = 160.0) -> RenderMesh:
    """Like a real asset after ``normalize.render_mesh``: vertex colours baked from the materials."""
    from sceneforge.assets_manifest.normalize import bake_face_colors

    v, f = _box(size)
    if not materials:
        return RenderMesh(v, f, np.tile(np.array([40, 150, 210], np.uint8), (len(v), 1)))
    fm = np.zeros(len(f), np.int32)
    colors = np.repeat(bake_face_colors(uvs, f, fm, list(materials)), 3, axis=0)
    return RenderMesh(v, f, colors, uvs=uvs, materials=materials, face_materials=fm)


def _meshes() -> dict[str, RenderMesh]:
    n = 36  # corners of a box
    # cab: untextured, sh3d's red-cabin-like base colour; UVs all zero (as where a material has no texture)
    cab = _asset((Material(name="red-cabin", base_color=(0.25, 0.03, 0.03, 1.0), roughness=0.6),), np.zeros((n, 2), np.float32))
    # tyre: an atlas, rows 0..31 (top, v > 0.5) dark green rubber, rows 32..63 white; uvs in the top half
    atlas = np.full((64, 64, 3), 235, np.uint8)
    atlas[:32] = (40, 70, 30)
    rng = np.random.default_rng(0)
    uv = np.stack([rng.uniform(0.1, 0.9, n), rng.uniform(0.6, 0.9, n)], axis=1).astype(np.float32)
    tyre = _asset((Material(name="rubber", albedo=atlas, roughness=0.9),), uv)
    return {"cab": cab, "tyre": tyre, "paint": _asset((), None)}


def _object_means(lit: np.ndarray, ids: np.ndarray, n: int) -> list[np.ndarray]:
    return [lit[ids == i + 1].astype(np.float64).mean(axis=0) for i in range(n)]


def test_cycles_object_colours_match_gl():
    from sceneforge.engine.server.cycles.backend import CyclesBackend, CyclesSettings

    meshes = _meshes()
    names = ("cab", "tyre", "paint")
    scene = _scene(
        *(_actor(name, name, (700.0, -260.0 + 260.0 * i, 0.0), i, rotation=Rotator(0, 35.0, 0)) for i, name in enumerate(names)),
        sun=Sun(pitch=35.0, yaw=160.0),
    )  # behind the camera
    cam = Camera((0.0, 0.0, 220.0), Rotator(-10.0, 0.0, 0.0), 60.0, 96, 64)
    b = CyclesBackend(meshes.__getitem__, settings=CyclesSettings(samples=16, threads=1))
    try:
        gl = b.gl.render(scene, cam, ("lit", "instance_id"))
        cy = b.render(scene, cam, ("lit",))["lit"]
    finally:
        b.close()
    ids = gl["instance_id"]
    assert all((ids == i + 1).sum() > 150 for i in range(len(names)))
    gl_means, cy_means = _object_means(gl["lit"], ids, len(names)), _object_means(cy, ids, len(names))
    report = "; ".join(
        f"{n}: GL {np.round(g).astype(int).tolist()} Cycles {np.round(c).astype(int).tolist()}"
        for n, g, c in zip(names, gl_means, cy_means)
    )
    print(report)
    lift = cy_means[2].mean() - gl_means[2].mean()  # the control, "paint"
    assert 0.0 <= lift < MAX_LIFT, report
    for name, g, c in zip(names, gl_means, cy_means):
        chroma = np.abs((c - c.mean()) - (g - g.mean())).max()
        brightness = abs(c.mean() - g.mean() - lift)
        print(f"{name}: chroma error {chroma:.1f}, brightness error {brightness:.1f}")
        assert chroma < CHROMA_TOL and brightness < BRIGHTNESS_TOL, f"{name}: {report}"
