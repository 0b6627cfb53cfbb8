"""The sun's two shadow cascades (engine/server/gl/shadow.py): fragments nearer than the split read
the near cascade, which is the single full-resolution map of before, so they are unchanged; the
far ones read a grid with texels twice as wide, which still holds the far shadows. References
come from the same renderer with the split pushed beyond the shadow distance (one grid)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from sceneforge.engine.server.gl import frame as F
from sceneforge.engine.server.gl import shadow as SH
from sceneforge.engine.server.gl.passes import cascade_receivers
from sceneforge.engine.server.optical_flow import world_points
from sceneforge.engine.world import Ground, Look, Rotator, Sun, look_at_rotation
from gl_scenes import _actor, _camera, _scene

pytestmark = pytest.mark.render


def _field(style: str):
    """Walls and boxes from 3 to 45 m in front of a camera 2 m up, the sun low and to the side:
    long shadows on both sides of the split."""
    rng = np.random.default_rng(11)
    actors = [
        _actor(
            f"w{k}",
            ("wall", "box", "cyl")[k % 3],
            (float(x), float(y), 0.0),
            k,
            rotation=Rotator(0.0, float(rng.uniform(-90, 90)), 0.0),
        )
        for k, (x, y) in enumerate(zip(np.linspace(300.0, 4500.0, 24), rng.uniform(-900.0, 900.0, 24)))
    ]
    return _scene(*actors, ground=Ground(texture="flat"), sun=Sun(pitch=22.0, yaw=70.0), look=Look(style))


def _views():
    for yaw, pitch, z in ((0.0, -6.0, 200.0), (12.0, -10.0, 450.0), (-15.0, -3.0, 160.0)):
        yield _camera(192, 144, location=(0.0, 0.0, z), rotation=Rotator(pitch, yaw, 0.0))


def _render(backend, scene, cam, split: float):
    shadows = backend._passes.shadows
    shadows.split = split
    shadows.forget()
    try:
        return backend.render(scene, cam, ("lit", "depth"))
    finally:
        shadows.split = SH.CASCADE_SPLIT_CM


def _within(depth: np.ndarray, limit: float, grow: int) -> np.ndarray:
    """Pixels whose whole (2·grow+1)² neighbourhood is nearer than ``limit`` (FXAA reads
    neighbours, so a pixel next to a far one may change)."""
    far = np.pad(depth >= limit, grow, constant_values=True)
    h, w = depth.shape
    out = np.zeros((h, w), dtype=bool)
    for dy in range(2 * grow + 1):
        for dx in range(2 * grow + 1):
            out |= far[dy : dy + h, dx : dx + w]
    return ~out


@pytest.mark.parametrize("style", ["pbr", "flat"])
def test_fragments_nearer_than_the_split_see_the_one_grid_map(backend, style):
    """Near pixels are byte-identical to the single full-resolution map's; far ones differ
    (they read the far cascade: the comparison can fail) but keep their shadows."""
    scene = _field(style)
    near_px = far_changed = 0
    for cam in _views():
        one = _render(backend, scene, cam, SH.NO_SPLIT)
        two = _render(backend, scene, cam, SH.CASCADE_SPLIT_CM)
        depth = one["depth"]
        near = _within(depth, SH.CASCADE_SPLIT_CM, 3)
        assert np.array_equal(one["lit"][near], two["lit"][near])
        near_px += int(near.sum())
        far = (depth > SH.CASCADE_SPLIT_CM * 1.1) & (depth < SH.SHADOW_DISTANCE_CM * (1 - SH.FADE))
        changed = np.any(one["lit"] != two["lit"], axis=-1) & far
        far_changed += int(changed.sum())
        # the far shadows are the same shadows, only softer: the mean brightness of the far
        # ground barely moves, and so does the number of clearly shadowed pixels there
        lum1, lum2 = one["lit"][far].astype(float).mean(-1), two["lit"][far].astype(float).mean(-1)
        assert abs(lum1.mean() - lum2.mean()) < 1.5
        dark1, dark2 = int((lum1 < 0.7 * np.median(lum1)).sum()), int((lum2 < 0.7 * np.median(lum2)).sum())
        assert abs(dark1 - dark2) <= 0.15 * max(dark1, 50), (dark1, dark2)
    assert near_px > 5000 and far_changed > 50


def test_the_far_cascade_holds_the_far_shadows(backend, monkeypatch):
    """Power for the test above: with nothing drawn into the far cascade, the far shadows vanish."""
    scene, cam = _field("pbr"), next(_views())
    two = _render(backend, scene, cam, SH.CASCADE_SPLIT_CM)
    far_grid = backend._passes.shadows.size // SH.FAR_TEXELS
    culling = SH.casters_in_view
    monkeypatch.setattr(
        SH,
        "casters_in_view",
        lambda lvp, pts, c, r, size: np.zeros(len(c), dtype=bool) if size == far_grid else culling(lvp, pts, c, r, size),
    )
    empty_far = _render(backend, scene, cam, SH.CASCADE_SPLIT_CM)
    monkeypatch.undo()
    far = two["depth"] > SH.CASCADE_SPLIT_CM * 1.1
    lighter = empty_far["lit"].astype(int).sum(-1) - two["lit"].astype(int).sum(-1)
    assert (lighter[far] > 30).sum() > 0.02 * far.sum()  # the far shadows are gone (~4 % of those pixels)


def test_receivers_hold_the_pixels_that_read_each_cascade(backend):
    """Every visible surface point nearer than the split lies in the near receivers' hull; every
    one from the split to the shadow distance in the far receivers' hull (checked in the light's
    projection, where the culling and the filled region are computed)."""
    scene = _field("pbr")
    for cam in _views():
        out = backend.render(scene, cam, ("lit", "depth", "plane_depth"))
        frame = backend._frame(scene, cam)
        draws = frame.draws
        amp = abs(scene.ground.relief_amplitude)
        z_range = (
            min([-amp] + [d.center[2] - d.radius for d in draws]) - 1.0,
            max([amp] + [d.center[2] + d.radius for d in draws]) + 1.0,
        )
        near_pts, far_pts = cascade_receivers(frame, z_range, SH.CASCADE_SPLIT_CM, SH.SHADOW_DISTANCE_CM)
        seen = np.isfinite(out["depth"])  # sky pixels have no surface
        pts, dist = world_points(cam, out["plane_depth"])[seen], out["depth"][seen]
        lvp = F.light_view_proj(
            scene.sun.direction_to_sun(), np.array([d.center for d in draws]), np.array([d.radius for d in draws])
        )[0]
        for hull_pts, sel in (
            (near_pts, dist < SH.CASCADE_SPLIT_CM),
            (far_pts, (dist > SH.CASCADE_SPLIT_CM) & (dist < SH.SHADOW_DISTANCE_CM)),
        ):
            assert sel.sum() > 100
            hull = SH._convex_hull(hull_pts @ lvp[:2, :3].T + lvp[:2, 3])
            xy = pts[sel] @ lvp[:2, :3].T + lvp[:2, 3]
            assert np.all(SH._distance_to_convex(xy, hull) < 1e-6)


def test_receiver_points_between_two_depths():
    cam = _camera(160, 120, location=(0.0, 0.0, 300.0), rotation=look_at_rotation((0.0, 0.0, 300.0), (1000.0, 0.0, 0.0)))
    vp = F.view_proj(cam, 5.0, 20000.0)
    fwd = cam.rotation.matrix()[:, 0]
    pts = F.receiver_points(vp, 5.0, 20000.0, 6000.0, (-50.0, 800.0), min_depth=1500.0)
    planar = (pts - np.asarray(cam.location)) @ fwd
    assert len(pts) >= 4 and planar.min() > 1500.0 - 1e-6 and planar.max() < 6000.0 + 1e-6
    assert math.isclose(planar.min(), 1500.0, abs_tol=1e-6) or pts[:, 2].min() >= -50.0 - 1e-6
    assert len(F.receiver_points(vp, 5.0, 20000.0, 1000.0, (-50.0, 800.0), min_depth=1500.0)) == 0
