"""Opt-in camera paths (orbit, follow, zoom, handheld shake): geometry, answer rules, the Klein
group of the four variants, and DSI's nine patterns left exactly as they were."""

from __future__ import annotations

import numpy as np
import pytest

from sceneforge.core.errors import ConfigError
from sceneforge.engine.world import Ground
from sceneforge.scenarios.videos import dsi
from sceneforge.scenarios.videos import motion as mo
from sceneforge.scenarios.videos.config import VideoConfig

FOV, W, H = 53.13, 224, 224
GROUND = Ground(relief_amplitude=80.0, relief_wavelength=2500.0)
STEADY, SHAKY = mo.MotionConfig(), mo.MotionConfig(shake_cm=1.5, shake_deg=0.4)
KINDS = ("obj", "cam", "dist", "dir")
# the record / identity keys before issue 38: DSI's nine patterns must keep exactly these
OLD_SPEC_KEYS = {
    "pattern",
    "n_frames",
    "fps",
    "anchor",
    "bearing_deg",
    "distance_cm",
    "height_cm",
    "cam_dir_deg",
    "cam_speed_cms",
    "cam_pan_dps",
    "obj_dir_deg",
    "obj_speed_cms",
    "obj_yaw_deg",
    "obj_turn_dps",
    "subject_size",
    "scale",
}
OLD_MOTION_KEYS = {
    "n_frames",
    "fps",
    "cam_distance_cm",
    "cam_height_cm",
    "cam_speed_cms",
    "cam_pan_dps",
    "obj_speed_cms",
    "obj_turn_dps",
    "dir_jitter_deg",
    "patterns",
}


def _clip(pattern: str, seed: int = 0, cfg: mo.MotionConfig = STEADY) -> mo.ClipMotion:
    spec = mo.sample_spec(np.random.default_rng(seed), cfg, pattern, (300.0, -200.0), (450.0, 200.0, 160.0))
    return mo.build_clip(spec, GROUND.height)


def test_extra_patterns_are_opt_in_and_the_nine_are_unchanged():
    assert len(mo.PATTERNS) == 9 and mo.MotionConfig().patterns == mo.PATTERNS
    assert set(mo.EXTRA_PATTERNS).isdisjoint(mo.PATTERNS)
    assert mo.parse_pattern("cam_orbit-obj_rotate") == ("orbit", "rotate")
    with pytest.raises(ConfigError, match="cam_follow-obj_static"):
        mo.parse_pattern("cam_follow-obj_static")  # nothing to follow


@pytest.mark.parametrize("pattern", mo.PATTERNS)
def test_dsi_patterns_draw_and_record_what_they_did_before(pattern):
    """Same draws, same record keys (byte-identical clips): the extras draw nothing here."""
    rng_a, rng_b = np.random.default_rng(4), np.random.default_rng(4)
    spec = mo.sample_spec(rng_a, mo.MotionConfig(), pattern, (0.0, 0.0), (400.0, 200.0, 150.0))
    assert set(spec.to_dict()) == OLD_SPEC_KEYS
    assert mo.build_clip(spec, GROUND.height).zoom is None
    mo.sample_spec(rng_b, mo.MotionConfig(), pattern, (0.0, 0.0), (400.0, 200.0, 150.0))
    assert rng_a.random() == rng_b.random()
    cfg = VideoConfig.from_dict({"env": "city", "n": 2})
    norm = cfg.normalised()
    assert set(norm["motion"]) == OLD_MOTION_KEYS and "ground_truth" not in norm and "distractors" not in norm


def test_opt_in_fields_enter_the_identity_only_when_set():
    base = VideoConfig.from_dict({"env": "city", "n": 2})
    for extra in (
        {"distractors": 1},
        {"ground_truth": ["masks"]},
        {"motion": {"shake_cm": 1.0}},
        {"motion": {"zoom_ratio": [1.5, 2.0]}},
    ):
        assert VideoConfig.from_dict({"env": "city", "n": 2, **extra}).normalised() != base.normalised()


@pytest.mark.parametrize(
    "bad, match",
    [
        ({"motion": {"shake_cm": 2.0}}, "shake_cm"),
        ({"motion": {"shake_deg": -0.1}}, "shake_deg"),
        ({"motion": {"zoom_ratio": [0.8, 1.2]}}, "zoom_ratio"),
        ({"distractors": 9}, "distractors"),
        ({"distractors": True}, "distractors"),
        ({"ground_truth": ["optical_flow"]}, "ground_truth"),
    ],
)
def test_bad_opt_in_fields_name_the_field(bad, match):
    with pytest.raises(ConfigError, match=match):
        VideoConfig.from_dict({"env": "city", "n": 2, **bad})


@pytest.mark.parametrize("seed", range(4))
def test_orbit_circles_the_subject_and_keeps_facing_it(seed):
    c = _clip("cam_orbit-obj_static", seed)
    r = np.linalg.norm(c.camera.location[:, :2] - c.subject.location[0, :2], axis=1)
    assert np.allclose(r, r[0])
    assert np.abs(mo.bearings(c)).max() < 0.5  # dead ahead every frame
    arc = abs(c.camera.yaw[-1] - c.camera.yaw[0])
    assert 4.0 * 15 / 8 - 1e-9 <= arc <= 10.0 * 15 / 8 + 1e-9  # cam_orbit_dps x duration


def test_follow_moves_the_camera_with_the_subject_without_turning():
    c = _clip("cam_follow-obj_translate", 2)
    cam_d = c.camera.location[:, :2] - c.camera.location[0, :2]
    obj_d = c.subject.location[:, :2] - c.subject.location[0, :2]
    assert np.allclose(cam_d, obj_d) and np.ptp(c.camera.yaw) == 0.0 and np.linalg.norm(obj_d[-1]) > 40


def test_zoom_changes_only_the_focal_length_and_reverses_with_time():
    c = _clip("cam_zoom-obj_static", 1)
    assert np.ptp(c.camera.location, axis=0).max() == 0.0 and np.ptp(c.camera.yaw) == 0.0
    f = [mo.camera_at(c, t, FOV, W, H).focal_px for t in range(c.n_frames)]
    f0 = mo.camera_at(c, 0, FOV, W, H).focal_px
    assert f[0] == pytest.approx(W / 2 / np.tan(np.radians(FOV / 2)))
    assert f[-1] / f0 == pytest.approx(c.spec.zoom_ratio) and np.allclose(np.diff(np.log(f)), np.log(f[1] / f[0]))
    assert np.allclose(mo.reverse_motion(c).zoom, c.zoom[::-1]) and np.allclose(mo.hflip_motion(c).zoom, c.zoom)


def test_shake_is_small_seeded_and_smooth():
    still = _clip("cam_static-obj_static", 3)
    a, b = _clip("cam_static-obj_static", 3, SHAKY), _clip("cam_static-obj_static", 3, SHAKY)
    assert a.allclose(b, atol=0.0) and not a.allclose(still)
    d = a.camera.location - still.camera.location
    assert np.abs(d).max() <= 1.5 + 1e-9 and np.abs(a.camera.yaw - still.camera.yaw).max() <= 0.4 + 1e-9
    step = 2 * np.pi * 1.5 / a.fps * 1.5  # band-limited: |dx/dt| <= 2 pi f_max amplitude
    assert np.abs(np.diff(d, axis=0)).max() <= step
    assert dsi.camera_answer(a) == "cam_static"


@pytest.mark.parametrize("pattern", mo.EXTRA_PATTERNS)
@pytest.mark.parametrize("cfg", [STEADY, SHAKY], ids=["steady", "shaky"])
def test_klein_group_holds_for_the_new_paths(pattern, cfg):
    """Every asked answer of every variant equals the label table applied to std (so each
    variant's GT is exact), excluded kinds are never asked, and most clips are askable."""
    cam_mode = mo.parse_pattern(pattern)[0]
    asked = 0
    for seed in range(40):
        c = _clip(pattern, seed, cfg)
        qs, skipped = dsi.make_questions(c, "taxi", np.random.default_rng(seed))
        for kind in dsi.EXCLUDED_KINDS.get(cam_mode, ()):
            assert kind in skipped and all(q.kind != kind for q in qs)
        for q in qs:
            assert all(q.answers[a] == dsi.transform_answer(q.answers["std"], a) for a in dsi.AUGS)
            assert all(q.answers[a] in q.options for a in dsi.AUGS)
            asked += 1
    assert asked >= 40 * (len(KINDS) - len(dsi.EXCLUDED_KINDS.get(cam_mode, ()))) * 0.6


@pytest.mark.parametrize(
    "pattern, expected",
    [
        ("cam_orbit-obj_static", {"obj": "obj_static", "dist": "dist_flat", "dir": "dir_flat"}),
        ("cam_zoom-obj_static", {"obj": "obj_static", "dist": "dist_flat", "dir": "dir_flat"}),
    ],
)
def test_answer_rules_of_the_conflation_traps(pattern, expected):
    """An orbit sweeps the background, a zoom grows the subject: neither moves it or its distance."""
    for seed in range(5):
        c = _clip(pattern, seed)
        assert {k: dsi.variant_answers(c, k)["std"] for k in expected} == expected


def test_follow_answers_camera_and_subject_alike_with_a_flat_view():
    for seed in range(8):
        c = _clip("cam_follow-obj_translate", seed)
        obj, cam = dsi.object_answer(c), dsi.camera_answer(c)
        if obj is None:
            continue
        same = {"obj_away": "cam_forward", "obj_toward": "cam_backward", "obj_left": "cam_left", "obj_right": "cam_right"}
        assert same[obj] == cam and dsi.orientation_answer(c) == "dir_flat"
    qs, _ = dsi.make_questions(_clip("cam_follow-obj_translate", 0), "taxi", np.random.default_rng(0))
    assert {q.kind: q.cate for q in qs}["obj"] == 1 and {q.kind: q.cate for q in qs}["cam"] == 3


@pytest.mark.parametrize("pattern", mo.EXTRA_PATTERNS)
def test_mirrored_world_projects_to_flipped_pixels_on_new_paths(pattern):
    c = _clip(pattern, 4, SHAKY)
    m = mo.hflip_motion(c)
    origin, plane_yaw = mo.mirror_plane(c)
    pts = np.random.default_rng(0).uniform(-800, 800, (50, 3)) + c.subject.location[0]
    for t in range(c.n_frames):
        uv, d = mo.camera_at(c, t, FOV, W, H).project(pts)
        uv2, d2 = mo.camera_at(m, t, FOV, W, H).project(mo.mirror_points(pts, origin, plane_yaw))
        assert np.allclose(d, d2) and np.allclose(uv2[:, 0], W - uv[:, 0]) and np.allclose(uv2[:, 1], uv[:, 1])


def test_orbit_keep_out_follows_the_arc():
    c = _clip("cam_orbit-obj_static", 0)
    circles = mo.keep_out(c)
    for p in c.camera.location[:, :2]:
        assert any(np.hypot(p[0] - x, p[1] - y) + 50 <= r for x, y, r in circles)
