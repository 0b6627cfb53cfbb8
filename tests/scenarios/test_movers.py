"""Distractor movers that curve, stop and go, and turn corners: their shapes, speeds, the
keep-clear and sight-corridor rules on every kind, the opt-in config, and (rendered) that they
never take a pixel of the subject."""

from __future__ import annotations

import math
from collections import Counter

import numpy as np
import pytest

from sceneforge.core.errors import ConfigError
from sceneforge.engine.world import Actor, Ground
from sceneforge.scenarios.videos import motion as mo
from sceneforge.scenarios.videos import movers as mv
from sceneforge.scenarios.videos.config import VideoConfig

GROUND = Ground(relief_amplitude=80.0, relief_wavelength=2500.0)
FOV = 53.13
POOL = [
    ("proc_human", "human", (60.0, 50.0, 180.0)),
    ("proc_car", "car", (450.0, 200.0, 150.0)),
    ("proc_fox", "fox", (80.0, 30.0, 40.0)),
]
SPEED = (80.0, 220.0)


def _clip(pattern: str, seed: int) -> mo.ClipMotion:
    spec = mo.sample_spec(np.random.default_rng(seed), mo.MotionConfig(), pattern, (0.0, 0.0), (450.0, 200.0, 160.0))
    return mo.build_clip(spec, GROUND.height)


def _movers(motion: str, seeds=range(30), n: int = 3):
    for seed in seeds:
        c = _clip(mo.ALL_PATTERNS[seed % len(mo.ALL_PATTERNS)], seed)
        yield c, mv.sample_movers(np.random.default_rng(seed), c, n, POOL, SPEED, GROUND.height, FOV, motions=(motion,))


def _speeds(m: mv.Mover, fps: float) -> np.ndarray:
    return np.linalg.norm(np.diff(m.track.location[:, :2], axis=0), axis=1) * fps


@pytest.mark.parametrize("motion", mv.MOVER_MOTIONS)
def test_every_kind_keeps_clear_of_the_subject_camera_and_sight_line(motion):
    placed = 0
    for c, movers in _movers(motion):
        r_s = math.hypot(*c.subject_size[:2]) / 2
        for m in movers:
            assert m.motion == motion and m.cls not in ("taxi",)
            gap = np.linalg.norm(m.track.location[:, None, :2] - c.subject.location[None, :, :2], axis=-1).min()
            assert gap >= m.radius() + r_s + 100.0
            cam_gap = np.linalg.norm(m.track.location[:, None, :2] - c.camera.location[None, :, :2], axis=-1).min()
            assert cam_gap >= m.radius() + 150.0
            assert not mv._in_corridor(c, m.track.location, m.radius())
            assert np.allclose(m.track.location[:, 2], GROUND.height(m.track.location[:, 0], m.track.location[:, 1]))
            placed += 1
        for a in movers:  # and of each other
            for b in movers:
                if a is not b:
                    d = np.linalg.norm(a.track.location[:, None, :2] - b.track.location[None, :, :2], axis=-1).min()
                    assert d >= a.radius() + b.radius() + 100.0
    assert placed >= 30 * 3 * 0.7


def test_curving_movers_follow_an_arc_facing_along_it():
    rates = []
    for c, movers in _movers("curve"):
        for m in movers:
            rate = np.diff(m.track.yaw) * c.fps
            assert np.allclose(rate, rate[0]) and 15.0 <= abs(rate[0]) <= 45.0
            v = _speeds(m, c.fps)
            assert np.allclose(v, v[0], rtol=1e-6)  # constant speed
            step = np.diff(m.track.location[:, :2], axis=0)
            mid = (m.track.yaw[1:] + m.track.yaw[:-1]) / 2
            assert np.allclose(np.degrees(np.arctan2(step[:, 1], step[:, 0])), mo.wrap_deg(mid), atol=1e-6)
            rates.append(np.sign(rate[0]))
    assert set(rates) == {-1.0, 1.0}


def test_stop_and_go_movers_stand_still_for_a_while_then_walk_on():
    for c, movers in _movers("stop_and_go"):
        for m in movers:
            v = _speeds(m, c.fps)
            top = v.max()
            assert top > 15 and (v < 1e-9).sum() >= 1  # a standstill
            moving = np.flatnonzero(v > 0.9 * top)
            still = np.flatnonzero(v < 1e-9)
            assert moving.min() < still.min() and moving.max() > still.max()  # walks, stops, walks on
            assert np.ptp(m.track.yaw) == 0.0
            assert np.abs(np.diff(v)).max() <= top * 0.75  # eases, no jumps


def test_turning_movers_turn_the_corner_while_standing():
    turns = []
    for c, movers in _movers("turn"):
        for m in movers:
            v = _speeds(m, c.fps)
            dyaw = np.abs(np.diff(m.track.yaw))
            assert 45.0 - 1e-9 <= np.ptp(m.track.yaw) <= 120.0 + 1e-9
            assert (v[dyaw > 1e-9] < 0.05 * v.max()).all()  # turning only while standing
            step = np.diff(m.track.location[:, :2], axis=0)  # faces where it walks
            walking = v > 1e-6
            heading = np.degrees(np.arctan2(step[walking, 1], step[walking, 0]))
            assert np.allclose(mo.wrap_deg(heading - m.track.yaw[1:][walking]), 0.0, atol=1e-6)
            turns.append(m.track.yaw[-1] - m.track.yaw[0])
    assert min(turns) < 0 < max(turns)


def test_movers_have_their_own_speeds():
    v = [float(_speeds(m, c.fps).max()) for c, movers in _movers("straight") for m in movers]
    assert np.ptp(v) > 100 and min(v) < 60  # small animals walk slowly, cars drive fast


def test_default_draws_are_those_of_straight_only_and_records_keep_their_keys():
    for seed in range(10):
        c = _clip("cam_static-obj_translate", seed)
        a = mv.sample_movers(np.random.default_rng(seed), c, 2, POOL, SPEED, GROUND.height, FOV)
        b = mv.sample_movers(np.random.default_rng(seed), c, 2, POOL, SPEED, GROUND.height, FOV, motions=("straight",))
        assert [m.to_record() for m in a] == [m.to_record() for m in b]
        assert all("motion" not in m.to_record() for m in a)
    c, movers = next(_movers("turn", seeds=[3]))
    rec = movers[0].to_record()
    assert rec["motion"] == "turn" and mv.Mover.from_record(rec).track.allclose(movers[0].track)


def test_a_mix_of_kinds_draws_each_kind():
    kinds = Counter()
    for seed in range(30):
        c = _clip(mo.PATTERNS[seed % 9], seed)
        for m in mv.sample_movers(np.random.default_rng(seed), c, 3, POOL, SPEED, GROUND.height, FOV, motions=mv.MOVER_MOTIONS):
            kinds[m.motion] += 1
    assert set(kinds) == set(mv.MOVER_MOTIONS) and min(kinds.values()) >= 8


def test_distractor_motions_config_is_opt_in_and_validated():
    base = VideoConfig.from_dict({"env": "city", "n": 2, "distractors": 2})
    assert "distractor_motions" not in base.normalised() and base.distractor_motions == ("straight",)
    mixed = VideoConfig.from_dict({"env": "city", "n": 2, "distractors": 2, "distractor_motions": ["curve", "turn"]})
    assert mixed.normalised()["distractor_motions"] == ["curve", "turn"]
    for bad in (["walk"], [], ["curve", "curve"]):
        with pytest.raises(ConfigError, match="distractor_motions"):
            VideoConfig.from_dict({"env": "city", "n": 2, "distractor_motions": bad})


@pytest.mark.render
def test_movers_of_every_kind_never_take_a_subject_pixel(render_client):
    """Rendered: the subject's visible pixels with the distractors equal those without them, in
    every frame (the geometric sight-corridor rule is exact, not just the 0.8 visibility rule)."""
    from sceneforge.scenarios.videos import scenario as videos

    cfg = VideoConfig.from_dict(
        {
            "env": "city",
            "n": 4,
            "distractors": 4,
            "distractor_motions": list(mv.MOVER_MOTIONS),
            "motion": {"n_frames": 8, "fps": 4.0},
        }
    )
    ctx = videos.load_context(cfg)
    kinds, compared = Counter(), 0
    for i, pattern in enumerate(["cam_static-obj_translate", "cam_translate-obj_static", "cam_rotate-obj_rotate"]):
        rng = videos.clip_rng(cfg, "city", i)
        clip = videos.sample_clip(ctx, rng, pattern, "proc_taxi", Counter())
        movers = videos._distractors(ctx, np.random.default_rng(i), clip, "proc_taxi", ctx.fov)
        subject = Actor("subject", "proc_taxi", mo.subject_transform(clip, 0))
        _, alone = videos.render_clip(render_client, clip, subject, [], ctx.env.world, ctx.fov, ctx.size)
        _, among = videos.render_clip(render_client, clip, subject, [], ctx.env.world, ctx.fov, ctx.size, movers=movers)
        for a, b in zip(alone, among):
            assert b["subject"].visible == a["subject"].visible > 0
            compared += 1
        assert sum(v[m.name].visible > 0 for v in among for m in movers) >= len(movers)  # movers are on screen
        kinds.update(m.motion for m in movers)
    assert compared == 24 and len(kinds) >= 3
