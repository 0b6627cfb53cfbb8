"""Shadow-caster culling (engine/server/gl/shadow.py: casters_in_view): the sun's map draws only
the casters whose shadow can reach a fragment in the camera's frustum, and the image must be the
same, byte for byte, as with every caster drawn. Expected images come from the renderer with the
culling switched off (the reference), never from the code under test."""

from __future__ import annotations

import math

import numpy as np
import pytest

from sceneforge.engine.server.gl import shadow as SH
from sceneforge.engine.world import Ground, Rotator, Sun, look_at_rotation
from gl_scenes import _actor, _camera, _scene

pytestmark = pytest.mark.render


def _ring_scene(sun: Sun):
    """Casters all around the origin (the camera sees a few of them), on relief ground."""
    rng = np.random.default_rng(7)
    actors = []
    for k in range(36):
        a, d = rng.uniform(0, 2 * math.pi), rng.uniform(300.0, 4000.0)
        kind = ("box", "cyl", "wall", "sphere")[k % 4]
        actors.append(
            _actor(
                f"c{k}",
                kind,
                (d * math.cos(a), d * math.sin(a), 0.0),
                k,
                rotation=Rotator(0.0, float(rng.uniform(-180, 180)), 0.0),
            )
        )
    return _scene(*actors, ground=Ground(texture="flat", relief_amplitude=40.0, relief_wavelength=3000.0), sun=sun)


def _views():
    rng = np.random.default_rng(8)
    for _ in range(6):
        eye = (float(rng.uniform(-1500, 1500)), float(rng.uniform(-1500, 1500)), float(rng.uniform(120, 900)))
        aim = (float(rng.uniform(-600, 600)), float(rng.uniform(-600, 600)), 50.0)
        yield _camera(160, 120, location=eye, rotation=look_at_rotation(eye, aim))


def _receivers(backend, scene, cam):
    """The points the backend culls against (the view up to the shadow distance, scene heights)."""
    from sceneforge.engine.server.gl import frame as F

    frame = backend._frame(scene, cam)
    z = [d.center[2] + s * d.radius for d in frame.draws for s in (-1, 1)]
    amp = abs(scene.ground.relief_amplitude)
    return F.receiver_points(
        frame.view_proj, frame.near, frame.far, SH.SHADOW_DISTANCE_CM, (min([-amp] + z) - 1.0, max([amp] + z) + 1.0)
    )


def _render(backend, scene, cam, cull: bool, monkeypatch):
    """``cull=False``: the reference, every caster drawn into every texel of the map."""
    if not cull:
        monkeypatch.setattr(SH, "casters_in_view", lambda lvp, vp, c, r, size: np.ones(len(c), dtype=bool))
        monkeypatch.setattr(SH, "read_region", lambda lvp, pts, size, block=1: (0, 0, size, size))
    backend._passes.shadows.forget()  # a fresh map (else one holding more would be reused)
    try:
        return backend.render(scene, cam, ("lit",))["lit"]
    finally:
        monkeypatch.undo()


def test_culled_shadow_map_gives_the_same_image(backend, monkeypatch):
    """Only the casters and texels the view can read are drawn: same bytes as the whole map."""
    culled_some = filled_less = 0
    for k, cam in enumerate(_views()):
        scene = _ring_scene(Sun(pitch=25.0 + 8 * k, yaw=-150.0 + 55 * k))
        full = _render(backend, scene, cam, False, monkeypatch)
        fast = _render(backend, scene, cam, True, monkeypatch)
        assert np.array_equal(full, fast), f"view {k}: culling changed {np.mean(np.any(full != fast, axis=-1)):.2%} of pixels"
        # the culling did drop casters here (else the test proves nothing)
        draws = backend._frame(scene, cam).draws
        from sceneforge.engine.server.gl import frame as F

        centers, radii = np.array([d.center for d in draws]), np.array([d.radius for d in draws])
        fit = F.light_view_proj(scene.sun.direction_to_sun(), centers, radii, min_extent=1024 * SH.MIN_TEXEL_CM)
        keep = SH.casters_in_view(fit[0], _receivers(backend, scene, cam), centers, radii, 1024)
        culled_some += int(keep.sum() < len(keep))
        x, y, w, h = backend._passes.shadows.cascades[0].rect  # the fast render's filled near texels
        filled_less += int(w * h < 1024 * 1024)
    assert culled_some >= 4 and filled_less >= 4


def test_dropping_a_caster_that_matters_changes_the_image(backend, monkeypatch):
    """Power: with the casters the rule keeps also dropped, shadows vanish, so the equality above
    can fail."""
    cam = next(iter(_views()))
    scene = _ring_scene(Sun(pitch=30.0, yaw=40.0))
    # the empty map first: a map already holding more casters is reused (it gives the same image)
    monkeypatch.setattr(SH, "casters_in_view", lambda lvp, vp, c, r, size: np.zeros(len(c), dtype=bool))
    try:
        none = backend.render(scene, cam, ("lit",))["lit"]
    finally:
        monkeypatch.undo()
    full = _render(backend, scene, cam, False, monkeypatch)
    assert not np.array_equal(full, none)


def test_distance_to_convex_polygon():
    square = SH._convex_hull(np.array([[0, 0], [1, 0], [1, 1], [0, 1], [0.5, 0.5]], float))
    assert len(square) == 4
    d = SH._distance_to_convex(np.array([[0.5, 0.5], [2.0, 0.5], [2.0, 2.0], [-1.0, 0.0]]), square)
    assert np.allclose(d, [0.0, 1.0, math.sqrt(2.0), 1.0])


def test_pixel_counts_skip_actors_behind_the_named_ones(backend, monkeypatch):
    """``pixel_counts`` draws in its id pass only actors that can be nearer than a named one
    (backend.possible_occluders): counts and boxes equal those with every actor drawn."""
    from sceneforge.engine.server.gl import backend as B

    skipped = 0
    for k, cam in enumerate(_views()):
        scene = _ring_scene(Sun(pitch=40.0, yaw=10.0 * k))
        names = [f"c{(3 * k) % 36}", f"c{(3 * k + 7) % 36}", f"c{(5 * k + 2) % 36}"]
        fast = backend.pixel_counts(scene, cam, names)
        frame = backend._frame(scene, cam)
        order = {n: i for i, n in enumerate(scene.actors)}
        skipped += int(np.sum(frame.visible) - np.sum(B.possible_occluders(frame, {order[n] for n in names})))
        monkeypatch.setattr(B, "possible_occluders", lambda f, wanted, spheres=None: np.asarray(f.visible, dtype=bool))
        try:
            full = backend.pixel_counts(scene, cam, names)
        finally:
            monkeypatch.undo()
        assert fast == full, k
    assert skipped > 0  # the rule did leave actors out here


def test_pixel_counts_render_only_the_named_actors_block(backend, monkeypatch):
    """``pixel_counts`` renders only the pixel block holding the named actors' projected bounding
    spheres, with only the actors that reach it (backend.wanted_rect): counts and boxes (in image
    coordinates) equal those of the whole frame, also for named actors at the image border,
    partly or wholly out of view."""
    from sceneforge.engine.server.gl import backend as B

    smaller = culled = seen = partly = 0
    for k, cam in enumerate(_views()):
        scene = _ring_scene(Sun(pitch=40.0, yaw=10.0 * k))
        for names in ([f"c{(3 * k) % 36}", f"c{(3 * k + 7) % 36}"], [f"c{(5 * k + 2) % 36}"], [f"c{i}" for i in range(0, 36, 5)]):
            fast = backend.pixel_counts(scene, cam, names)
            frame = backend._frame(scene, cam)
            order = {n: i for i, n in enumerate(scene.actors)}
            drawn = [d for d, v in zip(frame.draws, frame.visible) if v and d.index in {order[n] for n in names}]
            rect, overlaps = B.wanted_rect(frame, drawn)
            if rect is not None:
                smaller += int(rect[2] * rect[3] < cam.width * cam.height)
                culled += int(np.sum(np.asarray(frame.visible) & ~overlaps) > 0)

            def whole(f, d, spheres=None):
                return ((0, 0, f.camera.width, f.camera.height) if d else None), np.ones(len(f.draws), dtype=bool)

            monkeypatch.setattr(B, "wanted_rect", whole)
            try:
                full = backend.pixel_counts(scene, cam, names)
            finally:
                monkeypatch.undo()
            assert fast == full, (k, names)
            seen += sum(c.visible > 0 for c in full.values())
            partly += sum(0 < c.visible < c.unoccluded for c in full.values())
    assert seen > 5 and partly > 0  # named actors were seen, some of them occluded
    assert smaller > 0 and culled > 0  # the block was smaller and actors were left out


def test_no_shadows_beyond_the_shadow_distance(backend, monkeypatch):
    """A 3 m box 75 m away (beyond SH.SHADOW_DISTANCE_CM) casts no shadow; 25 m away it does; with
    the distance pushed out, the far one does too (so the first equality can fail)."""
    cam = _camera(160, 120, location=(0.0, 0.0, 1500.0), rotation=Rotator(-14.0, 0.0, 0.0))  # 15 m up
    sun = Sun(pitch=30.0, yaw=90.0)  # shadows fall sideways, onto visible ground
    assert 3000.0 < SH.SHADOW_DISTANCE_CM * (1 - SH.FADE) and SH.SHADOW_DISTANCE_CM < 7500.0

    def wall_at(x):
        return _scene(_actor("box", "box", (x, 0.0, 150.0), 0, scale=(3, 3, 3)), ground=Ground(texture="flat"), sun=sun)

    def unshadowed(scene):
        monkeypatch.setattr(SH, "casters_in_view", lambda lvp, vp, c, r, size: np.zeros(len(c), dtype=bool))
        return _render(backend, scene, cam, True, monkeypatch)

    for x, shadowed in ((7500.0, False), (2500.0, True)):
        img = _render(backend, wall_at(x), cam, True, monkeypatch)
        assert np.array_equal(img, unshadowed(wall_at(x))) != shadowed, x
    shadows = backend._passes.shadows
    shadows.distance = 1.0e9
    try:
        far = _render(backend, wall_at(7500.0), cam, True, monkeypatch)
    finally:
        shadows.distance = SH.SHADOW_DISTANCE_CM
    assert not np.array_equal(far, unshadowed(wall_at(7500.0)))
