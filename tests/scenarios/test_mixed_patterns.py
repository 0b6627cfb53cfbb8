"""Opt-in mixed patterns (subject translates and turns; camera translates and pans): geometry,
answer rules written by hand and derived from the sampled scalars, the Klein group of the four
variants, and DSI's nine patterns left exactly as they were."""

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
T, FPS = 16, 8.0


def _clip(pattern: str, seed: int = 0, cfg: mo.MotionConfig = STEADY) -> mo.ClipMotion:
    spec = mo.sample_spec(np.random.default_rng(seed), cfg, pattern, (300.0, -200.0), (450.0, 200.0, 160.0))
    return mo.build_clip(spec, GROUND.height)


def _lin(a, b) -> np.ndarray:
    return np.linspace(np.asarray(a, float), np.asarray(b, float), T)


def _hand(
    pattern, cam=((0, 0, 200), (0, 0, 200)), cam_yaw=(0, 0), obj=((1000, 0, 0), (1000, 0, 0)), obj_yaw=(0, 0)
) -> mo.ClipMotion:
    camera = mo.Track(_lin(*cam), _lin(*cam_yaw), np.full(T, -5.0))
    subject = mo.Track(_lin(*obj), _lin(*obj_yaw), np.zeros(T))
    return mo.ClipMotion(pattern, FPS, camera, subject, (400.0, 200.0, 150.0))


def test_mixed_patterns_are_opt_in_and_flagged():
    assert mo.MotionConfig().patterns == mo.PATTERNS and set(mo.MIXED_PATTERNS).isdisjoint(mo.PATTERNS + mo.EXTRA_PATTERNS)
    assert all("mixed" in p for p in mo.MIXED_PATTERNS) and len(set(mo.MIXED_PATTERNS)) == 8
    assert mo.parse_pattern("cam_mixed-obj_mixed") == ("mixed", "mixed")
    assert dsi.card_tables(mo.PATTERNS + mo.EXTRA_PATTERNS) == {}  # DSI's cards keep their keys
    assert set(dsi.card_tables(("cam_static-obj_mixed",))) == {"mixed_answer_spaces", "mixed_label_transforms"}
    base = VideoConfig.from_dict({"env": "city", "n": 2}).normalised()
    assert "obj_arc_dps" not in base["motion"]
    arc = VideoConfig.from_dict({"env": "city", "n": 2, "motion": {"obj_arc_dps": [20, 30]}}).normalised()
    assert arc["motion"]["obj_arc_dps"] == [20.0, 30.0]
    with pytest.raises(ConfigError, match="obj_arc_dps"):
        mo.MotionConfig(obj_arc_dps=(0.0, 10.0))


@pytest.mark.parametrize("seed", range(4))
def test_mixed_subject_drives_an_arc_facing_its_path(seed):
    c = _clip("cam_static-obj_mixed", seed)
    spec = c.spec
    step = np.diff(c.subject.location[:, :2], axis=0)
    assert np.allclose(
        np.linalg.norm(step, axis=1),
        2 * spec.obj_speed_cms / np.radians(spec.obj_turn_dps) * np.sin(np.radians(spec.obj_turn_dps) / FPS / 2),
    )  # chord of a constant-speed arc
    assert np.allclose(np.diff(c.subject.yaw), spec.obj_turn_dps / FPS)
    mid = (c.subject.yaw[1:] + c.subject.yaw[:-1]) / 2  # faces along the arc
    assert np.allclose(np.degrees(np.arctan2(step[:, 1], step[:, 0])), mo.wrap_deg(mid), atol=1e-6)
    assert 15 <= abs(spec.obj_turn_dps) <= 35 and np.ptp(c.camera.location, axis=0).max() == 0


@pytest.mark.parametrize("seed", range(4))
def test_mixed_camera_dollies_and_pans_at_constant_rates(seed):
    c = _clip("cam_mixed-obj_static", seed)
    assert np.allclose(np.diff(c.camera.location, axis=0), c.camera.location[1] - c.camera.location[0])
    assert np.linalg.norm(c.camera.location[-1] - c.camera.location[0]) > 40
    assert np.allclose(np.diff(c.camera.yaw), c.spec.cam_pan_dps / FPS) and 5 <= abs(c.spec.cam_pan_dps) <= 11
    assert np.ptp(c.subject.location, axis=0).max() == 0 and np.ptp(c.subject.yaw) == 0


# (clip, kind, {aug: expected}) — written by hand from the geometry (camera at the origin facing +X)
CASES = {
    "subject drives right (+Y) turning clockwise": (
        _hand("cam_static-obj_mixed", obj=((1000, -200, 0), (1000, 200, 0)), obj_yaw=(60, 120)),
        "obj",
        {"std": "obj_right_cw", "hflip": "obj_left_ccw", "reverse": "obj_left_ccw", "reverse_hflip": "obj_right_cw"},
    ),
    "subject drives away turning counter-clockwise, camera trucking": (
        _hand(
            "cam_translate-obj_mixed", cam=((0, -100, 200), (0, 100, 200)), obj=((1000, 0, 0), (1500, 50, 0)), obj_yaw=(20, -30)
        ),
        "obj",
        {"std": "obj_away_ccw", "hflip": "obj_away_cw", "reverse": "obj_toward_cw", "reverse_hflip": "obj_toward_ccw"},
    ),
    "camera dollies forward panning right": (
        _hand("cam_mixed-obj_static", cam=((0, 0, 200), (300, 0, 200)), cam_yaw=(-10, 10)),
        "cam",
        {
            "std": "cam_forward_pan_right",
            "hflip": "cam_forward_pan_left",
            "reverse": "cam_backward_pan_left",
            "reverse_hflip": "cam_backward_pan_right",
        },
    ),
    "camera trucks left panning left": (
        _hand("cam_mixed-obj_mixed", cam=((0, 0, 200), (0, -300, 200)), cam_yaw=(0, -15)),
        "cam",
        {
            "std": "cam_left_pan_left",
            "hflip": "cam_right_pan_right",
            "reverse": "cam_right_pan_right",
            "reverse_hflip": "cam_left_pan_left",
        },
    ),
    "a mixed camera's subject question keeps DSI's rule": (
        _hand("cam_mixed-obj_rotate", cam=((0, 0, 200), (300, 0, 200)), cam_yaw=(-10, 10), obj_yaw=(0, 90)),
        "obj",
        {"std": "obj_cw", "hflip": "obj_ccw", "reverse": "obj_ccw", "reverse_hflip": "obj_cw"},
    ),
    "a mixed subject's camera question keeps DSI's rule": (
        _hand("cam_static-obj_mixed", obj=((1000, -200, 0), (1000, 200, 0)), obj_yaw=(60, 120)),
        "cam",
        {a: "cam_static" for a in dsi.AUGS},
    ),
    "a mixed subject that barely turns is not asked": (
        _hand("cam_static-obj_mixed", obj=((1000, -200, 0), (1000, 200, 0)), obj_yaw=(90, 95)),
        "obj",
        {a: None for a in dsi.AUGS},
    ),
}


@pytest.mark.parametrize("name", list(CASES))
def test_mixed_answers_on_hand_built_trajectories(name):
    c, kind, expected = CASES[name]
    assert dsi.variant_answers(c, kind) == expected


def test_dsi_rule_cannot_name_a_mixed_motion():
    """The same arc under a DSI pattern name has no DSI answer: that is why the mixed space exists."""
    c, _, _ = CASES["subject drives right (+Y) turning clockwise"]
    assert dsi.object_answer(mo.ClipMotion("cam_static-obj_translate", FPS, c.camera, c.subject, c.subject_size)) is None


def _expected_from_spec(c: mo.ClipMotion, kind: str) -> str:
    """The answer derived from the sampled scalars alone (not from the trajectories): an arc's
    chord points along its mean heading; a dolly's direction is ``cam_dir_deg``."""
    s, dur = c.spec, (c.n_frames - 1) / c.fps
    near = lambda ang, dirs: min(dirs, key=lambda k: abs(mo.wrap_deg(ang - dirs[k])))  # noqa: E731
    if kind == "obj":
        chord = s.obj_dir_deg + s.obj_turn_dps * dur / 2
        return f"obj_{near(chord, mo.OBJ_DIRS)}_{'cw' if s.obj_turn_dps > 0 else 'ccw'}"
    return f"cam_{near(s.cam_dir_deg, mo.CAM_DIRS)}_pan_{'right' if s.cam_pan_dps > 0 else 'left'}"


@pytest.mark.parametrize(
    "pattern", ["cam_static-obj_mixed", "cam_rotate-obj_mixed", "cam_mixed-obj_static", "cam_mixed-obj_mixed"]
)
def test_mixed_answers_equal_the_sampled_geometry(pattern):
    cam_mode, obj_mode = mo.parse_pattern(pattern)
    checked = 0
    for seed in range(30):
        c = _clip(pattern, seed)
        for kind, mode in (("obj", obj_mode), ("cam", cam_mode)):
            ans = dsi.variant_answers(c, kind)
            if mode == "mixed" and ans["std"] is not None:
                assert ans["std"] == _expected_from_spec(c, kind), (seed, kind)
                checked += 1
    assert checked >= 25 * (1 + (cam_mode == obj_mode))


@pytest.mark.parametrize("pattern", mo.MIXED_PATTERNS)
@pytest.mark.parametrize("cfg", [STEADY, SHAKY], ids=["steady", "shaky"])
def test_klein_group_holds_for_the_mixed_patterns(pattern, cfg):
    """Every asked answer of every variant equals the label table applied to std, every
    variant's answer is among the options (all from one space), and most clips are askable."""
    asked, mixed_asked = 0, 0
    for seed in range(40):
        c = _clip(pattern, seed, cfg)
        qs, skipped = dsi.make_questions(c, "taxi", np.random.default_rng(seed))
        for q in qs:
            assert all(q.answers[a] == dsi.transform_answer(q.answers["std"], a) for a in dsi.AUGS)
            assert all(q.answers[a] in q.options for a in dsi.AUGS) and len(set(q.options)) == 4
            space = dsi.space_of(q.kind, q.answers["std"])
            assert all(o in space for o in q.options)
            mixed_asked += q.answers["std"] in dsi.MIXED_PARTS
            asked += 1
        excluded = set(dsi.EXCLUDED_KINDS.get(mo.parse_pattern(pattern)[0], ()))
        assert {"obj", "cam"} & set(skipped) == excluded  # DSI's kinds all askable here, but a zoom's camera
    n_kinds = 4 - len(dsi.EXCLUDED_KINDS.get(mo.parse_pattern(pattern)[0], ()))
    assert asked >= 40 * n_kinds * 0.6 and mixed_asked >= 40 * pattern.count("mixed") * 0.95


def test_mixed_label_maps_are_involutions_that_commute_and_stay_in_their_space():
    for k in dsi.MIXED_PARTS:
        for aug in ("hflip", "reverse", "reverse_hflip"):
            assert dsi.transform_answer(dsi.transform_answer(k, aug), aug) == k
        assert dsi.transform_answer(dsi.transform_answer(k, "hflip"), "reverse") == dsi.transform_answer(k, "reverse_hflip")
        assert dsi.transform_answer(dsi.transform_answer(k, "reverse"), "hflip") == dsi.transform_answer(k, "reverse_hflip")
        assert all(dsi.transform_answer(k, a) in dsi.space_of(k[:3], k) for a in dsi.AUGS)
    assert dsi.transform_answer("obj_left_cw", "hflip") == "obj_right_ccw"
    assert dsi.transform_answer("cam_forward_pan_left", "reverse") == "cam_backward_pan_right"


def test_mixed_options_text_and_csv_rows():
    c = _clip("cam_mixed-obj_mixed", 1)
    qs, _ = dsi.make_questions(c, "taxi", np.random.default_rng(0))
    obj = next(q for q in qs if q.kind == "obj")
    assert obj.cate == 1 and "while turning" in obj.options_text() and obj.options_text().startswith("A. It moves")
    rows = {aug: dsi.csv_rows("x.mp4", [obj], aug)[0] for aug in dsi.AUGS}
    for aug, r in rows.items():
        assert obj.options["ABCD".index(r["GT"])] == obj.answers[aug]


@pytest.mark.parametrize("pattern", mo.MIXED_PATTERNS)
def test_mirrored_world_projects_to_flipped_pixels_on_mixed_paths(pattern):
    c = _clip(pattern, 4, SHAKY)
    m = mo.hflip_motion(c)
    origin, plane_yaw = mo.mirror_plane(c)
    pts = np.random.default_rng(0).uniform(-800, 800, (50, 3)) + c.subject.location[0]
    for t in range(c.n_frames):
        uv, d = mo.camera_at(c, t, FOV, W, H).project(pts)
        uv2, d2 = mo.camera_at(m, t, FOV, W, H).project(mo.mirror_points(pts, origin, plane_yaw))
        assert np.allclose(d, d2) and np.allclose(uv2[:, 0], W - uv[:, 0]) and np.allclose(uv2[:, 1], uv[:, 1])


def test_arc_keep_out_follows_the_curve():
    c = _clip("cam_static-obj_mixed", 0)
    circles = mo.keep_out(c)
    for p in c.subject.location[:, :2]:
        assert any(np.hypot(p[0] - x, p[1] - y) + 150 <= r for x, y, r in circles)
