"""The embedded moderngl renderer against the camera model in engine.world.

Every expected value is computed independently of the renderer: pixels from ``Camera.project``,
depths from ray/plane intersections, colours from ``Actor.color``. Meshes are trimesh primitives
turned into :class:`RenderMesh` here, so no asset library is needed.
"""

from __future__ import annotations

import numpy as np
import pytest
import trimesh

from sceneforge.core.errors import ConfigError
from sceneforge.core.meshes import RenderMesh
from sceneforge.engine import render_kinds
from sceneforge.engine.world import Ground, Look, Rotator
from gl_scenes import MESHES, _actor, _camera, _centroid, _render_mesh, _scene, _three_objects

pytestmark = pytest.mark.render


# --- mesh preparation (no GL) -----------------------------------------------------------------
def test_crease_split_gives_flat_box_faces_and_smooth_spheres():
    from sceneforge.engine.server.gl.resources import crease_split

    box, n = crease_split(MESHES["box"])
    assert len(box.vertices) == 24  # 8 corners x 3 faces
    np.testing.assert_allclose(np.abs(n).max(axis=1), 1.0, atol=1e-6)  # axis-aligned normals
    sphere = MESHES["sphere"]
    faces = sphere.faces.copy()
    faces[::2] = faces[::2, ::-1]  # inconsistent winding must not cancel the normals out
    split, n = crease_split(RenderMesh(sphere.vertices, faces, sphere.colors))
    radial = split.vertices - [0.0, 0.0, 50.0]
    cos = np.abs(np.sum(n * radial, axis=1)) / np.linalg.norm(radial, axis=1)
    assert cos.min() > 0.99


def test_crease_split_handles_high_valence_fans():
    from sceneforge.engine.server.gl.resources import crease_split

    # Cap centres touch 2000 faces: pairwise smoothing is bounded there (flat per face), which
    # keeps the upload fast (all pairs took seconds) and is exact for planar caps.
    cyl = trimesh.creation.cylinder(radius=40, height=250, sections=2000)
    split, n = crease_split(_render_mesh(cyl, (1, 2, 3)))
    caps = np.abs(n[:, 2]) > 0.99
    assert caps.sum() > 0 and (np.abs(n[~caps, 2]) < 1e-3).all()  # rims stay sharp


# --- geometry -------------------------------------------------------------------------------
@pytest.mark.parametrize("loc", [(1000.0, 0.0, 140.0), (900.0, 250.0, 60.0), (1200.0, -300.0, 300.0)])
def test_small_box_appears_where_camera_projects_it(backend, loc):
    cam = _camera(320, 240)
    scene = _scene(_actor("a", "small", loc), ground=Ground(texture="flat"))
    ids = backend.render(scene, cam, ("instance_id",))["instance_id"]
    center = np.array(loc) + [0, 0, 10]  # the box's base sits at loc
    uv, _ = cam.project(center[None])
    assert np.linalg.norm(_centroid(ids == 1) - uv[0]) < 1.0


def test_ray_depth_matches_distance_to_box_face(backend):
    cam = _camera(320, 240)
    scene = _scene(_actor("a", "box", (1000.0, 80.0, 100.0)))
    out = backend.render(scene, cam, ("depth", "plane_depth", "instance_id"))
    front = np.array([950.0, 80.0, 150.0])  # centre of the face at x = 950 facing the camera
    uv, planar = cam.project(front[None])
    u, v = int(uv[0, 0]), int(uv[0, 1])
    assert out["instance_id"][v, u] == 1
    # The pixel centre's ray hits the plane x = 950: ray length = 950 * |d| / d_forward.
    d = np.array([1.0, (u + 0.5 - cam.width / 2) / cam.focal_px, -(v + 0.5 - cam.height / 2) / cam.focal_px])
    expected_ray = 950.0 * np.linalg.norm(d)
    assert out["depth"][v, u] == pytest.approx(expected_ray, rel=0.01)
    assert out["plane_depth"][v, u] == pytest.approx(950.0, rel=0.01)
    assert out["depth"].dtype == np.float32 and out["plane_depth"].dtype == np.float32


def test_ray_and_planar_depth_are_consistent_and_sky_is_inf(backend):
    cam = _camera(160, 120, rotation=Rotator(5.0, 10.0, 0.0))
    scene = _scene(_actor("a", "sphere", (800.0, 100.0, 0.0)))
    out = backend.render(scene, cam, ("depth", "plane_depth"))
    ray, planar = out["depth"], out["plane_depth"]
    assert np.array_equal(np.isinf(ray), np.isinf(planar))
    sky = np.isinf(ray)
    assert sky[0].all() and not sky[-1].any()  # looking slightly up: sky at the top, ground below
    u = (np.arange(cam.width) + 0.5 - cam.width / 2) / cam.focal_px
    v = (np.arange(cam.height) + 0.5 - cam.height / 2) / cam.focal_px
    factor = np.sqrt(1 + u[None] ** 2 + v[:, None] ** 2)
    np.testing.assert_allclose(ray[~sky], (planar * factor)[~sky], rtol=1e-5)


def test_ground_depth_matches_plane_intersection(backend):
    cam = _camera(160, 120, rotation=Rotator(-30.0, 0.0, 0.0))
    plane = backend.render(_scene(), cam, ("plane_depth",))["plane_depth"]
    v = 100  # a row below the horizon: ray hits z = 0
    d = cam.rotation.matrix() @ np.array([1.0, 0.0, -(v + 0.5 - cam.height / 2) / cam.focal_px])
    t = 150.0 / -d[2]  # planar depth = t because d has unit forward component
    assert plane[v, cam.width // 2] == pytest.approx(t, rel=0.01)


def test_relief_ground_follows_ground_height(backend):
    ground = Ground(relief_amplitude=200.0, relief_wavelength=3000.0, texture="flat")
    cam = _camera(160, 120, location=(300.0, 500.0, 600.0), rotation=Rotator(-35.0, 20.0, 0.0))
    out = backend.render(_scene(ground=ground), cam, ("depth",))["depth"]
    u, v = 80, 70
    d = cam.rotation.matrix() @ np.array([1.0, (u + 0.5 - 80) / cam.focal_px, -(v + 0.5 - 60) / cam.focal_px])
    d /= np.linalg.norm(d)
    ts = np.linspace(1.0, 5000.0, 200001)  # march the ray to the first crossing of the surface
    pts = np.asarray(cam.location) + ts[:, None] * d
    above = pts[:, 2] - ground.height(pts[:, 0], pts[:, 1])
    hit = ts[np.argmax(above < 0)]
    assert out[v, u] == pytest.approx(hit, rel=0.01)


def test_relief_ground_has_no_dark_specks_on_far_slopes(backend):
    ground = Ground(relief_amplitude=200.0, relief_wavelength=3000.0, texture="flat")
    cam = _camera(320, 240, location=(0.0, 0.0, 800.0), rotation=Rotator(-20.0, 0.0, 0.0))
    out = backend.render(_scene(ground=ground), cam, ("lit", "depth", "normal"))
    ground_px = np.isfinite(out["depth"])
    luma = out["lit"].astype(float).mean(axis=-1)[ground_px]
    assert luma.min() > 0.6 * np.median(luma)
    assert (out["normal"][ground_px][:, 2] > 0.5).all()  # terrain normals point up


def test_object_to_the_right_in_camera_frame_is_in_right_half(backend):
    cam = _camera(160, 120, rotation=Rotator(0.0, 40.0, 0.0))
    right = cam.rotation.matrix()[:, 1]
    fwd = cam.rotation.matrix()[:, 0]
    loc = np.array(cam.location) + 1000 * fwd + 300 * right
    loc[2] = 100.0
    ids = backend.render(_scene(_actor("a", "small", tuple(loc))), cam, ("instance_id",))["instance_id"]
    xs = np.nonzero(ids == 1)[1]
    assert len(xs) > 0 and xs.min() > cam.width / 2


# --- labels -----------------------------------------------------------------------------------
def test_object_mask_colours_and_instance_ids(backend):
    scene = _three_objects()
    out = backend.render(scene, _camera(), ("object_mask", "instance_id"))
    mask, ids = out["object_mask"], out["instance_id"]
    assert mask.dtype == np.uint8 and mask.shape == (120, 160, 3) and ids.dtype == np.int32
    colours = {tuple(c) for c in mask.reshape(-1, 3)}
    assert colours == {(0, 0, 0)} | {a.color for a in scene.actors.values()}
    for i, actor in enumerate(scene.actors.values()):
        assert np.array_equal(np.all(mask == actor.color, axis=-1), ids == i + 1)
    assert (mask[ids == 0] == 0).all()


def test_all_kinds_shapes_and_dtypes(backend):
    out = backend.render(_three_objects(), _camera(96, 64), render_kinds.rendered())
    assert list(out) == list(render_kinds.rendered())
    assert out["lit"].shape == (64, 96, 3) and out["lit"].dtype == np.uint8
    assert out["normal"].shape == (64, 96, 3) and out["normal"].dtype == np.float32
    assert out["instance_id"].shape == (64, 96)


def test_normals_are_world_unit_vectors_facing_the_camera(backend):
    cam = _camera(160, 120)
    out = backend.render(_scene(_actor("a", "box", (1000.0, 0.0, 100.0))), cam, ("normal", "instance_id", "depth"))
    n, ids, depth = out["normal"], out["instance_id"], out["depth"]
    uv, _ = cam.project(np.array([[950.0, 0.0, 150.0]]))
    np.testing.assert_allclose(n[int(uv[0, 1]), int(uv[0, 0])], [-1.0, 0.0, 0.0], atol=1e-3)
    ground = (ids == 0) & np.isfinite(depth)
    np.testing.assert_allclose(n[ground], np.tile([0.0, 0.0, 1.0], (ground.sum(), 1)), atol=1e-3)
    assert (n[np.isinf(depth)] == 0).all()


def test_hidden_actor_is_not_drawn_and_keeps_its_id_slot(backend):
    scene = _scene(_actor("h", "box", (1000.0, 0.0, 0.0), 0, hidden=True), _actor("v", "sphere", (800.0, -300.0, 0.0), 1))
    ids = backend.render(scene, _camera(), ("instance_id",))["instance_id"]
    assert set(np.unique(ids)) == {0, 2}
    counts = backend.pixel_counts(scene, _camera(), ["h", "v"])
    assert counts["h"].visible == counts["h"].unoccluded == 0 and counts["h"].bbox is None
    assert counts["v"].visible > 0


@pytest.mark.parametrize("style", ["flat", "pbr"])
def test_tint_sets_albedo_hue(backend, style):
    cam = _camera()
    plain = _scene(_actor("a", "cyl", (700.0, 0.0, 0.0)), look=Look(style))
    tinted = _scene(_actor("a", "cyl", (700.0, 0.0, 0.0), tint=(255, 220, 0)), look=Look(style))
    ids = backend.render(plain, cam, ("instance_id",))["instance_id"] == 1
    lit_plain = backend.render(plain, cam, ("lit",))["lit"][ids].astype(float).mean(axis=0)
    lit_tint = backend.render(tinted, cam, ("lit",))["lit"][ids].astype(float).mean(axis=0)
    # white-ish (the PBR look's blue sky light makes the shaded side bluish, as in a photo)
    assert abs(lit_plain[0] - lit_plain[2]) < (20 if style == "flat" else 40)
    assert lit_tint[0] > 2 * lit_tint[2] and lit_tint[1] > 2 * lit_tint[2]  # yellow


# --- visibility ----------------------------------------------------------------------------------
def test_occluder_reduces_visible_not_unoccluded(backend):
    cam = _camera(160, 120)
    target = _actor("t", "box", (1200.0, 0.0, 0.0), 0)
    alone = backend.pixel_counts(_scene(target), cam, ["t"])["t"]
    wall = _actor("w", "wall", (700.0, 220.0, 0.0), 1)  # covers the right part of the box
    scene = _scene(target, wall)
    counts = backend.pixel_counts(scene, cam, ["t", "w"])
    assert counts["t"].unoccluded == alone.unoccluded == alone.visible
    assert 0 < counts["t"].visible < alone.visible
    ids = backend.render(scene, cam, ("instance_id",))["instance_id"]
    assert counts["t"].visible == int((ids == 1).sum()) and counts["w"].visible == int((ids == 2).sum())
    ys, xs = np.nonzero(ids == 1)
    assert counts["t"].bbox == (xs.min(), ys.min(), xs.max(), ys.max())
    assert 0 < counts["t"].ratio < 1


def test_unoccluded_equals_pixels_when_rendered_alone_for_many_actors(backend):
    cam = _camera(160, 120)
    actors = [
        _actor(f"a{i}", asset, (700.0 + 150 * i, -250.0 + 90 * i, 0.0), i)
        for i, asset in enumerate(["box", "sphere", "cyl", "box", "lshape", "sphere"])
    ]
    scene = _scene(*actors)  # overlapping in the image; 6 names > one 4-channel coverage pass
    counts = backend.pixel_counts(scene, cam, [a.name for a in actors][::-1])
    for a in actors:  # all stand on z = 0, so the ground never hides them in a solo render
        solo = backend.render(_scene(a), cam, ("instance_id",))["instance_id"]
        assert counts[a.name].unoccluded == int((solo == 1).sum()) > 0
    assert sum(c.visible for c in counts.values()) < sum(c.unoccluded for c in counts.values())


def test_bbox_matches_projected_box_corners(backend):
    cam = _camera(320, 240)
    counts = backend.pixel_counts(_scene(_actor("a", "box", (1000.0, -200.0, 50.0))), cam, ["a"])["a"]
    corners = np.array([[x, y, z] for x in (950, 1050) for y in (-250, -150) for z in (50, 150)], float)
    uv, _ = cam.project(corners)
    x0, y0, x1, y1 = counts.bbox
    assert abs(x0 - uv[:, 0].min()) <= 1.0 and abs(x1 + 1 - uv[:, 0].max()) <= 1.0
    assert abs(y0 - uv[:, 1].min()) <= 1.0 and abs(y1 + 1 - uv[:, 1].max()) <= 1.0


def test_ground_occludes_visible_but_not_unoccluded(backend):
    cam = _camera(160, 120)
    sunk = _actor("s", "sphere", (900.0, 0.0, -50.0))  # lower half below the ground
    c = backend.pixel_counts(_scene(sunk), cam, ["s"])["s"]
    assert 0 < c.visible < c.unoccluded


def test_culled_and_partly_visible_actors(backend):
    cam = _camera(160, 120)
    behind = _actor("b", "box", (-1000.0, 0.0, 0.0), 0)
    edge = _actor("e", "box", (600.0, 350.0, 100.0), 1)  # straddles the right image border
    counts = backend.pixel_counts(_scene(behind, edge), cam, ["b", "e"])
    assert counts["b"] == counts["b"].__class__(0, 0, None)
    assert counts["e"].visible > 0 and counts["e"].bbox[2] == cam.width - 1


def test_unknown_kind_or_name_is_a_config_error(backend):
    with pytest.raises(ConfigError, match="render kind"):
        backend.render(_scene(), _camera(), ("lit", "albedo"))
    with pytest.raises(ConfigError, match="nope"):
        backend.pixel_counts(_scene(), _camera(), ["nope"])


def test_channel_counts_equal_a_per_channel_count():
    """The coverage pass's per-channel pixel count (a 32-bit mask per channel) is numpy's own
    per-channel count, whatever the values (not only 0/255) and for any first n channels."""
    from sceneforge.engine.server.gl.count_passes import channel_counts

    rgba = np.random.default_rng(3).integers(0, 4, size=(37, 53, 4)).astype(np.uint8) * 85
    rgba[5:9, :, 2] = 0
    expected = [int(np.count_nonzero(rgba[..., k])) for k in range(4)]
    for n in range(5):
        assert channel_counts(rgba.tobytes(), n) == expected[:n]
