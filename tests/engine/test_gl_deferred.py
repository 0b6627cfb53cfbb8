"""GLBackend.render_deferred: a ``lit`` frame submitted now and finished later (post-processing
and read-back) must be the image ``render`` gives, byte for byte, whatever the server ran in
between: pixel counts of other views (which leave the colour target alone), renders of other
kinds and resolutions (which finish the pending frame first), scene edits. Expected images come
from ``render`` on a fresh backend, never from the deferred path."""
from __future__ import annotations

import numpy as np
import pytest

from core.errors import RenderError
from engine.server.gl import passes as P
from engine.server.gl.backend import GLBackend
from engine.world import Look, Sun, look_at_rotation
from gl_scenes import MESHES, _actor, _camera, _scene

pytestmark = pytest.mark.render


def _street(look: Look | None = None):
    return _scene(_actor("a", "box", (900.0, -150.0, 0.0), 0), _actor("b", "sphere", (700.0, 200.0, 0.0), 1),
                  _actor("c", "wall", (1300.0, 0.0, 0.0), 2), _actor("d", "cyl", (600.0, -20.0, 0.0), 3),
                  sun=Sun(pitch=35.0, yaw=130.0), look=look)


def _cams(size=(160, 120)):
    out = []
    for eye, aim in [((0.0, 0.0, 160.0), (900.0, 0.0, 60.0)), ((100.0, -400.0, 220.0), (800.0, 0.0, 50.0)),
                     ((-200.0, 300.0, 120.0), (900.0, -100.0, 80.0))]:
        out.append(_camera(*size, location=eye, rotation=look_at_rotation(eye, aim)))
    return out


@pytest.fixture()
def fresh():
    b = GLBackend(MESHES.__getitem__, shadow_map_size=1024)
    yield b
    b.close()


@pytest.mark.parametrize("look", [Look(), Look(fxaa=False), Look(style="flat")], ids=["pbr-fxaa", "pbr", "flat"])
def test_deferred_lit_is_the_rendered_image_with_counts_and_edits_in_between(fresh, look):
    scene = _street(look)
    cams = _cams()
    reference = GLBackend(MESHES.__getitem__, shadow_map_size=1024)
    try:
        want = [reference.render(scene, c, ("lit",))["lit"] for c in cams]
    finally:
        reference.close()
    finishes = []
    for k, cam in enumerate(cams):
        finishes.append(fresh.render_deferred(scene, cam, ("lit",)))
        assert fresh._pending is not None          # submitted, not finished
        other = cams[(k + 1) % len(cams)]
        counts = fresh.pixel_counts(scene, other, ["a", "b", "c"])   # the server's next view
        assert fresh._pending is not None          # one-pass counts leave the colour alone
        assert counts["a"].unoccluded > 0
        got = finishes[-1]()["lit"]
        assert got.dtype == np.uint8 and got.shape == (120, 160, 3)
        assert np.array_equal(got, want[k]), f"view {k}: deferred image differs from render()"
    assert fresh._pending is None


def test_a_render_of_other_kinds_or_sizes_finishes_the_pending_frame_first(fresh):
    scene = _street()
    cam, other = _cams()[:2]
    small = _cams((96, 72))[1]
    reference = GLBackend(MESHES.__getitem__, shadow_map_size=1024)
    try:
        want = reference.render(scene, cam, ("lit",))["lit"]
        want_mask = reference.render(scene, other, ("object_mask",))["object_mask"]
    finally:
        reference.close()
    finish = fresh.render_deferred(scene, cam, ("lit",))
    mask = fresh.render(scene, other, ("object_mask", "depth"))["object_mask"]   # settles the pending frame
    assert fresh._pending is None
    assert np.array_equal(mask, want_mask)
    fresh.pixel_counts(scene, small, ["a"])
    assert np.array_equal(finish()["lit"], want)
    # pixel counts at another resolution may evict the pending frame's target: they finish it first
    finish = fresh.render_deferred(scene, cam, ("lit",))
    fresh.pixel_counts(scene, small, ["a", "b"])
    assert fresh._pending is None
    assert np.array_equal(finish()["lit"], want)
    # a second deferred frame finishes the first before drawing over its colour
    first = fresh.render_deferred(scene, cam, ("lit",))
    second = fresh.render_deferred(scene, other, ("lit",))
    assert np.array_equal(first()["lit"], want)
    assert not np.array_equal(second()["lit"], want)


def test_other_kinds_are_rendered_at_once(fresh):
    scene, cam = _street(), _cams()[0]
    finish = fresh.render_deferred(scene, cam, ("lit", "object_mask"))
    assert fresh._pending is None
    out = finish()
    assert set(out) == {"lit", "object_mask"}


def test_a_failed_finish_is_reported_to_its_own_caller_only(fresh, monkeypatch):
    scene, cam = _street(), _cams()[0]
    want = fresh.render(scene, cam, ("lit",))["lit"]
    finish = fresh.render_deferred(scene, cam, ("lit",))

    def broken(self, frame, post):
        raise __import__("moderngl").Error("simulated driver failure")
    monkeypatch.setattr(P.Passes, "post_pass", broken)
    counts = fresh.pixel_counts(scene, _cams((96, 72))[0], ["a"])   # settles it: the failure is kept
    assert set(counts) == {"a"}
    monkeypatch.undo()
    with pytest.raises(RenderError, match="simulated driver failure"):
        finish()
    assert np.array_equal(fresh.render(scene, cam, ("lit",))["lit"], want)   # the backend goes on


def test_closing_finishes_the_pending_frame_for_its_caller():
    scene, cam = _street(), _cams()[0]
    b = GLBackend(MESHES.__getitem__, shadow_map_size=1024)
    want = b.render(scene, cam, ("lit",))["lit"]
    finish = b.render_deferred(scene, cam, ("lit",))
    b.close()
    assert np.array_equal(finish()["lit"], want)
    with pytest.raises(RenderError, match="closed"):
        b.render_deferred(scene, cam, ("lit",))
