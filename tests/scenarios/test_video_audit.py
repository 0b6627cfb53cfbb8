"""The outside audit's checks as tests, on a rendered set with DSI's and the mixed patterns and
distractors of every motion: each variant's decoded frames are the exact transform of the
decoded std frames (PSNR >= 36 dB) and no other transform's (<= 28 dB); every CSV answer equals
the label table applied to std's, read from the CSV texts alone; the oracle scores 100 % and
an answer-copying predictor fails every group whose answer flips; a rendered mirrored world
equals the hflip variant on mixed patterns too."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest

from sceneforge.scenarios.contract import Shard
from sceneforge.scenarios.videos import dsi
from sceneforge.scenarios.videos import dsi_eval
from sceneforge.scenarios.videos import motion as mo
from sceneforge.scenarios.videos import scenario as videos
from sceneforge.scenarios.videos.video_io import apply_aug, decode_mp4
from video_helpers import mirror_pair

CONFIG = {
    "env": "city",
    "n": 6,
    "seed": 5,
    "distractors": 2,
    "distractor_motions": ["curve", "stop_and_go", "turn"],
    "motion": {
        "n_frames": 8,
        "fps": 4.0,
        "patterns": [
            "cam_static-obj_translate",
            "cam_translate-obj_rotate",
            "cam_rotate-obj_static",
            "cam_static-obj_mixed",
            "cam_mixed-obj_static",
            "cam_mixed-obj_mixed",
        ],
    },
}
MIRROR_PSNR_DB, WRONG_PSNR_DB = 36.0, 28.0
TEXT_TO_KEY = {t: k for spaces in (dsi.SPACES, dsi.MIXED_SPACES) for space in spaces.values() for k, t in space.items()}


def psnr(a: np.ndarray, b: np.ndarray) -> float:
    mse = float(np.mean((a.astype(np.float64) - b.astype(np.float64)) ** 2))
    return float("inf") if mse == 0 else 10 * np.log10(255.0**2 / mse)


@pytest.fixture(scope="module")
def audit_set(server, tmp_path_factory):
    out = tmp_path_factory.mktemp("audit")
    res = videos.run(CONFIG, Shard(0, tuple(range(CONFIG["n"]))), out, server=server.address)
    assert res.done == list(range(CONFIG["n"])) and not res.failed
    videos.finalize(CONFIG, out)
    return out


@pytest.mark.render
def test_variants_are_exact_transforms_of_std_and_of_no_other(audit_set):
    """PSNR of each decoded variant against each transform of the decoded std clip: the right
    one >= 36 dB (only the variant's own encoding differs), every wrong one <= 28 dB."""
    right, wrong = [], []
    for p in sorted((audit_set / "videos" / "std").rglob("*.mp4")):
        rel = p.relative_to(audit_set / "videos" / "std")
        std = decode_mp4(p)
        for aug in dsi.AUGS:
            var = decode_mp4(audit_set / "videos" / aug / rel)
            for other in dsi.AUGS:
                (right if other == aug else wrong).append(psnr(var, apply_aug(std, other)))
    assert len(right) == 4 * CONFIG["n"] and min(right) >= MIRROR_PSNR_DB, sorted(right)[:3]
    assert max(wrong) <= WRONG_PSNR_DB, sorted(wrong)[-3:]


def _keys(options: str) -> dict[str, str]:
    """'A. text B. text ...' -> {letter: answer key} (texts looked up in every answer space)."""
    parts = re.split(r"(?:^| )([ABCD])\. ", options)[1:]
    return {letter: TEXT_TO_KEY[text] for letter, text in zip(parts[::2], parts[1::2])}


@pytest.mark.render
def test_every_csv_answer_is_the_label_table_applied_to_std(audit_set):
    """From the four metadata CSVs alone (no records): row i of every variant shows the same
    options, and its GT answer is transform_answer(std's GT answer, variant)."""
    csv = {aug: pd.read_csv(audit_set / "metadata" / f"{aug}.csv") for aug in dsi.AUGS}
    checked, flipping, mixed = 0, 0, 0
    for i, row in csv["std"].iterrows():
        keys = _keys(row["options"])
        std_key = keys[row["GT"]]
        for aug in dsi.AUGS:
            r = csv[aug].iloc[i]
            assert r["options"] == row["options"] and r["question"] == row["question"]
            assert keys[r["GT"]] == dsi.transform_answer(std_key, aug), (i, aug, std_key)
            checked += 1
        flipping += any(dsi.transform_answer(std_key, a) != std_key for a in dsi.AUGS)
        mixed += std_key in dsi.MIXED_PARTS
    assert checked == 4 * len(csv["std"]) >= 4 * 3 * CONFIG["n"] and flipping >= 8 and mixed >= 3


@pytest.mark.render
def test_oracle_scores_100_and_copying_std_fails_every_flipping_group(audit_set, tmp_path):
    meta = audit_set / "metadata"
    std_gt = pd.read_csv(meta / "std.csv")["GT"]
    for name, pred in (("oracle", None), ("blind", std_gt)):
        for aug in dsi.AUGS:
            (tmp_path / name / aug).mkdir(parents=True, exist_ok=True)
            gt = pd.read_csv(meta / f"{aug}.csv")["GT"] if pred is None else pred
            pd.DataFrame({"final_answer": gt}).to_csv(tmp_path / name / aug / "m.csv", index=False)
    oracle = dsi_eval.evaluate(meta, tmp_path / "oracle")
    blind = dsi_eval.evaluate(meta, tmp_path / "blind")
    assert oracle["sample_wise"].overall == oracle["group_wise"].overall == 1.0
    flips = [(pd.read_csv(meta / f"{a}.csv")["GT"] != std_gt).any() for a in dsi.AUGS]
    same = np.mean([all((pd.read_csv(meta / f"{a}.csv")["GT"] == std_gt)[i] for a in dsi.AUGS) for i in range(len(std_gt))])
    assert any(flips) and blind["group_wise"].overall == pytest.approx(same)


@pytest.mark.render
@pytest.mark.parametrize("pattern, seed", [("cam_mixed-obj_mixed", 0), ("cam_translate-obj_mixed", 1)])
def test_rendered_mirror_world_equals_hflip_variant_on_mixed_patterns(render_client, pattern, seed):
    """As test_videos' mirror test: the world mirrored about the camera's initial vertical plane,
    rendered, equals the hflip of the std frames (>= 99 % of lit pixels within 8/255, >= 99.9 %
    identical mask pixels; the unflipped frames fail), and its motion answers as hflip's GT."""
    ctx = videos.load_context(videos.VideoConfig.from_dict({**CONFIG, "distractors": 0}))
    clip, m_clip, std, mir = mirror_pair(render_client, ctx, pattern, seed)
    flipped = apply_aug(std["lit"], "hflip").astype(int)
    assert (np.abs(flipped - mir["lit"]).max(-1) <= 8).mean() >= 0.99
    assert (np.abs(std["lit"].astype(int) - mir["lit"]).max(-1) <= 8).mean() < 0.95
    assert (apply_aug(std["object_mask"], "hflip") == mir["object_mask"]).all(-1).mean() >= 0.999
    for kind in ("obj", "cam"):
        ans = dsi.variant_answers(clip, kind)
        assert dsi.consistent(ans) and dsi.variant_answers(m_clip, kind)["std"] == ans["hflip"]


@pytest.mark.render
def test_direction_answers_agree_with_the_rendered_boxes_on_every_variant(audit_set):
    """Answers come from trajectories; the subject's rendered mask boxes (clips.parquet) must
    shift the way each variant's 'direction' answer says, mixed patterns included."""
    import json

    df = pd.read_parquet(audit_set / "clips.parquet")
    checked = set()
    for _, r in df.iterrows():
        boxes = np.stack(r["bbox"]).astype(float)
        shift = (boxes[-1, 0] + boxes[-1, 2] - boxes[0, 0] - boxes[0, 2]) / 2
        for q in json.loads(r["questions"]):
            for aug, ans in q["answers"].items():
                s = {"hflip": -shift, "reverse": -shift, "reverse_hflip": shift}.get(aug, shift)
                if ans in ("dir_left", "dir_right"):
                    assert (s < -2) if ans == "dir_left" else (s > 2), (r["pattern"], aug, ans, s)
                    checked.add(r["pattern"])
    assert len(checked & set(mo.MIXED_PATTERNS)) >= 2 and len(checked) >= 5
