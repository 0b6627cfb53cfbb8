"""sceneforge.engine.world conventions checked on hand-computable geometry.

UE/UnrealCV: cm, Z up, left-handed X forward / Y right; yaw turns +X towards +Y; pitch lifts the
nose towards +Z; fov is horizontal. Each expected value below can be checked on paper.
"""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

from sceneforge.core.errors import ConfigError
from sceneforge.engine.world import Actor, Camera, Ground, Rotator, Scene, Sun, Transform, instance_color, look_at_rotation

X, Y, Z = np.eye(3)


def axes(r: Rotator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    m = r.matrix()
    return m[:, 0], m[:, 1], m[:, 2]


@pytest.mark.parametrize(
    "rot, forward, right, up",
    [
        (Rotator(0, 0, 0), X, Y, Z),
        (Rotator(0, 90, 0), Y, -X, Z),  # yaw 90: facing +Y, right hand points to -X
        (Rotator(0, 180, 0), -X, -Y, Z),
        (Rotator(90, 0, 0), Z, Y, -X),  # nose straight up: the head points backwards
        (Rotator(-90, 0, 0), -Z, Y, X),  # looking straight down: the head points forward
        (Rotator(0, 0, 90), X, -Z, Y),  # roll 90: right wing down, head towards +Y
    ],
)
def test_rotator_axes(rot, forward, right, up):
    f, r, u = axes(rot)
    assert np.allclose(f, forward) and np.allclose(r, right) and np.allclose(u, up)


def test_rotator_is_a_proper_rotation():
    rng = np.random.default_rng(0)
    for p, y, r in rng.uniform(-180, 180, size=(20, 3)):
        m = Rotator(p, y, r).matrix()
        assert np.allclose(m.T @ m, np.eye(3)) and np.isclose(np.linalg.det(m), 1.0)


def test_yaw_then_pitch_order():
    """Yaw 90 then pitch 45: forward is halfway between +Y and +Z (yaw applies in the world)."""
    f, _, _ = axes(Rotator(45, 90, 0))
    assert np.allclose(f, [0, math.sqrt(0.5), math.sqrt(0.5)])


def test_transform_scale_rotate_translate():
    t = Transform((10, 0, 0), Rotator(0, 90, 0), (2, 1, 1))
    assert np.allclose(t.apply([[1, 0, 0]]), [[10, 2, 0]])  # scaled along X, yawed to +Y
    assert np.allclose(t.apply([[0, 1, 0]]), [[9, 0, 0]])  # local right → world -X
    homo = t.matrix() @ np.array([1.0, 0, 0, 1])
    assert np.allclose(homo[:3], [10, 2, 0])


def test_transform_validation():
    with pytest.raises(ConfigError, match="scale must be non-zero"):
        Transform(scale=(1, 0, 1))
    with pytest.raises(ConfigError, match="location must be 3 finite"):
        Transform(location=(0, float("nan"), 0))
    assert Transform(scale=(-1, 1, 1)).apply([[1, 0, 0]])[0, 0] == -1  # mirrors allowed


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -float("inf")])
def test_float_tuples_take_no_shortcut_past_validation(bad):
    """Three plain floats skip the per-element conversion (most actors), never the checks: a
    non-finite one is refused, in any place, with the same message; huge finite floats whose sum
    overflows are still finite; ints and numpy floats become floats as before."""
    from sceneforge.engine import limits
    from sceneforge.engine.world import _finite3

    for i in range(3):
        v = [1.0, 2.0, 3.0]
        v[i] = bad
        with pytest.raises(ConfigError, match="location must be 3 finite"):
            Transform(location=tuple(v))
        with pytest.raises(ConfigError, match="expected a finite number"):
            limits.check_range("x", bad, -math.inf, math.inf)
    assert _finite3("v", (1e308, 1e308, 0.0)) == (1e308, 1e308, 0.0)
    with pytest.raises(ConfigError, match="outside the allowed range"):
        Transform(location=(1e308, 1e308, 0.0))
    t = Transform(location=(1, np.float64(2.5), 3.0), scale=(np.float32(2.0), 1.0, 1.0))
    assert t.location == (1.0, 2.5, 3.0) and all(type(v) is float for v in t.location + t.scale)
    for where, kwargs in (
        ("location.y", {"location": (0.0, 2.0e7, 0.0)}),
        ("scale.z (absolute value)", {"scale": (1.0, 1.0, -2.0e3)}),
        ("scale.x (absolute value)", {"scale": (1.0e-4, 1.0, 1.0)}),
    ):
        with pytest.raises(ConfigError, match=re.escape(where) + ": .* is outside the allowed range"):
            Transform(**kwargs)
    with pytest.raises(ConfigError, match="rotation.roll: .* is outside the allowed range"):
        Rotator(0.0, 0.0, 4.0e4)
    with pytest.raises(ConfigError, match="rotation must be 3 finite"):
        Rotator(0.0, bad, 0.0)
    assert Transform(scale=(-2.0, 1.0, 1.0)).scale == (-2.0, 1.0, 1.0)  # mirrored: |scale| checked


def test_intrinsics_of_a_90_degree_camera():
    cam = Camera(fov_deg=90, width=640, height=480)
    assert cam.focal_px == pytest.approx(320.0)
    assert cam.vfov_deg == pytest.approx(math.degrees(2 * math.atan(240 / 320)))  # 73.74°
    assert np.allclose(cam.intrinsics(), [[320, 0, 320], [0, 320, 240], [0, 0, 1]])


@pytest.mark.parametrize(
    "point, pixel, depth",
    [
        ((100, 0, 0), (320, 240), 100),  # straight ahead: image centre
        ((100, 100, 0), (640, 240), 100),  # 45° right: right edge (hfov 90)
        ((100, -100, 0), (0, 240), 100),  # 45° left: left edge
        ((100, 0, 50), (320, 80), 100),  # up → smaller row
        ((200, 0, -100), (320, 400), 200),  # farther and down
    ],
)
def test_project_known_points(point, pixel, depth):
    uv, d = Camera(fov_deg=90, width=640, height=480).project(np.array([point], float))
    assert np.allclose(uv[0], pixel) and d[0] == pytest.approx(depth)


def test_project_behind_camera_has_negative_depth():
    _, d = Camera().project(np.array([[-100.0, 0, 0]]))
    assert d[0] < 0


def test_moved_and_turned_camera():
    cam = Camera((0, 0, 100), Rotator(0, 90, 0), 90, 200, 100)  # at 1 m height, facing +Y
    uv, d = cam.project(np.array([[0.0, 500, 100], [-500.0, 500, 100]]))
    assert np.allclose(uv[0], (100, 50)) and d[0] == pytest.approx(500)
    assert np.allclose(uv[1], (200, 50))  # facing +Y, -X is on the right (left-handed, Z up)


def test_look_at_points_the_optical_axis_at_the_target():
    rot = look_at_rotation((0, 0, 0), (100, 100, 100 * math.sqrt(2)))
    assert (rot.pitch, rot.yaw, rot.roll) == pytest.approx((45, 45, 0))
    cam = Camera((0, 0, 0), rot, 60, 101, 101)
    uv, _ = cam.project(np.array([[100, 100, 100 * math.sqrt(2)]]))
    assert np.allclose(uv[0], (50.5, 50.5))
    with pytest.raises(ConfigError):
        look_at_rotation((1, 2, 3), (1, 2, 3))


def test_gl_matrices_agree_with_project():
    """view_matrix/projection_matrix (the renderer's path) land on the same pixels as project()."""
    rng = np.random.default_rng(1)
    cam = Camera((120, -40, 300), Rotator(-20, 35, 5), 70, 320, 200)
    pts = cam.location + rng.uniform(-200, 200, (50, 3)) + 600 * cam.rotation.matrix()[:, 0]
    clip = (cam.projection_matrix(10, 10000) @ cam.view_matrix() @ np.c_[pts, np.ones(50)].T).T
    ndc = clip[:, :3] / clip[:, 3:]
    gl_uv = np.c_[(ndc[:, 0] + 1) / 2 * cam.width, (1 - ndc[:, 1]) / 2 * cam.height]
    uv, depth = cam.project(pts)
    assert np.allclose(gl_uv, uv) and np.allclose(clip[:, 3], depth)  # w = planar depth
    assert np.isclose(np.linalg.det(cam.view_matrix()[:3, :3]), -1)  # the handedness flip


def test_projection_maps_near_and_far_to_ndc_limits():
    cam = Camera()
    p = cam.projection_matrix(10, 1000)
    for z, ndc in ((10, -1), (1000, 1)):
        v = p @ np.array([0, 0, -z, 1.0])
        assert v[2] / v[3] == pytest.approx(ndc)


def test_camera_validation():
    with pytest.raises(ConfigError, match="fov_deg"):
        Camera(fov_deg=180)
    with pytest.raises(ConfigError, match="resolution"):
        Camera(width=0)


def test_sun_direction():
    assert np.allclose(Sun(pitch=90, yaw=0).direction_to_sun(), Z)
    assert np.allclose(Sun(pitch=0, yaw=90).direction_to_sun(), Y)


def test_ground_relief():
    assert Ground().height(123.0, 4.0) == 0.0
    g = Ground(relief_amplitude=100.0)
    h = g.height(np.linspace(0, 5000, 200), np.zeros(200))
    assert 0 < np.abs(h).max() <= 75.0  # 0.5 * (1 + 0.5) * amplitude bounds the sum of sines


def test_instance_colors_distinct_and_never_black():
    colors = [instance_color(i) for i in range(20000)]
    assert len(set(colors)) == len(colors) and (0, 0, 0) not in colors
    assert instance_color(0) == instance_color(0)
    with pytest.raises(ConfigError):
        instance_color(-1)


def test_scene_and_actor_validation():
    scene = Scene()
    scene.add(Actor("a", "rock"))
    with pytest.raises(ConfigError, match="already exists"):
        scene.add(Actor("a", "rock"))
    with pytest.raises(ConfigError, match="without spaces"):
        Actor("a b", "rock")
    with pytest.raises(ConfigError, match="color must be 3 ints"):
        Actor("c", "rock", color=(0, 0, 300))
    assert scene.replace_actor("a", hidden=True).hidden
    with pytest.raises(ConfigError, match="no actor"):
        scene.replace_actor("zz", hidden=True)
