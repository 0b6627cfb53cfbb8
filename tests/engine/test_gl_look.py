"""The PBR look (issue 14): labels stay exact whatever the look, textures survive, look
parameters change only ``lit``, and the world sections validate. Expected values come from the
scene's construction (texture colours, hand geometry), never from the renderer."""

from __future__ import annotations


import numpy as np
import pytest

from sceneforge.core.errors import ConfigError
from sceneforge.core.meshes import Material, RenderMesh
from sceneforge.engine.server.gl.backend import GLBackend
from sceneforge.engine.world import Fog, Ground, Look, Rotator, Sky, Sun
from sceneforge.engine.world_dict import apply_world, world_from_dict, world_to_dict
from gl_scenes import MESHES, _actor, _camera, _scene, _three_objects

LABELS = ("instance_id", "depth", "object_mask", "normal")


def _textured_quad(albedo: np.ndarray, cutoff: float | None = None) -> RenderMesh:
    """A 200 x 200 cm vertical card facing -X (towards the camera), UVs spanning the texture."""
    v = np.array([[0, -100, 0], [0, 100, 0], [0, 100, 200], [0, -100, 200]], np.float32)
    uv = np.array([[0, 0], [1, 0], [1, 1], [0, 1]], np.float32)  # OpenGL: v = 1 is the top row
    f = np.array([[0, 1, 2], [0, 2, 3]], np.int32)
    mat = Material(name="tex", albedo=albedo, alpha_cutoff=cutoff, roughness=0.9)
    return RenderMesh(v, f, np.full((4, 3), 255, np.uint8), uvs=uv, materials=(mat,))


def _stripes() -> np.ndarray:
    """Vertical red / blue stripes (sRGB), 64 x 64: mean is purple, both halves distinct."""
    img = np.zeros((64, 64, 3), np.uint8)
    img[:, (np.arange(64) // 8) % 2 == 0] = (220, 40, 30)
    img[:, (np.arange(64) // 8) % 2 == 1] = (30, 60, 220)
    return img


def _cutout() -> np.ndarray:
    """RGBA: opaque green left half, transparent right half."""
    img = np.zeros((32, 32, 4), np.uint8)
    img[..., 1] = 200
    img[:, :16, 3] = 255
    return img


def _top_red() -> np.ndarray:
    img = np.zeros((16, 16, 3), np.uint8)
    img[:8] = (220, 40, 30)  # row 0 = top
    img[8:] = (30, 60, 220)
    return img


MESHES_LOOK = {
    **MESHES,
    "stripes": _textured_quad(_stripes()),
    "leaf": _textured_quad(_cutout(), cutoff=0.5),
    "top_red": _textured_quad(_top_red()),
}


class Content:
    """Stands in for the asset catalogue: one synthetic HDRI (warm horizon, dark top) and no surfaces."""

    def hdri(self, ident: str):
        if ident != "warm":
            raise KeyError(ident)
        v = np.linspace(0, 1, 64)[:, None, None]
        return np.broadcast_to(np.concatenate([1.5 - v, 0.8 - 0.5 * v, 0.2 + 0 * v], -1), (64, 128, 3)).astype(np.float32)

    def surface(self, ident: str):
        return None


@pytest.fixture(scope="module")
def look_backend():
    b = GLBackend(MESHES_LOOK.__getitem__, shadow_map_size=512, content=Content())
    yield b
    b.close()


def _labels(out: dict) -> dict:
    return {k: out[k] for k in LABELS if k in out}


def _assert_same_labels(a: dict, b: dict) -> None:
    for k in LABELS:
        if k in a:
            assert np.array_equal(a[k], b[k]), k


pytestmark = pytest.mark.render


def test_labels_identical_with_and_without_post_processing(look_backend):
    scene, cam = _three_objects(), _camera(128, 96, rotation=Rotator(-8.0, 0.0, 0.0))
    kinds = ("lit",) + LABELS
    on = look_backend.render(replace_look(scene, Look("pbr", fxaa=True)), cam, kinds)
    off = look_backend.render(replace_look(scene, Look("pbr", fxaa=False)), cam, kinds)
    _assert_same_labels(on, off)
    assert not np.array_equal(on["lit"], off["lit"])  # FXAA did smooth some edges
    diff = np.abs(on["lit"].astype(int) - off["lit"].astype(int)).max(-1)
    assert np.mean(diff > 0) < 0.25  # ... and only edges


def test_labels_identical_to_the_flat_look(look_backend):
    for ground in (Ground(), Ground(relief_amplitude=80.0, relief_wavelength=2500.0)):
        scene = _three_objects()
        scene.ground = ground
        scene.actors["leaf"] = _actor("leaf", "leaf", (900.0, -150.0, 0.0), 3)
        cam = _camera(128, 96, rotation=Rotator(-8.0, 10.0, 0.0))
        flat = look_backend.render(replace_look(scene, Look("flat")), cam, ("lit",) + LABELS)
        pbr = look_backend.render(replace_look(scene, Look("pbr")), cam, ("lit",) + LABELS)
        _assert_same_labels(flat, pbr)
        alone = look_backend.render(replace_look(scene, Look("pbr")), cam, ("instance_id", "depth"))  # id pass
        _assert_same_labels(alone, pbr)


def test_textured_mesh_keeps_its_texture(look_backend):
    grey_sky = Sky(zenith=(200, 200, 200), horizon=(200, 200, 200), ambient=0.35)
    scene = _scene(
        _actor("card", "stripes", (600.0, 0.0, 0.0), rotation=Rotator(0, 0, 0)),
        sun=Sun(pitch=30.0, yaw=180.0, color=(255, 255, 255)),
    )
    scene.sky = grey_sky
    cam = _camera(128, 128, location=(0.0, 0.0, 100.0))
    out = look_backend.render(scene, cam, ("lit", "instance_id"))
    region = out["lit"][out["instance_id"] == 1].astype(float)
    assert len(region) > 500
    reddish = region[:, 0] > region[:, 2] + 30
    bluish = region[:, 2] > region[:, 0] + 30
    assert 0.3 < reddish.mean() < 0.7 and 0.3 < bluish.mean() < 0.7  # both stripes, about half each
    tex = _stripes().reshape(-1, 3).astype(float)
    chroma = lambda c: c / c.sum()  # noqa: E731 - hue and saturation independent of tone mapping
    np.testing.assert_allclose(chroma(region.mean(0)), chroma(tex.mean(0)), atol=0.08)


def test_texture_row_zero_is_the_top(look_backend):
    scene = _scene(_actor("card", "top_red", (600.0, 0.0, 0.0)), sun=Sun(pitch=30.0, yaw=180.0))
    cam = _camera(64, 64, location=(0.0, 0.0, 100.0))
    out = look_backend.render(scene, cam, ("lit", "instance_id"))
    rows = np.nonzero((out["instance_id"] == 1).any(axis=1))[0]
    top = out["lit"][rows[:3]][out["instance_id"][rows[:3]] == 1].astype(float).mean(0)
    bottom = out["lit"][rows[-3:]][out["instance_id"][rows[-3:]] == 1].astype(float).mean(0)
    assert top[0] > top[2] + 40 and bottom[2] > bottom[0] + 40


def test_alpha_tested_card_is_cut_out_in_every_pass(look_backend):
    scene = _scene(_actor("leaf", "leaf", (600.0, 0.0, 0.0)))
    cam = _camera(128, 128, location=(0.0, 0.0, 100.0))
    out = look_backend.render(scene, cam, ("lit", "instance_id"))
    ids = out["instance_id"] == 1
    cols = np.nonzero(ids.any(axis=0))[0]
    centre = cam.project(np.array([[600.0, 0.0, 100.0]]))[0][0]
    assert ids.sum() > 200 and cols.max() < centre[0] + 1  # only the opaque left half (image left = -Y)
    only_ids = look_backend.render(scene, cam, ("instance_id",))["instance_id"] == 1
    assert np.array_equal(ids, only_ids)
    counts = look_backend.pixel_counts(scene, cam, ["leaf"])["leaf"]
    assert counts.visible == ids.sum() == counts.unoccluded


def test_look_parameters_change_lit_only(look_backend):
    base = _three_objects()
    cam = _camera(96, 72, rotation=Rotator(-5.0, 0.0, 0.0))
    kinds = ("lit",) + LABELS
    ref = look_backend.render(base, cam, kinds)
    variants = {
        "hdri": dict(sky=Sky(hdri="warm")),
        "hdri_rotated": dict(sky=Sky(hdri="warm", rotation_deg=90.0)),
        "exposure": dict(look=Look(exposure_ev=1.0)),
        "fog": dict(fog=Fog(density=3.0)),
        "sun": dict(sun=Sun(pitch=20.0, yaw=100.0)),
        "surface": dict(ground=Ground(surface="no_such_surface", texture="sand")),
    }
    for name, change in variants.items():
        scene = _three_objects()
        for k, v in change.items():
            setattr(scene, k, v)
        out = look_backend.render(scene, cam, kinds)
        _assert_same_labels(ref, out)
        assert np.mean(np.abs(out["lit"].astype(int) - ref["lit"].astype(int))) > 1.0, name
    bright = _three_objects()
    bright.look = Look(exposure_ev=1.0)
    assert look_backend.render(bright, cam, ("lit",))["lit"].mean() > ref["lit"].mean() + 5
    warm = _three_objects()
    warm.sky = Sky(hdri="warm")
    sky = ref["instance_id"] == 0
    sky &= ~np.isfinite(ref["depth"])
    w = look_backend.render(warm, cam, ("lit",))["lit"][sky].astype(float).mean(0)
    assert w[0] > w[2] + 20  # the HDRI's warm colours replaced the blue gradient


def test_pbr_frames_are_pure_functions_of_the_scene(look_backend):
    cam = _camera(96, 72)
    scene = _three_objects()
    scene.fog = Fog(density=1.0)
    first = look_backend.render(scene, cam, ("lit", "instance_id"))
    other = _three_objects()
    other.sky = Sky(hdri="warm")
    look_backend.render(other, _camera(64, 48), ("lit",))
    again = look_backend.render(scene, cam, ("lit", "instance_id"))
    assert np.array_equal(first["lit"], again["lit"]) and np.array_equal(first["instance_id"], again["instance_id"])


def replace_look(scene, look):
    scene.look = look
    return scene


# --- the world dict (no GL) ---------------------------------------------------------------------
def test_world_dict_round_trip_and_errors():
    w = world_from_dict({"env": "x", "sky": {"hdri": "park", "rotation_deg": 30}, "fog": {"density": 0.5}, "look": "flat"})
    assert w["sky"].hdri == "park" and w["sky"].rotation_deg == 30.0 and w["look"].style == "flat"
    assert w["fog"].density == 0.5 and w["sun"] == Sun()
    d = world_to_dict(w["env"], **{k: w[k] for k in ("sun", "sky", "ground", "fog", "look")})
    again = world_from_dict(d)
    assert all(again[k] == w[k] for k in w)
    for bad, msg in [
        ({"fog": {"density": "thick"}}, "world.fog.density"),
        ({"look": {"style": "cinematic"}}, "look.style"),
        ({"look": {"fxaa": 1}}, "world.look.fxaa"),
        ({"sky": {"hdri": 3}}, "world.sky.hdri"),
        ({"weather": {}}, "unknown field"),
    ]:
        with pytest.raises(ConfigError, match=msg):
            world_from_dict(bad)
    scene = _scene()
    apply_world(scene, {"fog": {"density": 1.0, "color": [200, 200, 210]}})
    assert scene.fog.color == (200, 200, 210) and scene.look == Look()


@pytest.mark.parametrize("eye", [(0.0, 0.0, 100.0), (-300.0, 250.0, 400.0), (100.0, -200.0, 30.0)])
def test_coverage_recorded_by_the_id_pass_equals_the_coverage_pass(look_backend, monkeypatch, eye):
    """Pixel counts with each named actor's coverage recorded by the id pass itself (an atomic OR
    before the depth test, gl/shaders.py IDS_COVER_FS) equal those of the two-pass way (the named
    actors drawn again alone): a cut-out card (its transparent half covers nothing) half hidden
    by a box, actors hiding each other, one sunk in relief ground (the ground hides part of it in
    ``visible``, not in ``unoccluded``), five names (more than a coverage pass's four)."""
    import sceneforge.engine.server.gl.backend as B
    from sceneforge.engine.world import look_at_rotation

    scene = _scene(
        _actor("leaf", "leaf", (900.0, 0.0, 0.0), 0),
        _actor("box", "box", (700.0, -60.0, 0.0), 1),
        _actor("sphere", "sphere", (1000.0, 120.0, -40.0), 2),
        _actor("cyl", "cyl", (800.0, 180.0, 0.0), 3),
        _actor("l", "lshape", (1100.0, -150.0, 0.0), 4),
        ground=Ground(texture="flat", relief_amplitude=60.0, relief_wavelength=700.0),
    )
    cam = _camera(160, 120, location=eye, rotation=look_at_rotation(eye, (900.0, 0.0, 60.0)))
    names = ["leaf", "box", "sphere", "cyl", "l"]
    one = look_backend.pixel_counts(scene, cam, names)
    monkeypatch.setattr(B, "COUNT_IN_ONE_PASS", False)
    two = look_backend.pixel_counts(scene, cam, names)
    assert one == two
    assert any(c.visible < c.unoccluded for c in one.values())  # some hidden: the bits ignore depth
    assert sum(c.unoccluded > 0 for c in one.values()) >= 4


def test_counts_fall_back_to_two_passes_without_image_atomics(look_backend, monkeypatch):
    """A GL without GLSL 4.50 image atomics (the counting id pass does not compile) counts with
    the separate coverage pass: same counts, decided once per context."""
    import moderngl

    import sceneforge.engine.server.gl.backend as B

    passes = look_backend._passes
    scene = _three_objects()
    cam = _camera(160, 120)
    names = [a for a in scene.actors]
    expected = look_backend.pixel_counts(scene, cam, names)
    real = type(passes).program

    def no_atomics(self, key):
        if "idcov" in key:
            raise moderngl.Error("GLSL 4.50 is not supported")
        return real(self, key)

    monkeypatch.setattr(type(passes), "program", no_atomics)
    monkeypatch.setattr(passes, "_one_pass", None)
    assert look_backend.pixel_counts(scene, cam, names) == expected and passes._one_pass is False
    monkeypatch.setattr(B, "COUNT_IN_ONE_PASS", False)
    assert look_backend.pixel_counts(scene, cam, names) == expected


def _four_cards() -> RenderMesh:
    """Four 100 x 200 cm cards side by side (Y -200..200), one material each: opaque red, opaque
    blue (rougher), the cut-out leaf texture, opaque green. Faces are sorted by material at
    upload, so its parts are: red, blue, leaf, green."""
    v, f, fm = [], [], []
    for k in range(4):
        y0, y1 = -200.0 + 100.0 * k, -100.0 + 100.0 * k
        base = len(v)
        v += [[0, y0, 0], [0, y1, 0], [0, y1, 200], [0, y0, 200]]
        f += [[base, base + 1, base + 2], [base, base + 2, base + 3]]
        fm += [k, k]
    uv = np.tile(np.array([[0, 0], [1, 0], [1, 1], [0, 1]], np.float32), (4, 1))
    solid = [np.full((4, 4, 3), c, np.uint8) for c in ((220, 40, 30), (30, 60, 220), (40, 200, 60))]
    mats = (
        Material(name="red", albedo=solid[0], roughness=0.5),
        Material(name="blue", albedo=solid[1], roughness=0.9),
        Material(name="leaf", albedo=_cutout(), alpha_cutoff=0.5, roughness=0.7),
        Material(name="green", albedo=solid[2], roughness=0.3),
    )
    return RenderMesh(
        np.array(v, np.float32),
        np.array(f, np.int32),
        np.full((16, 3), 255, np.uint8),
        uvs=uv,
        materials=mats,
        face_materials=np.array(fm, np.int32),
    )


def test_consecutive_opaque_parts_are_one_draw_with_the_same_pixels(monkeypatch):
    """``Passes.draw_mesh`` draws a mesh's consecutive opaque parts as one call
    (``GpuMesh.draw_runs``): the same triangles in the same order, so the same shadow map, ids,
    depth and coverage as one draw per part, byte for byte."""
    from sceneforge.engine.server.gl.resources import GpuMesh

    meshes = {**MESHES_LOOK, "cards": _four_cards()}
    scene = _scene(
        _actor("cards", "cards", (600.0, 0.0, 0.0), rotation=Rotator(0.0, 20.0, 0.0)),
        _actor("box", "box", (450.0, 150.0, 0.0), 1),
        sun=Sun(pitch=35.0, yaw=150.0),
    )
    cam = _camera(128, 96, location=(0.0, 0.0, 180.0), rotation=Rotator(-10.0, 0.0, 0.0))
    kinds = ("lit", "instance_id", "depth")

    def run():
        b = GLBackend(meshes.__getitem__, shadow_map_size=512, content=Content())
        try:
            out = b.render(scene, cam, kinds)
            counts = b.pixel_counts(scene, cam, ["cards", "box"])
            runs = b._mesh("cards").draw_runs()
        finally:
            b.close()
        return out, counts, runs

    merged, merged_counts, runs = run()
    assert [(c, p is not None) for _, c, p in runs] == [(12, False), (6, True), (6, False)]  # red+blue, leaf, green
    monkeypatch.setattr(
        GpuMesh, "draw_runs", lambda self: tuple((p.first, p.count, p if p.alpha_tested else None) for p in self.parts)
    )
    per_part, part_counts, _ = run()
    for k in kinds:
        assert np.array_equal(merged[k], per_part[k]), k
    assert merged_counts == part_counts and merged_counts["cards"].visible > 0
    ids = merged["instance_id"] == 1
    assert ids.any() and (merged["lit"][ids] > 0).any()
