"""Impostor levels of detail (gl/impostor.py): far foliage whose decimation stalls is drawn as
crossed alpha-cut cards with a baked atlas, through the ordinary LOD mechanism. Labels must stay
those of the drawn image (every pass draws the same cards), the bake must be deterministic (same
bytes in a fresh renderer and in another process), ``gl:lod=0`` never draws one, and meshes with
alpha-cut leaves keep their decimated levels. Real renders of a synthetic tree (1,500 separate
leaf quads around a trunk: the decimation's "foliage")."""

from __future__ import annotations

import hashlib
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
import trimesh

from sceneforge.assets_manifest.lod import simplified
from sceneforge.core.meshes import Material, RenderMesh
from sceneforge.engine.server.gl import lod as L
from sceneforge.engine.server.gl.backend import GLBackend
from sceneforge.engine.world import Camera, Look, Rotator, Sun, look_at_rotation
from gl_scenes import MESHES, _actor, _scene

KINDS = ("lit", "instance_id", "depth")
ROOT = Path(__file__).resolve().parents[2]


def tree(alpha_cut: bool = False) -> RenderMesh:
    """A 5 m tree: a 64-sided trunk and 1,500 leaf quads (15 cm) in an ellipsoid crown, textured.
    Deterministic (fixed seed)."""
    rng = np.random.default_rng(7)
    trunk = trimesh.creation.cylinder(radius=12, height=320, sections=64)
    tv = np.asarray(trunk.vertices) + [0, 0, 160]
    tf = np.asarray(trunk.faces)
    n_leaves = 1500
    c = rng.normal(size=(n_leaves, 3))
    c = c / np.linalg.norm(c, axis=1, keepdims=True) * rng.uniform(0.3, 1.0, (n_leaves, 1)) ** (1 / 3)
    c = c * [160, 160, 130] + [0, 0, 360]
    a, b = rng.normal(size=(n_leaves, 3)), rng.normal(size=(n_leaves, 3))
    a /= np.linalg.norm(a, axis=1, keepdims=True)
    b -= (b * a).sum(1, keepdims=True) * a
    b /= np.linalg.norm(b, axis=1, keepdims=True)
    s = 7.5
    lv = np.stack([c - s * a - s * b, c + s * a - s * b, c + s * a + s * b, c - s * a + s * b], 1).reshape(-1, 3)
    luv = np.tile([[0, 0], [1, 0], [1, 1], [0, 1]], (n_leaves, 1)).astype(float)
    base = 4 * np.arange(n_leaves)[:, None]
    lf = np.concatenate([base + [0, 1, 2], base + [0, 2, 3]])
    v = np.concatenate([tv, lv])
    f = np.concatenate([tf, lf + len(tv)])
    uv = np.concatenate([np.zeros((len(tv), 2)), luv])
    fm = np.concatenate([np.zeros(len(tf), np.int32), np.ones(len(lf), np.int32)])
    yy, xx = np.mgrid[0:16, 0:16]
    leaf = np.stack([40 + 3 * xx, 110 + 4 * yy, 30 + 0 * xx], -1).astype(np.uint8)
    if alpha_cut:
        inside = ((xx - 7.5) ** 2 + (yy - 7.5) ** 2 < 60)[..., None]
        leaf = np.concatenate([leaf, np.where(inside, 255, 0).astype(np.uint8)], -1)
    mats = (
        Material("trunk", base_color=(0.25, 0.15, 0.08, 1.0)),
        Material("leaves", albedo=leaf, alpha_cutoff=0.5 if alpha_cut else None),
    )
    colors = np.tile(np.array([90, 120, 60], np.uint8), (len(v), 1))
    return RenderMesh(v, f, colors, uvs=uv, materials=mats, face_materials=fm)


class Library:
    def __init__(self):
        self.meshes = {**MESHES, "tree": tree(), "cut_tree": tree(alpha_cut=True)}

    def mesh(self, asset_id: str) -> RenderMesh:
        return self.meshes[asset_id]

    def mesh_lod(self, asset_id: str, budget: int) -> RenderMesh:
        return simplified(self.meshes[asset_id], budget)


@pytest.fixture()
def stall(monkeypatch):
    """Impostors for any foliage level that keeps more than its budget (the synthetic tree's
    leaves are thinned down to it; real trees stall far above: see docs/renderer.md)."""
    monkeypatch.setattr(L, "IMPOSTOR_STALL", 0.5)


def _camera(d: float = 4000.0, az: float = 0.0) -> Camera:
    eye = (-d * np.cos(np.radians(az)), -d * np.sin(np.radians(az)), 250.0)
    return Camera(eye, look_at_rotation(eye, (0.0, 0.0, 280.0)), fov_deg=30.0, width=160, height=120)


def _one(asset: str = "tree"):
    return _scene(
        _actor("tree", asset, (0.0, 0.0, 0.0), 0, rotation=Rotator(0.0, 25.0, 0.0)),
        _actor("box", "box", (-800.0, 900.0, 0.0), 1),
        sun=Sun(),
        look=Look(),
    )


def _drawn(be: GLBackend, scene, cam) -> int:
    """Triangles the frame draws for the scene's first actor (the tree)."""
    with be._using():
        return be._frame(scene, cam).draws[0].mesh.n_triangles


def test_impostor_rule():
    assert L.wants_impostor(1, True, 3000, 1000)
    assert not L.wants_impostor(0, True, 3000, 1000)  # level 0 is the full mesh
    assert not L.wants_impostor(1, False, 3000, 1000)  # not foliage: a car that stalls
    assert not L.wants_impostor(1, True, 1200, 1000)  # decimation reached its budget


def test_foliage_is_marked_on_levels():
    assert simplified(tree(), 1000).meta.get("foliage") is True
    ball = trimesh.creation.icosphere(subdivisions=4, radius=100)
    m = RenderMesh(ball.vertices, ball.faces, np.full((len(ball.vertices), 3), 128, np.uint8))
    assert simplified(m, 500).meta.get("foliage") is False


def test_far_tree_is_drawn_as_its_impostor_with_exact_labels(stall):
    lib = Library()
    on, off = GLBackend(lib.mesh, content=lib), GLBackend(lib.mesh, content=lib, lod=False)
    try:
        scene, cam = _one(), _camera()
        assert _drawn(on, scene, cam) == 8  # 4 cards
        assert _drawn(off, scene, cam) == lib.meshes["tree"].n_triangles
        a, b = on.render(scene, cam, KINDS), off.render(scene, cam, KINDS)
        assert "tree" in on._passes.mesh_cache.impostors and not off._passes.mesh_cache.impostors  # gl:lod=0 never bakes
        # labels are those of the drawn cards: ids-only and lit passes agree, pixel counts too
        ids_only = on.render(scene, cam, ("instance_id",))["instance_id"]
        assert np.array_equal(a["instance_id"], ids_only)
        mask = a["instance_id"] == 1
        assert on.pixel_counts(scene, cam, ["tree"])["tree"].visible == int(mask.sum())
        # depth: the cards' own where they are, exactly the scene without the tree elsewhere
        empty = _scene(_actor("box", "box", (-800.0, 900.0, 0.0), 1), sun=Sun(), look=Look())
        e = on.render(empty, cam, ("depth", "instance_id"))
        assert np.array_equal(a["depth"][~mask], e["depth"][~mask])
        assert np.all(a["depth"][mask] < e["depth"][mask])
        # the picture: silhouette and colour close to the full tree's
        full = b["instance_id"] == 1
        iou = (mask & full).sum() / (mask | full).sum()
        assert full.sum() > 300 and iou > 0.75, iou  # measured 0.86
        both = mask & full
        dlit = np.abs(a["lit"][both].astype(float).mean(0) - b["lit"][both].astype(float).mean(0))
        assert dlit.max() < 20, dlit  # measured 3
        # seen from the other side (the cards' mirror images): as close
        back = _camera(az=180.0)
        a2, b2 = on.render(scene, back, KINDS), off.render(scene, back, KINDS)
        m2, f2 = a2["instance_id"] == 1, b2["instance_id"] == 1
        assert (m2 & f2).sum() / (m2 | f2).sum() > 0.75  # measured 0.87
        both = m2 & f2
        assert np.abs(a2["lit"][both].astype(float).mean(0) - b2["lit"][both].astype(float).mean(0)).max() < 25
    finally:
        on.close()
        off.close()


def test_near_tree_and_alpha_cut_foliage_keep_their_meshes(stall):
    lib = Library()
    on = GLBackend(lib.mesh, content=lib)
    try:
        assert _drawn(on, _one(), _camera(900.0)) == lib.meshes["tree"].n_triangles
        cut = _drawn(on, _one("cut_tree"), _camera())
        assert 8 < cut < lib.meshes["cut_tree"].n_triangles  # decimated, not an impostor
        assert "cut_tree" not in on._passes.mesh_cache.impostors
    finally:
        on.close()


def _digest() -> str:
    lib = Library()
    be = GLBackend(lib.mesh, content=lib)
    try:
        out = be.render(_one(), _camera(), KINDS)
        imp = be._passes.mesh_cache.impostors["tree"]
        h = hashlib.sha256(imp.materials[0].albedo.tobytes() + imp.materials[0].normal_map.tobytes())
        for k in KINDS:
            h.update(np.ascontiguousarray(out[k]).tobytes())
        return h.hexdigest()
    finally:
        be.close()


def test_impostor_bake_is_deterministic_in_a_fresh_renderer_and_another_process(stall):
    first = _digest()
    assert _digest() == first
    code = textwrap.dedent(f"""
        import sys
        sys.path[:0] = [{str(ROOT)!r}, {str(ROOT / "tests" / "engine")!r}]
        from sceneforge.engine.server.gl import lod as L
        L.IMPOSTOR_STALL = 0.5
        import test_gl_impostor as T
        print(T._digest())
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert out.stdout.strip().splitlines()[-1] == first
