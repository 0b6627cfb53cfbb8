"""`sceneforge study` end to end on a tiny real study: 2 backbones x 2 environments x 2 tasks
(random-init tiny ViTs, the probing tests' quadrant images), the leaderboard's names that scripts
rely on, resume after `kill -9` with byte-identical rows, and `merge` refusing what is not comparable.

Real processes, real models and heads; the data's source box gives the label away, so the
layout floor on the source box must beat chance."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time

import pandas as pd
import pytest

from sceneforge.study.results import run_id
from study_helpers import BACKBONES, ROOT, make_data, run_study, study_cmd, write_config

HEADS = ("linear", "abmilp", "efficient")


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    """One uninterrupted study (with run reports): the reference."""
    tmp = tmp_path_factory.mktemp("study")
    datasets = make_data(tmp / "data")
    cfg = write_config(tmp / "study.yaml", datasets)
    out = tmp / "out"
    r = run_study(str(cfg), "--out", str(out), "--quiet")
    assert r.returncode == 0, r.stderr
    return tmp, datasets, out, r


def test_the_leaderboard_has_one_row_per_cell_with_the_names_scripts_rely_on(finished):
    tmp, datasets, out, r = finished
    df = pd.read_csv(out / "leaderboard.csv")
    for col in ("backbone", "env", "task", "layer", "head", "n_train", "test_acc", "ci_low", "ci_high", "kind"):
        assert col in df.columns, col
    models = df[df["kind"] != "layout"]
    # 2 backbones x 2 envs x 2 tasks x 1 layer x 3 heads x 1 n_train; random-init tiny ViTs are kind random
    assert len(models) == 2 * 2 * 2 * 3
    assert set(models["kind"]) == {"random"}
    assert set(models["backbone"]) == {"vit-a", "vit-b"}
    assert set(models["head"]) == set(HEADS)
    assert not models.duplicated(["backbone", "env", "task", "layer", "head", "n_train"]).any()
    assert (models["n_train"] == 24).all() and (models["n_test"] == 12).all()
    layout = df[df["kind"] == "layout"]
    assert len(layout) == 2 * 2 * 3 and set(layout["head"]) == {"source", "target", "boxes"}
    assert (layout[layout["head"] == "source"]["test_acc"] > 0.5).all()  # the source box is the label
    assert ((df["ci_low"] <= df["test_acc"]) & (df["test_acc"] <= df["ci_high"])).all()
    # every probe cell links to its run's probe report, which exists
    for link in models["report"]:
        assert (out / link).is_file(), link
    # ego desert rows carry SpaRRTa's published ViT-B numbers (linear / abmilp / efficient)
    ref = models[(models["env"] == "desert") & (models["task"] == "ego")]
    assert set(ref.loc[ref["head"] == "efficient", "sparrta_vitb"]) == {0.9394}
    md = (out / "leaderboard.md").read_text()
    assert "## ego · efficient" in md and "mean of envs" in md and "layout: source box" in md
    # where the features were extracted and where the heads trained: both the study's device (cpu here)
    rows = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert {(r["device"], r["train_device"]) for r in rows} == {("cpu", "cpu")}
    assert set(df["train_device"]) == {"cpu"} and "heads on cpu (1 thread)" in md
    head = json.loads((out / "study.json").read_text())
    assert set(head["datasets"]) == {os.path.basename(d) for d in datasets}
    assert head["protocol"]["epochs"] == 3 and head["versions"]["torch"]
    assert "study: 12 rows (0 model, 8 random, 4 layout)" in r.stdout
    # each head's selected config's per-image test predictions, in probe's format, beside its run's
    # rows: they give back the row's test accuracy exactly (a per-sample analysis needs no retrain)
    table = {os.path.basename(d): pd.read_parquet(os.path.join(d, "metadata.parquet")) for d in datasets}
    for row in (x for x in rows if x["kind"] != "layout"):
        run = out / "runs" / run_id(row)
        for h in HEADS:
            pred = pd.read_csv(run / "predictions" / f"{h}_L{row['layer']}_within_{row['env']}_{row['task']}.csv")
            assert len(pred) == row["n_test"] == 12
            assert pred["correct"].mean() == pytest.approx(row["heads"][h]["test"], abs=1e-4)
            assert (pred["correct"] == (pred["label"] == pred["prediction"])).all()
            sample = table[row["dataset"]].set_index("file_name").loc[pred["file_name"]]
            assert list(sample["label"]) == list(pred["label"])  # the dataset's own labels, row by row


def test_a_killed_study_resumes_to_byte_identical_rows(finished, tmp_path):
    ref_tmp, datasets, ref_out, _ = finished
    cfg = write_config(tmp_path / "study.yaml", datasets, reports=False)
    out = tmp_path / "out"
    env = dict(os.environ, HF_HUB_OFFLINE="1")
    proc = subprocess.Popen(study_cmd(str(cfg), "--out", str(out), "--quiet"), cwd=ROOT, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    results = out / "results.jsonl"
    deadline = time.monotonic() + 240
    try:
        while time.monotonic() < deadline:  # kill -9 once the first backbone row is written
            if results.is_file() and '"kind": "random"' in results.read_text():
                break
            assert proc.poll() is None, "the study finished before it could be killed"
            time.sleep(0.02)
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait(timeout=30)
    partial = results.read_bytes()
    ref = (ref_out / "results.jsonl").read_bytes()
    assert len(partial) < len(ref) and ref.startswith(partial[: partial.rfind(b"\n") + 1])
    with results.open("ab") as fh:  # and a torn last line, as a kill mid-write leaves
        fh.write(b'{"kind": "random", "backbo')
    r = run_study(str(cfg), "--out", str(out), "--quiet")
    assert r.returncode == 0, r.stderr
    assert results.read_bytes() == ref  # the same rows, byte for byte, in the same order
    preds = sorted(p.relative_to(out) for p in (out / "runs").glob("*/predictions/*.csv"))
    assert preds and preds == sorted(p.relative_to(ref_out) for p in (ref_out / "runs").glob("*/predictions/*.csv"))
    assert all((out / p).read_bytes() == (ref_out / p).read_bytes() for p in preds)  # and the same predictions
    again = run_study(str(cfg), "--out", str(out), "--quiet")  # nothing left: no row trained twice
    assert again.returncode == 0 and results.read_bytes() == ref
    assert "features of" not in again.stdout


def test_merge_joins_equal_rows_and_refuses_another_protocol_or_other_data(finished, tmp_path):
    tmp, datasets, out, _ = finished
    # the same study on a second "machine": each backbone run separately, then merged
    for bb in BACKBONES:
        cfg = write_config(tmp_path / f"{bb['name']}.yaml", datasets, backbones=[bb], reports=False)
        r = run_study(str(cfg), "--out", str(tmp_path / bb["name"]), "--quiet")
        assert r.returncode == 0, r.stderr
    merged = tmp_path / "merged"
    r = run_study("merge", str(tmp_path / "vit-a"), str(tmp_path / "vit-b"), "--out", str(merged))
    assert r.returncode == 0, r.stderr
    want = sorted((out / "results.jsonl").read_text().splitlines())
    assert sorted((merged / "results.jsonl").read_text().splitlines()) == want
    assert len(pd.read_csv(merged / "leaderboard.csv")) == len(pd.read_csv(out / "leaderboard.csv"))
    assert json.loads((merged / "study.json").read_text())["merged_from"]
    # rows written before heads could move (no train_device: they trained on the CPU) equal today's
    old = tmp_path / "old"
    shutil.copytree(tmp_path / "vit-a", old)
    rows = [json.loads(line) for line in (old / "results.jsonl").read_text().splitlines()]
    (old / "results.jsonl").write_text(
        "".join(json.dumps({k: v for k, v in r.items() if k != "train_device"}) + "\n" for r in rows)
    )
    r = run_study("merge", str(old), str(tmp_path / "vit-a"), "--out", str(tmp_path / "merged_old"))
    assert r.returncode == 0, r.stderr

    # another protocol (more epochs): refused in one line, nothing written
    cfg = write_config(tmp_path / "long.yaml", datasets, backbones=[BACKBONES[0]], epochs=4, reports=False, layout=False)
    assert run_study(str(cfg), "--out", str(tmp_path / "long"), "--quiet").returncode == 0
    r = run_study("merge", str(out), str(tmp_path / "long"), "--out", str(tmp_path / "bad"))
    assert r.returncode == 2
    assert r.stderr.count("\n") == 1 and "another protocol" in r.stderr and "epochs 3 vs 4" in r.stderr, r.stderr
    assert not (tmp_path / "bad" / "results.jsonl").exists()

    # the same dataset name with other data: refused, naming the dataset
    header = json.loads((tmp_path / "vit-b" / "study.json").read_text())
    header["datasets"]["desert_ego"]["fingerprint"] = "0" * 16
    (tmp_path / "vit-b" / "study.json").write_text(json.dumps(header))
    r = run_study("merge", str(tmp_path / "vit-a"), str(tmp_path / "vit-b"), "--out", str(tmp_path / "bad2"))
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "dataset desert_ego differs" in r.stderr, r.stderr


def test_resuming_with_another_protocol_is_refused_in_one_line(finished, tmp_path):
    tmp, datasets, out, _ = finished
    cfg = write_config(tmp_path / "s.yaml", datasets, epochs=5)
    r = run_study(str(cfg), "--out", str(out), "--quiet")
    assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
    assert "another protocol" in r.stderr and "epochs 3 -> 5" in r.stderr


@pytest.mark.slow  # a local Ray cluster starts in ~1 min on the shared 2-core machine
def test_the_ray_backend_writes_the_same_rows(finished, tmp_path):
    tmp, datasets, out, _ = finished
    # keep_features false: the driver deletes a unit's features once it has appended the unit's rows
    cfg = write_config(tmp_path / "study.yaml", datasets, reports=False, keep_features=False)
    r = run_study(str(cfg), "--out", str(tmp_path / "ray"), "--backend", "ray", "--quiet", timeout=900)
    assert r.returncode == 0, r.stderr
    got = sorted((tmp_path / "ray" / "results.jsonl").read_text().splitlines())
    assert got == sorted((out / "results.jsonl").read_text().splitlines())
    assert list((tmp_path / "ray" / "cache").iterdir()) == [] and r.stdout.count("features deleted") == 8
