"""Flat faces left out of the sun's shadow map (engine/server/gl/casters.py casting_faces):
faces wholly within FLAT_CASTER_CM of an upright mesh's bottom cast no shadow anyone sees, so the
image is the same without them. The reference image draws every face (the rule switched off)."""

from __future__ import annotations

import numpy as np
import pytest
import trimesh

from sceneforge.engine.server.gl import shadow as SH
from sceneforge.engine.server.gl.casters import FLAT_CASTER_CM, casting_faces
from sceneforge.engine.world import Ground, Rotator, Sun, look_at_rotation
from gl_scenes import MESHES, _actor, _camera, _render_mesh, _scene


def _street() -> trimesh.Trimesh:
    """A 20 m paved slab 2 cm thick with a 12 cm kerb along one side (as proc_street_crossing)."""
    slab = trimesh.creation.box(extents=(2000, 2000, 2))
    slab.apply_translation((0, 0, 1))
    kerb = trimesh.creation.box(extents=(2000, 15, 12))
    kerb.apply_translation((0, 300, 6))
    return trimesh.util.concatenate([slab, kerb])


MESHES.setdefault("street", _render_mesh(_street(), (90, 90, 95)))
MESHES.setdefault("paint", _render_mesh(trimesh.creation.box(extents=(400, 400, 1)), (230, 230, 225)))


def test_casting_faces_keeps_what_rises_above_the_flat_band():
    m = MESHES["street"]
    keep = casting_faces(m.vertices, m.faces)
    tops = m.vertices[m.faces][:, :, 2].max(axis=1)
    assert np.array_equal(keep, tops > FLAT_CASTER_CM)  # the slab's faces out, the kerb's in
    assert 0 < keep.sum() < len(keep)
    paint = MESHES["paint"]
    assert not casting_faces(paint.vertices, paint.faces).any()  # a wholly flat mesh casts nothing
    assert casting_faces(MESHES["box"].vertices, MESHES["box"].faces).sum() == 10  # a box: all but its bottom


@pytest.mark.render
@pytest.mark.parametrize("pitch,yaw", [(30.0, 20.0), (55.0, -120.0)])
def test_flat_faces_left_out_give_the_same_image(backend, monkeypatch, pitch, yaw):
    scene = _scene(
        _actor("street", "street", (1200.0, 0.0, 0.0), 0),
        _actor("paint", "paint", (900.0, -300.0, 2.0), 1, rotation=Rotator(0.0, 30.0, 0.0)),
        _actor("box", "box", (1300.0, -200.0, 2.0), 2),
        _actor("cyl", "cyl", (1000.0, 250.0, 2.0), 3),
        ground=Ground(texture="flat"),
        sun=Sun(pitch=pitch, yaw=yaw),
    )
    eye = (300.0, 100.0, 260.0)
    cam = _camera(192, 144, location=eye, rotation=look_at_rotation(eye, (1200.0, 0.0, 0.0)))
    backend._passes.shadows.forget()
    fast = backend.render(scene, cam, ("lit",))["lit"]  # also: a wholly flat mesh draws no shadow faces
    monkeypatch.setattr(SH, "upright", lambda model: False)  # the reference: every face casts
    backend._passes.shadows.forget()
    full = backend.render(scene, cam, ("lit",))["lit"]
    monkeypatch.undo()
    assert np.array_equal(full, fast), f"{np.mean(np.any(full != fast, axis=-1)):.3%} of pixels differ"
    # power: the kerb's and the box's shadows are in the image (dropping every caster changes it)
    monkeypatch.setattr(SH, "casters_in_view", lambda lvp, vp, c, r, size: np.zeros(len(c), dtype=bool))
    backend._passes.shadows.forget()
    none = backend.render(scene, cam, ("lit",))["lit"]
    monkeypatch.undo()
    backend._passes.shadows.forget()
    assert not np.array_equal(none, fast)


def test_upright_means_z_kept_up_and_not_stretched():
    from sceneforge.engine.server.gl import frame as F
    from sceneforge.engine.world import Transform

    assert SH.upright(F.placed(Transform((5, 6, 0), Rotator(0.0, 77.0, 0.0))).model)
    assert SH.upright(F.placed(Transform((0, 0, 0), Rotator(0.0, 10.0, 0.0), (2.0, 2.0, 0.5))).model)
    assert not SH.upright(F.placed(Transform((0, 0, 0), Rotator(5.0, 0.0, 0.0))).model)  # pitched
    assert not SH.upright(F.placed(Transform((0, 0, 0), Rotator(0.0, 0.0, 90.0))).model)  # rolled
    assert not SH.upright(F.placed(Transform((0, 0, 0), Rotator(), (1.0, 1.0, 3.0))).model)  # z stretched
