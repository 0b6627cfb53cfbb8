"""Speed features of the GL renderer that must not change what labels mean (issue 14 item 6):
vertex welding is exact, levels of detail are chosen per (scene, camera) and used by every pass
of a frame, near actors are always drawn at full detail, and ``gl:lod=0`` turns levels off.
Expected values come from the scene's construction or from the same scene with the feature off."""

from __future__ import annotations

import numpy as np
import pytest
import trimesh

from sceneforge.assets_manifest.lod import simplified
from sceneforge.core.meshes import RenderMesh
from sceneforge.engine.server.gl import lod as L
from sceneforge.engine.server.gl import shadow as SH
from sceneforge.engine.server.gl.backend import GLBackend
from sceneforge.engine.server.gl.resources import VERTEX_DTYPE, interleave, weld
from sceneforge.engine.server.renderers import backend_factory
from sceneforge.engine.world import Camera, Rotator
from gl_scenes import MESHES, _actor, _scene

KINDS = ("lit", "instance_id", "depth")


def _ball(rgb=(180, 120, 90)) -> RenderMesh:
    """A 20k-triangle sphere (diameter 200 cm): heavy enough to have levels of detail."""
    m = trimesh.creation.icosphere(subdivisions=5, radius=100)
    v = np.asarray(m.vertices) + [0, 0, 100]
    return RenderMesh(v, np.asarray(m.faces), np.tile(np.asarray(rgb, np.uint8), (len(v), 1)))


class Library:
    """Stands in for the asset library: meshes by id and their simplified levels."""

    def __init__(self):
        self.meshes = {**MESHES, "ball": _ball()}
        self.asked: list[tuple[str, int]] = []

    def mesh(self, asset_id: str) -> RenderMesh:
        return self.meshes[asset_id]

    def mesh_lod(self, asset_id: str, budget: int) -> RenderMesh:
        self.asked.append((asset_id, budget))
        return simplified(self.meshes[asset_id], budget)


@pytest.fixture(scope="module")
def backends():
    lib = Library()
    on, off = GLBackend(lib.mesh, content=lib), GLBackend(lib.mesh, content=lib, lod=False)
    yield on, off, lib
    on.close()
    off.close()


def _camera(x: float = 0.0) -> Camera:
    return Camera(location=(x, 0.0, 150.0), rotation=Rotator(-2.0, 0.0, 0.0), fov_deg=60.0, width=128, height=96)


def _balls():
    """A near ball (3 m: full detail) and a far, big one (40 m, 4 m across: a level), plus a box."""
    return _scene(
        _actor("near", "ball", (300.0, -100.0, 0.0), 0),
        _actor("far", "ball", (4000.0, 400.0, 0.0), 1, scale=(2, 2, 2)),
        _actor("box", "box", (1500.0, 300.0, 0.0), 2),
    )


def test_weld_keeps_every_corner_exact():
    rng = np.random.default_rng(0)
    n = 60  # 20 faces, unshared, with repeated corners
    pool = rng.normal(size=(8, 3)).astype(np.float32)
    pick = rng.integers(0, 8, n)
    colors = rng.integers(0, 255, (n, 3)).astype(np.uint8)
    data = interleave(pool[pick], pool[pick] * 0.5, colors, None, None)
    faces = np.arange(n, dtype=np.int32).reshape(-1, 3)
    for ignore in (False, True):
        verts, idx = weld(data, faces, ignore_color=ignore)
        welded = np.frombuffer(verts, VERTEX_DTYPE)[np.frombuffer(idx, np.int32)]
        orig = np.frombuffer(data, VERTEX_DTYPE)
        for field in ("pos", "nrm", "uv", "base"):
            assert np.array_equal(welded[field], orig[field])
        if not ignore:
            assert np.array_equal(welded["col"], orig["col"])
        assert len(np.frombuffer(verts, VERTEX_DTYPE)) <= 8 if ignore else True


def test_far_actor_gets_a_level_with_fewer_triangles(backends):
    on, off, lib = backends
    scene, cam = _balls(), _camera()
    assert on.drawn_triangles(scene, cam) < off.drawn_triangles(scene, cam) - 10000
    assert any(a == "ball" for a, _ in lib.asked)
    a, b = on.render(scene, cam, KINDS), off.render(scene, cam, KINDS)
    far_on, far_off = a["instance_id"] == 2, b["instance_id"] == 2
    assert far_on.sum() > 20
    iou = (far_on & far_off).sum() / (far_on | far_off).sum()
    assert iou > 0.85, iou


def test_near_actors_are_drawn_at_full_detail(backends, monkeypatch):
    """Labels exactly as without levels; ``lit`` too once shadow casters are at full detail
    (their own levels, by shadow-map texel size, are tested below)."""
    on, off, _ = backends
    # 1.6 m away the 20k-triangle ball spans ~68 px in radius: level 1 (5120 triangles) would have
    # < TRIANGLES_PER_PX2 (0.5) triangles per pixel of its disc
    scene = _scene(_actor("near", "ball", (150.0, -40.0, 0.0), 0), _actor("box", "box", (1500.0, 300.0, 0.0), 2))
    cam = _camera()
    assert on._frame(scene, cam).draws[0].mesh.n_triangles == 20480
    a, b = on.render(scene, cam, KINDS), off.render(scene, cam, KINDS)
    for k in ("instance_id", "depth"):
        assert np.array_equal(a[k], b[k]), k
    monkeypatch.setattr(L, "SHADOW_TRIANGLES_PER_TEXEL2", 1e12)
    assert np.array_equal(on.render(scene, cam, ("lit",))["lit"], b["lit"])


def test_shadow_casters_get_levels_by_texel_size(backends):
    """A heavy caster is drawn into the shadow map at the level its size in shadow-map texels
    asks for (lod.shadow_level), even when the view draws it at full detail: labels unchanged,
    shadows nearly so."""
    _, off, _ = backends
    lib = Library()
    on = GLBackend(lib.mesh, content=lib)  # fresh: levels are uploaded once per process
    scene, cam = _scene(_actor("near", "ball", (150.0, -40.0, 0.0), 0), _actor("box", "box", (1500.0, 300.0, 0.0), 2)), _camera()
    texel = SH.MIN_TEXEL_CM  # a small scene: the map covers its size x the minimum texel
    level = L.shadow_level(20480, 100.0, texel)
    assert level >= 1
    assert L.shadow_level(20480, 100.0, 0.01) == 0 and L.shadow_level(1000, 100.0, 50.0) == 0
    try:
        a, b = on.render(scene, cam, KINDS), off.render(scene, cam, KINDS)
    finally:
        on.close()
    assert ("ball", L.budget(20480, level)) in lib.asked
    for k in ("instance_id", "depth"):
        assert np.array_equal(a[k], b[k]), k
    assert np.mean(np.any(a["lit"] != b["lit"], axis=-1)) < 0.05


def test_every_pass_of_a_frame_draws_the_same_level(backends):
    on, _, _ = backends
    scene, cam = _balls(), _camera()
    out = on.render(scene, cam, ("lit", "instance_id"))
    ids_only = on.render(scene, cam, ("instance_id",))["instance_id"]
    assert np.array_equal(out["instance_id"], ids_only)
    counts = on.pixel_counts(scene, cam, ["near", "far", "box"])
    for i, name in enumerate(["near", "far", "box"]):
        assert counts[name].visible == int((out["instance_id"] == i + 1).sum())


def test_pixel_counts_cull_with_the_spheres_of_the_drawn_levels(backends):
    """``drawn_spheres`` (the culling of ``pixel_counts``) reuses a full-detail draw's own sphere
    and moves only the levels' spheres: equal to every drawn mesh's sphere moved afresh, here
    with a level whose sphere differs from its full mesh's."""
    from sceneforge.engine.server.gl import backend as B
    from sceneforge.engine.server.gl import frame as F

    on, _, _ = backends
    frame = on._frame(_balls(), _camera())
    levels = [d for d in frame.draws if d.mesh is not d.caster]
    assert levels and any(d.mesh.radius != d.caster.radius for d in levels)
    centers, radii = B.drawn_spheres(frame)
    for k, d in enumerate(frame.draws):
        c, r = F.world_sphere(d.placed, d.mesh.center, d.mesh.radius)
        assert np.array_equal(centers[k], c) and radii[k] == r, d.asset_id


def test_levels_are_a_function_of_the_camera_not_of_history(backends):
    on, _, _ = backends
    scene = _balls()
    first = on.render(scene, _camera(), KINDS)
    on.render(scene, _camera(3500.0), KINDS)  # right next to the far ball: full detail there
    again = on.render(scene, _camera(), KINDS)
    for k in KINDS:
        assert np.array_equal(first[k], again[k]), k


def test_level_choice():
    assert L.level_for(20000, 100.0, 300.0, 200.0) == 0  # close: full detail
    assert L.level_for(1000, 100.0, 1e5, 200.0) == 0  # small mesh: never simplified
    far = L.level_for(20000, 100.0, 6000.0, 200.0)
    farther = L.level_for(20000, 100.0, 30000.0, 200.0)
    assert 1 <= far <= farther <= L.MAX_LEVEL
    assert L.budget(20000, 1) == 5000 and L.budget(20000, 3) >= L.MIN_TRIANGLES


def test_vectorised_caster_levels_equal_the_scalar_rules():
    rng = np.random.default_rng(0)
    n, r, d = rng.integers(10, 40000, 2000), rng.uniform(1, 2000, 2000), rng.uniform(1, 20000, 2000)
    texel, focal = 7.0, 190.0
    got = L.caster_levels(n, r, texel, d, focal)
    want = [
        max(L.shadow_level(int(a), float(b), texel), L.level_for(int(a), float(b), float(c), focal)) for a, b, c in zip(n, r, d)
    ]
    assert got.tolist() == want and 0 < got.max() <= L.MAX_LEVEL
    assert L.caster_levels(n, r, texel).tolist() == [L.shadow_level(int(a), float(b), texel) for a, b in zip(n, r)]


def test_gl_lod_option():
    from sceneforge.core.errors import ConfigError

    assert backend_factory("gl:lod=0") is not None
    with pytest.raises(ConfigError):
        backend_factory("gl:lod=2")(MESHES.__getitem__, 1)


def test_shadow_map_reused_across_cameras_gives_the_images_of_a_fresh_renderer():
    """The shadow map of a static scene is kept across cameras that need different casters (a map
    with more casters gives the same image): views rendered in any order equal fresh renders."""
    import math

    from sceneforge.engine.world import Ground, Sun, look_at_rotation
    from gl_scenes import _camera as cam_at

    rng = np.random.default_rng(3)
    actors = [
        _actor(f"c{k}", ("box", "cyl", "wall")[k % 3], (d * math.cos(a), d * math.sin(a), 0.0), k)
        for k, (a, d) in enumerate(zip(rng.uniform(0, 2 * math.pi, 30), rng.uniform(300.0, 4000.0, 30)))
    ]
    scene = _scene(*actors, ground=Ground(texture="flat"), sun=Sun(pitch=30.0, yaw=-120.0))
    views = [
        cam_at(96, 72, location=eye, rotation=look_at_rotation(eye, aim))
        for eye, aim in (
            ((-1500.0, 0.0, 300.0), (0.0, 0.0, 50.0)),
            ((1500.0, 900.0, 600.0), (0.0, 0.0, 50.0)),
            ((0.0, -1800.0, 200.0), (300.0, 300.0, 50.0)),
        )
    ]
    lib = Library()
    shared = GLBackend(lib.mesh)
    try:
        order = [0, 1, 2, 0, 2, 1]
        seq = [shared.render(scene, views[i], ("lit",))["lit"] for i in order]
        assert shared._passes.shadows.static_renders < len(order)
    finally:
        shared.close()
    for i, img in zip(order, seq):
        fresh = GLBackend(lib.mesh)
        try:
            assert np.array_equal(img, fresh.render(scene, views[i], ("lit",))["lit"]), i
        finally:
            fresh.close()


def _unshared_textured_ball() -> RenderMesh:
    """The ball as the library stores meshes: unshared faces (3 corners each), smooth normals,
    one textured material with UVs (a longitude/latitude map)."""
    from sceneforge.assets_manifest.normalize import RawMesh, render_mesh
    from sceneforge.core.meshes import Material

    m = trimesh.creation.icosphere(subdivisions=4, radius=100)
    v = np.asarray(m.vertices) + [0, 0, 100]
    f = np.asarray(m.faces)
    d = np.asarray(m.vertices) / 100.0
    uv = np.stack([np.arctan2(d[:, 1], d[:, 0]) / (2 * np.pi) + 0.5, np.arccos(np.clip(d[:, 2], -1, 1)) / np.pi], 1)
    tex = np.full((8, 8, 4), 200, np.uint8)
    raw = RawMesh(v, f, np.full((len(f), 3), 200, np.uint8), uv, [Material(name="paint", albedo=tex)], np.zeros(len(f), np.int32))
    return render_mesh(raw)


def _open_edges(mesh: RenderMesh) -> int:
    """Edges used by other than two faces once corners at the same position are merged."""
    _, inv = np.unique(np.round(mesh.vertices, 3), axis=0, return_inverse=True)
    f = inv.reshape(-1)[np.asarray(mesh.faces)]
    e = np.sort(np.concatenate([f[:, [0, 1]], f[:, [1, 2]], f[:, [2, 0]]]), axis=1)
    _, counts = np.unique(e, axis=0, return_counts=True)
    return int((counts != 2).sum())


def test_levels_of_a_closed_unshared_mesh_stay_closed():
    """Issue 19: the library's meshes have unshared faces, and the decimation read their
    connectivity from shared indices, so every triangle looked like a separate leaf: a car's body
    was 'thinned' (triangles dropped, survivors grown) into a dark, holed level. Corners with the
    same position and UV are merged first now: a closed surface gives closed levels with about
    the original area, keeping its material and normals pointing outwards."""
    ball = _unshared_textured_ball()
    assert _open_edges(ball) == 0
    area0 = np.linalg.norm(
        np.cross(*(ball.vertices[ball.faces[:, i]] - ball.vertices[ball.faces[:, 0]] for i in (1, 2))), axis=1
    ).sum()
    for level in (1, 2, 3):
        lv = simplified(ball, L.budget(ball.n_triangles, level))
        assert lv.n_triangles < ball.n_triangles / 2**level
        assert _open_edges(lv) == 0, level
        c = lv.vertices[lv.faces]
        area = np.linalg.norm(np.cross(c[:, 1] - c[:, 0], c[:, 2] - c[:, 0]), axis=1).sum()
        assert 0.85 * area0 < area < 1.02 * area0, (level, area / area0)
        out = (lv.normals[lv.faces] * (c - [0, 0, 100])).sum(axis=2)
        assert (out > 0).all(), level  # smooth normals still point outwards
        assert lv.uvs is not None and lv.materials == ball.materials


def test_levels_decimate_every_part_by_the_same_ratio():
    """Small parts beside a bulky one (a bike's tubes, a fence's slats, a bush's twigs): one
    collapse queue for the whole material takes most from the small parts (their quadric error
    is small) — a single queue leaves these 80-triangle balls 10 triangles. Levels decimate each
    connected part by the same ratio: every small ball keeps about a quarter, as the big one."""
    from sceneforge.assets_manifest import decimate as dec

    parts = [trimesh.creation.icosphere(subdivisions=3, radius=60)]
    for i in range(30):
        parts.append(trimesh.creation.icosphere(subdivisions=1, radius=1.0).apply_translation([100 + 5 * i, 0, 0]))
    m = trimesh.util.concatenate(parts)
    v, f = np.asarray(m.vertices), np.asarray(m.faces)
    corners, _, _ = dec.simplify_group(v, f, None, len(f) // 4, per_part=True)
    assert len(corners) <= len(f) // 4 + 30
    cen = corners.mean(axis=1)
    for i in range(30):
        assert (np.abs(cen[:, 0] - (100 + 5 * i)) < 1.5).sum() >= 16, i
    assert (np.linalg.norm(cen, axis=1) > 50).sum() >= 0.2 * 1280
