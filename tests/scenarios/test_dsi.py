"""DSI questions: answers on hand-built trajectories, label transforms, options, CSV layout."""

from __future__ import annotations

import io

import numpy as np
import pandas as pd
import pytest

from sceneforge.engine.world import Ground
from sceneforge.scenarios.videos import dsi
from sceneforge.scenarios.videos import motion as mo

T, FPS = 16, 8.0
SIZE = (400.0, 200.0, 150.0)


def _lin(a, b) -> np.ndarray:
    return np.linspace(np.asarray(a, float), np.asarray(b, float), T)


def clip(
    pattern, cam=((0, 0, 200), (0, 0, 200)), cam_yaw=(0, 0), obj=((1000, 0, 0), (1000, 0, 0)), obj_yaw=(0, 0)
) -> mo.ClipMotion:
    """A hand-built clip: linear interpolation between start and end poses."""
    camera = mo.Track(_lin(*cam), _lin(*cam_yaw), np.full(T, -5.0))
    subject = mo.Track(_lin(*obj), _lin(*obj_yaw), np.zeros(T))
    return mo.ClipMotion(pattern, FPS, camera, subject, SIZE)


# (clip, kind, {aug: expected answer}) — expectations written by hand from the geometry.
CASES = {
    "subject drives right (+Y), static camera": (
        clip("cam_static-obj_translate", obj=((1000, -200, 0), (1000, 200, 0))),
        "obj",
        {"std": "obj_right", "hflip": "obj_left", "reverse": "obj_left", "reverse_hflip": "obj_right"},
    ),
    "subject drives toward the camera": (
        clip("cam_static-obj_translate", obj=((1500, 0, 0), (1000, 0, 0))),
        "obj",
        {"std": "obj_toward", "hflip": "obj_toward", "reverse": "obj_away", "reverse_hflip": "obj_away"},
    ),
    "camera looks along +Y, subject drives +X = camera's left": (
        clip("cam_static-obj_translate", cam_yaw=(90, 90), obj=((-200, 1000, 0), (200, 1000, 0))),
        "obj",
        {"std": "obj_left", "hflip": "obj_right", "reverse": "obj_right", "reverse_hflip": "obj_left"},
    ),
    "subject turns clockwise (+yaw)": (
        clip("cam_static-obj_rotate", obj_yaw=(0, 90)),
        "obj",
        {"std": "obj_cw", "hflip": "obj_ccw", "reverse": "obj_ccw", "reverse_hflip": "obj_cw"},
    ),
    "camera and subject truck right together (subject still in the image, moving in the world)": (
        clip("cam_translate-obj_translate", cam=((0, -150, 200), (0, 150, 200)), obj=((1000, -150, 0), (1000, 150, 0))),
        "obj",
        {"std": "obj_right", "hflip": "obj_left", "reverse": "obj_left", "reverse_hflip": "obj_right"},
    ),
    "subject drives away while the camera dollies backward": (
        clip("cam_translate-obj_translate", cam=((0, 0, 200), (-300, 0, 200)), obj=((1000, 0, 0), (1400, 0, 0))),
        "obj",
        {"std": "obj_away", "hflip": "obj_away", "reverse": "obj_toward", "reverse_hflip": "obj_toward"},
    ),
    "static subject, panning camera": (
        clip("cam_rotate-obj_static", cam_yaw=(-8, 8)),
        "obj",
        {a: "obj_static" for a in dsi.AUGS},
    ),
    "camera dollies forward": (
        clip("cam_translate-obj_static", cam=((0, 0, 200), (300, 0, 200))),
        "cam",
        {"std": "cam_forward", "hflip": "cam_forward", "reverse": "cam_backward", "reverse_hflip": "cam_backward"},
    ),
    "camera trucks right": (
        clip("cam_translate-obj_static", cam=((0, -150, 200), (0, 150, 200))),
        "cam",
        {"std": "cam_right", "hflip": "cam_left", "reverse": "cam_left", "reverse_hflip": "cam_right"},
    ),
    "camera pans right (+yaw)": (
        clip("cam_rotate-obj_translate", cam_yaw=(-8, 8), obj=((1000, -150, 0), (1000, 150, 0))),
        "cam",
        {"std": "cam_pan_right", "hflip": "cam_pan_left", "reverse": "cam_pan_left", "reverse_hflip": "cam_pan_right"},
    ),
    "static camera while the subject moves": (
        clip("cam_static-obj_translate", obj=((1000, -200, 0), (1000, 200, 0))),
        "cam",
        {a: "cam_static" for a in dsi.AUGS},
    ),
    "camera approaches: distance decreases": (
        clip("cam_translate-obj_static", cam=((0, 0, 200), (400, 0, 200))),
        "dist",
        {"std": "dist_dec", "hflip": "dist_dec", "reverse": "dist_inc", "reverse_hflip": "dist_inc"},
    ),
    "subject crosses in front: distance dips": (
        clip("cam_static-obj_translate", obj=((800, -500, 0), (800, 500, 0))),
        "dist",
        {a: "dist_valley" for a in dsi.AUGS},
    ),
    "camera pans right: subject drifts left in view": (
        clip("cam_rotate-obj_static", cam_yaw=(-8, 8)),
        "dir",
        {"std": "dir_left", "hflip": "dir_right", "reverse": "dir_right", "reverse_hflip": "dir_left"},
    ),
    "camera trucks right past a static subject: it drifts left in view": (
        clip("cam_translate-obj_static", cam=((0, -150, 200), (0, 150, 200))),
        "dir",
        {"std": "dir_left", "hflip": "dir_right", "reverse": "dir_right", "reverse_hflip": "dir_left"},
    ),
    "subject drives away: distance increases": (
        clip("cam_static-obj_translate", obj=((800, 0, 0), (1300, 0, 0))),
        "dist",
        {"std": "dist_inc", "hflip": "dist_inc", "reverse": "dist_dec", "reverse_hflip": "dist_dec"},
    ),
    "subject turning in place: same direction": (
        clip("cam_static-obj_rotate", obj_yaw=(0, 120)),
        "dir",
        {a: "dir_flat" for a in dsi.AUGS},
    ),
}


@pytest.mark.parametrize("name", list(CASES))
def test_answers_on_hand_built_trajectories(name):
    c, kind, expected = CASES[name]
    assert dsi.variant_answers(c, kind) == expected


@pytest.mark.parametrize("name", list(CASES))
def test_transforming_the_motion_equals_transforming_the_label(name):
    c, kind, _ = CASES[name]
    fn = {"obj": dsi.object_answer, "cam": dsi.camera_answer, "dist": dsi.distance_answer, "dir": dsi.orientation_answer}[kind]
    std = fn(c)
    for aug in dsi.AUGS:
        assert fn(mo.transform_motion(c, aug)) == dsi.transform_answer(std, aug)


def test_categories_follow_who_moves():
    cases = {
        "cam_static-obj_translate": (0, 3),
        "cam_translate-obj_rotate": (1, 3),
        "cam_rotate-obj_static": (1, 2),
        "cam_static-obj_static": (0, 2),
    }
    for pattern, (obj_cate, cam_cate) in cases.items():
        qs, _ = dsi.make_questions(_random_clip(pattern, 0), "truck", np.random.default_rng(0))
        cates = {q.kind: q.cate for q in qs}
        assert (cates["obj"], cates["cam"]) == (obj_cate, cam_cate)
        assert cates.get("dist", 4) == 4 and cates.get("dir", 5) == 5


def test_label_maps_are_involutions_and_commute():
    keys = [k for space in dsi.SPACES.values() for k in space]
    for k in keys:
        for aug in ("hflip", "reverse", "reverse_hflip"):
            assert dsi.transform_answer(dsi.transform_answer(k, aug), aug) == k
        assert dsi.transform_answer(dsi.transform_answer(k, "hflip"), "reverse") == dsi.transform_answer(k, "reverse_hflip")
        assert dsi.transform_answer(dsi.transform_answer(k, "reverse"), "hflip") == dsi.transform_answer(k, "reverse_hflip")
        space = next(s for s in dsi.SPACES.values() if k in s)
        assert all(dsi.transform_answer(k, a) in space for a in dsi.AUGS)


def _random_clip(pattern: str, seed: int) -> mo.ClipMotion:
    rng = np.random.default_rng(seed)
    spec = mo.sample_spec(rng, mo.MotionConfig(), pattern, (0.0, 0.0), SIZE)
    return mo.build_clip(spec, Ground(relief_amplitude=50.0).height)


def test_random_clips_transform_consistently():
    """Over sampled clips, answering the transformed motion equals transforming the answer
    whenever both are defined (ambiguous ones are skipped by the sampler)."""
    checked = 0
    for seed in range(40):
        c = _random_clip(mo.PATTERNS[seed % 9], seed)
        for kind in ("obj", "cam", "dist", "dir"):
            ans = dsi.variant_answers(c, kind)
            if all(ans.values()):
                checked += 1
                assert all(ans[a] == dsi.transform_answer(ans["std"], a) for a in dsi.AUGS), (seed, kind, ans)
    assert checked >= 120


def test_options_hold_every_variant_answer_and_identical_texts():
    for seed in range(30):
        c = _random_clip(mo.PATTERNS[seed % 9], seed)
        qs, _ = dsi.make_questions(c, "taxi", np.random.default_rng(seed))
        assert {q.kind for q in qs} >= {"obj", "cam"}
        for q in qs:
            assert len(q.options) == 4 and len(set(q.options)) == 4
            assert all(o in dsi.SPACES[q.kind] for o in q.options)
            rows = {aug: dsi.csv_rows("x.mp4", [q], aug)[0] for aug in dsi.AUGS}
            assert len({(r["question"], r["options"]) for r in rows.values()}) == 1
            for aug, r in rows.items():
                assert q.options["ABCD".index(r["GT"])] == q.answers[aug]
            assert rows["std"]["options"].startswith("A. ") and " D. " in rows["std"]["options"]


def test_options_are_deterministic_and_shuffled():
    c = _random_clip("cam_translate-obj_translate", 1)
    a, _ = dsi.make_questions(c, "bike", np.random.default_rng(5))
    b, _ = dsi.make_questions(c, "bike", np.random.default_rng(5))
    assert [q.options for q in a] == [q.options for q in b]
    letters = set()
    for seed in range(40):
        qs, _ = dsi.make_questions(c, "bike", np.random.default_rng(seed))
        letters.add(qs[0].gt("std"))
    assert letters == set("ABCD")


def test_csv_has_exactly_the_dsi_columns_and_round_trips():
    c = _random_clip("cam_static-obj_translate", 3)
    qs, _ = dsi.make_questions(c, "truck, red", np.random.default_rng(0))
    text = dsi.csv_text(dsi.csv_rows("city/000003.mp4", qs, "hflip"))
    df = pd.read_csv(io.StringIO(text))
    assert list(df.columns) == list(dsi.CSV_COLUMNS)
    assert df["GT"].tolist() == [q.gt("hflip") for q in qs]
    assert df["cate"].dtype.kind == "i" and df["question"].str.contains("truck, red").all()
