"""dsi-eval against a transcription of DSI-Bench's published evaluation, plus oracle/adversary."""

from __future__ import annotations

import os

import numpy as np
import pandas as pd
import pytest

from sceneforge.core.errors import ConfigError
from sceneforge.engine.world import Ground
from sceneforge.scenarios.videos import dsi, dsi_eval
from sceneforge.scenarios.videos import motion as mo

AUGS = dsi.AUGS


# --- DSI-Bench's evaluation code, transcribed (paths made parameters, prints made returns) --------
def _dsi_load(meta_base, out_base, model):
    data = {}
    for aug in dsi_eval.VIDEO_AUGS:
        meta = pd.read_csv(os.path.join(meta_base, f"{aug}.csv"))
        result = pd.read_csv(os.path.join(out_base, aug, f"{model}.csv"))
        data[aug] = {"meta": meta, "result": result}
    return data


def _dsi_sample_wise(data):
    records = []
    for aug in dsi_eval.VIDEO_AUGS:
        meta, res = data[aug]["meta"], data[aug]["result"]
        for i in range(len(meta)):
            gt = str(meta.iloc[i]["GT"]).strip()
            pred = str(res.iloc[i]["final_answer"]).strip()
            pred_letter = pred[0] if pred else ""
            records.append({"cate": meta.iloc[i]["cate"], "correct": int(gt == pred_letter)})
    df = pd.DataFrame(records)
    return df.groupby("cate")["correct"].mean(), df["correct"].mean()


def _dsi_group_wise(data, n):
    num = len(data[dsi_eval.VIDEO_AUGS[0]]["meta"])
    records, total = [], 0
    for i in range(num):
        correct_count, cate = 0, None
        for aug in dsi_eval.VIDEO_AUGS:
            meta, res = data[aug]["meta"], data[aug]["result"]
            gt = str(meta.iloc[i]["GT"]).strip()
            pred = str(res.iloc[i]["final_answer"]).strip()
            pred_letter = pred[0] if pred else ""
            if gt == pred_letter:
                correct_count += 1
            if cate is None:
                cate = meta.iloc[i]["cate"]
        ok = int(correct_count >= n)
        records.append({"cate": cate, "correct": ok})
        total += ok
    df = pd.DataFrame(records)
    return df.groupby("cate")["correct"].mean(), total / num


# --- a small pure dataset (questions from sampled trajectories, no rendering) -------------------
def _dataset(n_clips: int = 45):
    """{aug: rows} and the questions, from sampled clips of all 9 patterns."""
    rows = {aug: [] for aug in AUGS}
    questions = []
    for i in range(n_clips):
        rng = np.random.default_rng(i)
        spec = mo.sample_spec(rng, mo.MotionConfig(), mo.PATTERNS[i % 9], (0.0, 0.0), (400.0, 200.0, 150.0))
        qs, _ = dsi.make_questions(mo.build_clip(spec, Ground().height), "truck", rng)
        questions += qs
        for aug in AUGS:
            rows[aug] += dsi.csv_rows(f"t/{i:06d}.mp4", qs, aug)
    return rows, questions


def _write(tmp_path, rows, preds: dict[str, list], column="final_answer", model="m"):
    for aug in AUGS:
        (tmp_path / "meta").mkdir(exist_ok=True)
        (tmp_path / "meta" / f"{aug}.csv").write_text(dsi.csv_text(rows[aug]))
        (tmp_path / "pred" / aug).mkdir(parents=True, exist_ok=True)
        pd.DataFrame({column: preds[aug]}).to_csv(tmp_path / "pred" / aug / f"{model}.csv", index=False)
    return tmp_path / "meta", tmp_path / "pred"


@pytest.fixture(scope="module")
def dataset():
    return _dataset()


def test_matches_dsi_code_on_messy_predictions(tmp_path, dataset):
    rows, _ = dataset
    rng = np.random.default_rng(0)
    choices = ["A", "B", "C", "D", "B.", " c ", "", "E", "D) left", "a"]
    preds = {aug: [str(rng.choice(choices)) for _ in rows[aug]] for aug in AUGS}
    for aug in AUGS:  # make some rows right so accuracies are not all zero
        for i in range(0, len(rows[aug]), 3):
            preds[aug][i] = rows[aug][i]["GT"]
    meta, pred = _write(tmp_path, rows, preds)
    ours = dsi_eval.evaluate(meta, pred)
    ref = _dsi_load(meta, pred, "m")
    by, overall = _dsi_sample_wise(ref)
    assert ours["sample_wise"].overall == pytest.approx(overall)
    assert ours["sample_wise"].by_cate == pytest.approx({int(k): v for k, v in by.items()})
    for n in (1, 2, 3, 4):
        gw = dsi_eval.group_wise(dsi_eval.load_all(meta, pred), n)
        by, overall = _dsi_group_wise(ref, n)
        assert gw.overall == pytest.approx(overall)
        assert gw.by_cate == pytest.approx({int(k): v for k, v in by.items()})


def test_oracle_scores_100_percent(tmp_path, dataset):
    rows, _ = dataset
    meta, pred = _write(tmp_path, rows, {aug: [r["GT"] for r in rows[aug]] for aug in AUGS})
    r = dsi_eval.evaluate(meta, pred)
    assert r["sample_wise"].overall == 1.0 and r["group_wise"].overall == 1.0
    assert set(r["group_wise"].by_cate) == set(range(6)) and all(v == 1.0 for v in r["group_wise"].by_cate.values())


def test_motion_blind_predictor_fails_groups_whose_answers_flip(tmp_path, dataset):
    """Always answering what is right for the std clip: every flipping question has exactly
    2 of 4 variants right, so group-wise (n=3) accuracy on them is 0 <= 50%."""
    rows, questions = dataset
    std_letters = [r["GT"] for r in rows["std"]]
    meta, pred = _write(tmp_path, rows, {aug: std_letters for aug in AUGS})
    data = dsi_eval.load_all(meta, pred)
    flips = [len(set(q.answers.values())) > 1 for q in questions]
    assert sum(flips) > 50
    for aug in AUGS:
        data[aug]["meta"] = data[aug]["meta"][flips].reset_index(drop=True)
        data[aug]["pred"] = data[aug]["pred"][flips].reset_index(drop=True)
    gw = dsi_eval.group_wise(data, 3)
    assert gw.overall <= 0.5 and all(v <= 0.5 for v in gw.by_cate.values())
    assert dsi_eval.sample_wise(data).overall == pytest.approx(0.5)


def test_raw_text_answers_are_extracted(tmp_path, dataset):
    rows, _ = dataset
    preds = {aug: [f"I think <answer> {r['GT'].lower()} </answer>." for r in rows[aug]] for aug in AUGS}
    preds["hflip"][0] = "no tag here"
    meta, pred = _write(tmp_path, rows, preds, column="result_text")
    r = dsi_eval.evaluate(meta, pred)
    n = sum(len(rows[a]) for a in AUGS)
    assert r["sample_wise"].overall == pytest.approx((n - 1) / n)
    assert dsi_eval.extract_answer("<answer>B</answer>") == "B" and dsi_eval.extract_answer(None) == "E"


def test_length_mismatch_is_a_clear_error(tmp_path, dataset):
    rows, _ = dataset
    preds = {aug: [r["GT"] for r in rows[aug]] for aug in AUGS}
    preds["reverse"] = preds["reverse"][:-1]
    meta, pred = _write(tmp_path, rows, preds)
    with pytest.raises(ConfigError, match="length mismatch in reverse"):
        dsi_eval.evaluate(meta, pred)


def test_missing_prediction_column_is_a_clear_error(tmp_path, dataset):
    rows, _ = dataset
    meta, pred = _write(tmp_path, rows, {aug: ["A"] * len(rows[aug]) for aug in AUGS}, column="answer")
    with pytest.raises(ConfigError, match="final_answer"):
        dsi_eval.evaluate(meta, pred)


def test_missing_files_and_models_are_clear_errors(tmp_path, dataset):
    rows, _ = dataset
    meta, pred = _write(tmp_path, rows, {aug: ["A"] * len(rows[aug]) for aug in AUGS})
    (meta / "hflip.csv").unlink()
    with pytest.raises(ConfigError, match="hflip.csv"):
        dsi_eval.evaluate(meta, pred)
    (pred / "std" / "other.csv").write_text("final_answer\nA\n")
    with pytest.raises(ConfigError, match="exactly one"):
        dsi_eval.find_model(pred)
    with pytest.raises(ConfigError, match="n-group"):
        dsi_eval.group_wise({}, 5)


def test_printed_lines_follow_dsi_format():
    s = dsi_eval.Scores({0: 0.5, 4: 1.0}, 0.75, 4)
    text = dsi_eval.format_scores("=== Method 1: Independent Samples ===", s)
    assert "category = 0 Obj:static cam       Acc = 50.00%" in text
    assert "Overall Acc = 75.00%" in text


def test_single_view_scores_one_variant(tmp_path, dataset):
    rows, _ = dataset
    preds = {aug: [r["GT"] if aug == "hflip" else "Z" for r in rows[aug]] for aug in AUGS}
    meta, pred = _write(tmp_path, rows, preds)
    data = dsi_eval.load_all(meta, pred)
    assert dsi_eval.single_view(data, "hflip").overall == 1.0
    assert dsi_eval.single_view(data, "std").overall == 0.0
    assert dsi_eval.sample_wise(data).overall == pytest.approx(0.25)
    with pytest.raises(ConfigError, match="invalid augmentation"):
        dsi_eval.single_view(data, "vflip")
