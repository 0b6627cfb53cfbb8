"""Trajectories: smoothness, ground contact, determinism, and the mirror/reverse geometry."""

from __future__ import annotations

import numpy as np
import pytest

from sceneforge.core.errors import ConfigError
from sceneforge.engine.world import Ground, Transform, Rotator
from sceneforge.scenarios.videos import motion as mo

FOV, W, H = 53.13, 224, 224
GROUND = Ground(relief_amplitude=80.0, relief_wavelength=2500.0)


def _clip(pattern: str, seed: int = 0, ground=GROUND) -> mo.ClipMotion:
    rng = np.random.default_rng(seed)
    spec = mo.sample_spec(rng, mo.MotionConfig(), pattern, (300.0, -200.0), (450.0, 200.0, 160.0))
    return mo.build_clip(spec, ground.height)


def test_nine_patterns_are_the_product_of_camera_and_object_modes():
    assert len(mo.PATTERNS) == 9 and len(set(mo.PATTERNS)) == 9
    assert {mo.parse_pattern(p) for p in mo.PATTERNS} == {(c, o) for c in mo.CAM_MODES for o in mo.OBJ_MODES}


@pytest.mark.parametrize(
    "bad, match",
    [
        ({"n_frames": 1}, "n_frames"),
        ({"fps": 0}, "fps"),
        ({"cam_speed_cms": [5, 1]}, "cam_speed_cms"),
        ({"patterns": ["cam_fly-obj_static"]}, "cam_fly"),
        ({"speed": 3}, "unknown field"),
    ],
)
def test_bad_motion_config_names_the_field(bad, match):
    with pytest.raises(ConfigError, match=match):
        mo.MotionConfig.from_dict(bad)


@pytest.mark.parametrize("pattern", mo.PATTERNS)
def test_trajectories_are_smooth_and_on_the_ground(pattern):
    c = _clip(pattern, seed=3)
    assert c.n_frames == 16
    # constant velocities / rates: second differences vanish (no popping)
    for arr in (c.camera.location[:, :2], c.camera.yaw, c.subject.location[:, :2], c.subject.yaw):
        assert np.allclose(np.diff(arr, 2, axis=0), 0.0, atol=1e-6)
    z = GROUND.height(c.subject.location[:, 0], c.subject.location[:, 1])
    assert np.allclose(c.subject.location[:, 2], z)
    assert np.allclose(np.diff(c.camera.location[:, 2]), 0.0)  # rig at constant height


@pytest.mark.parametrize("pattern", mo.PATTERNS)
def test_each_pattern_moves_only_what_it_says(pattern):
    cam, obj = mo.parse_pattern(pattern)
    c = _clip(pattern, seed=5)
    cam_moved = np.ptp(c.camera.location[:, :2], axis=0).max() > 1.0
    cam_turned = np.ptp(c.camera.yaw) > 0.5
    obj_moved = np.ptp(c.subject.location[:, :2], axis=0).max() > 1.0
    obj_turned = np.ptp(c.subject.yaw) > 0.5
    assert (cam_moved, cam_turned) == (cam == "translate", cam == "rotate")
    assert (obj_moved, obj_turned) == (obj == "translate", obj == "rotate")


def test_same_seed_same_clip_and_different_seed_differs():
    a, b, d = (
        _clip("cam_translate-obj_translate", 7),
        _clip("cam_translate-obj_translate", 7),
        _clip("cam_translate-obj_translate", 8),
    )
    assert a.allclose(b, atol=0.0)
    assert not a.allclose(d)


def test_subject_bearing_range_is_centred_in_the_view():
    c = _clip("cam_rotate-obj_translate", seed=11)
    b = mo.bearings(c)
    assert abs(b.max() + b.min()) < 0.5  # centred: symmetric about the optical axis


@pytest.mark.parametrize("pattern", mo.PATTERNS)
def test_double_transforms_are_identities(pattern):
    c = _clip(pattern, seed=2)
    assert mo.hflip_motion(mo.hflip_motion(c)).allclose(c)
    assert mo.reverse_motion(mo.reverse_motion(c)).allclose(c, atol=0.0)
    assert not mo.reverse_motion(c).allclose(c) or pattern == "cam_static-obj_static"


@pytest.mark.parametrize("pattern", mo.PATTERNS)
def test_mirrored_world_projects_to_horizontally_flipped_pixels(pattern):
    """The claim behind hflip labels, checked by projection: every point of the mirrored world
    seen by the mirrored camera lands at u' = W - u, v' = v, same depth, in every frame."""
    c = _clip(pattern, seed=4)
    m = mo.hflip_motion(c)
    origin, plane_yaw = mo.mirror_plane(c)
    pts = np.random.default_rng(0).uniform(-800, 800, (50, 3)) + c.subject.location[0]
    for t in range(c.n_frames):
        uv, d = mo.camera_at(c, t, FOV, W, H).project(pts)
        uv2, d2 = mo.camera_at(m, t, FOV, W, H).project(mo.mirror_points(pts, origin, plane_yaw))
        assert np.allclose(d, d2) and np.allclose(uv2[:, 0], W - uv[:, 0]) and np.allclose(uv2[:, 1], uv[:, 1])


def test_mirror_transform_mirrors_every_vertex_of_an_actor():
    origin, plane_yaw = np.array([100.0, -50.0, 200.0]), 37.0
    tf = Transform((400.0, 300.0, 12.0), Rotator(0.0, 81.0, 0.0), (1.0, 1.5, 1.0))
    local = np.random.default_rng(1).uniform(-100, 100, (20, 3))
    mirrored = mo.mirror_transform(tf, origin, plane_yaw)
    assert mirrored.scale[1] < 0
    assert np.allclose(mirrored.apply(local), mo.mirror_points(tf.apply(local), origin, plane_yaw))


def test_subject_transform_matches_the_track():
    c = _clip("cam_static-obj_rotate", seed=1)
    tf = mo.subject_transform(c, 5)
    assert np.allclose(tf.location, c.subject.location[5]) and tf.rotation.yaw == pytest.approx(c.subject.yaw[5])


def test_edge_margin_detects_a_subject_leaving_the_view():
    c = _clip("cam_static-obj_static", seed=0)
    assert mo.min_edge_margin_px(c, FOV, W, H) > 0
    far = mo.ClipMotion(
        c.pattern,
        c.fps,
        c.camera,
        mo.Track(c.subject.location + np.array([0, 5000.0, 0]), c.subject.yaw, c.subject.pitch),
        c.subject_size,
    )
    assert mo.min_edge_margin_px(far, FOV, W, H) < 0


def test_keep_out_circles_cover_the_swept_path():
    c = _clip("cam_translate-obj_translate", seed=9)
    circles = mo.keep_out(c)
    for p in c.subject.location[:, :2]:
        assert any(np.hypot(p[0] - x, p[1] - y) + 150 <= r for x, y, r in circles)
    for p in c.camera.location[:, :2]:
        assert any(np.hypot(p[0] - x, p[1] - y) <= r for x, y, r in circles)
