"""benchmarks/sparrta_scale.py (issue 34's study) runs end to end on a tiny dataset: rows are
recorded once per (kind, name, backbone, layer, n_train) and skipped when the command runs again,
a second backbone on the same data is its own row, and the report's tables carry every row.

Real backbone (the seeded random-init ViT-S preset, no download), real heads; the data is the
probing tests' quadrant images, whose source box gives the label away (so the layout baseline on
the source box must beat chance)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from conftest import make_image_dataset

ROOT = Path(__file__).resolve().parents[2]


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "benchmarks/sparrta_scale.py", *args], cwd=ROOT, capture_output=True, text=True, timeout=600
    )


def _scale_module():
    """benchmarks/sparrta_scale.py as a module (benchmarks/ is not a package)."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import sparrta_scale
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    return sparrta_scale


def test_rows_resume_per_backbone_and_the_report_has_the_study_table(tmp_path):
    make_image_dataset(tmp_path / "data", envs=("desert",), n=(48, 24, 24), seed=3)
    # the study table picks rows by dataset name: one of STUDY_SETS
    data = tmp_path / "data" / "desert_ego_balanced"
    (tmp_path / "data" / "desert_ego").rename(data)
    out = tmp_path / "scale"
    common = ["--out", str(out), "--cache", str(tmp_path / "cache"), "--layers", "2", "--epochs", "4", "--threads", "1"]
    first = _run("run", *common, "--backbone", "vits14-random", "--n-train", "24,48", "--row", f"curve:desert={data}")
    assert first.returncode == 0, first.stderr
    recs = [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines()]
    assert [(r["backbone"], r["layer"], r["n_train"]) for r in recs] == [("vits14-random", 2, 24), ("vits14-random", 2, 48)]
    for r in recs:
        assert set(r["heads"]) == {"linear", "abmilp", "efficient"}
        assert r["n_test"] == 24 and r["n_val"] == 24
        assert r["layout"]["source"] > 0.5  # the source box is the label here (chance 0.25)

    again = _run("run", *common, "--backbone", "vits14-random", "--n-train", "24,48", "--row", f"curve:desert={data}")
    assert again.returncode == 0, again.stderr
    assert len((out / "results.jsonl").read_text().splitlines()) == 2  # nothing re-trained
    assert "features of" not in again.stdout  # a finished row does not even load the data

    report = _run("report", "--out", str(out))
    assert report.returncode == 0, report.stderr
    text = (out / "scale.md").read_text()
    assert "| desert | desert/ego | L2 | 48 |" in text
    study = text.split("### study")[1]
    # the largest n_train of the set, next to SpaRRTa's published desert ViT-B numbers
    assert "| ego | vits14-random | L2 | 4 / 10 | desert | 48 |" in study
    assert "64.6 / 90.6 / 93.9" in study
    # both n_train of the set, one row each, in the every-n table
    every = text.split("### study sets at every n_train")[1]
    assert "| ego | desert | vits14-random | L2 | 4 / 10 | 24 |" in every
    assert "| ego | desert | vits14-random | L2 | 4 / 10 | 48 |" in every


def test_a_plan_step_has_rows_left_until_every_layer_and_n_of_every_row_is_done():
    s = _scale_module()
    flags = "--backbone vits14-random --layers 9,12 --n-train 2000,4000 --row study:a=/x --row study:b=/y"
    every = {
        (k, n, "vits14-random", layer, size)
        for k, n in (("study", "a"), ("study", "b"))
        for layer in (9, 12)
        for size in (2000, 4000)
    }
    assert not s._rows_left(flags, every)
    for missing in every:
        assert s._rows_left(flags, every - {missing}), missing
    # the same rows with another backbone are not these rows
    assert s._rows_left(flags.replace("vits14-random", "dinov2-s-imgfocus"), every)
    # every step of the committed PLAN parses
    data = {k: f"/d/{k}" for k in s.DATASETS}
    assert all(s._rows_left(f.format(**data), set()) for _, f in s.PLAN)


def test_the_committed_study_rows_are_whole_unique_and_reported(tmp_path):
    """benchmarks/results/sparrta_scale.jsonl is what docs/validation.md's study tables are made
    from: every row names a planned dataset, carries the three heads with a test accuracy inside
    its own CI and the three layout baselines, appears once, and `report --results` prints it."""
    s = _scale_module()
    recs = [json.loads(x) for x in s.RESULTS.read_text().splitlines()]
    assert recs, s.RESULTS
    # once per resume key (study skips by it: a second schedule is its own kind, e.g. long:)
    keys = [(r["kind"], r["name"], r["backbone"], r["layer"], r["n_train"]) for r in recs]
    assert len(set(keys)) == len(keys) == len(s.done_keys(s.RESULTS)), "a row recorded twice"
    for r in recs:
        assert Path(r["data"]).name in s.DATASETS, r["data"]
        assert set(r["heads"]) == {"linear", "abmilp", "efficient"}
        for h in r["heads"].values():
            assert 0.0 <= h["ci"][0] <= h["test"] <= h["ci"][1] <= 1.0, r
        assert set(r["layout"]) >= {"source", "target", "boxes"}, r
        assert r["n_train"] >= 1 and r["n_test"] >= 1
    report = _run("report", "--out", str(tmp_path / "rep"), "--results", str(s.RESULTS))
    assert report.returncode == 0, report.stderr
    text = (tmp_path / "rep" / "scale.md").read_text()
    study = [r for r in recs if Path(r["data"]).name in s.STUDY_SETS]
    for r in study:
        group = [
            q
            for q in study
            if (q["task"], q["env"], q["backbone"], q["layer"], q["epochs"], q["patience"])
            == (r["task"], r["env"], r["backbone"], r["layer"], r["epochs"], r["patience"])
        ]
        sched = f"{r['epochs']} / {r['patience']}"
        if r["n_train"] == max(q["n_train"] for q in group):  # the env x head table: the largest n
            row = f"| {r['task']} | {r['backbone']} | L{r['layer']} | {sched} | {r['env']} | {r['n_train']} |"
            assert row in text, row
        if len(group) > 1:  # and every n of the set in the every-n table
            row = f"| {r['task']} | {r['env']} | {r['backbone']} | L{r['layer']} | {sched} | {r['n_train']} |"
            assert row in text.split("### study sets at every n_train")[1], row


def test_the_committed_rows_become_study_directories_with_leaderboards(tmp_path):
    """`to-study`: the committed rows read by `sceneforge study`'s tools: one study directory per
    schedule (a study is one protocol), every head of every row a leaderboard row, the layout
    floors once per dataset and n_train, and `sceneforge study merge` refusing to mix schedules."""
    import pandas as pd

    s = _scale_module()
    recs = [json.loads(x) for x in s.RESULTS.read_text().splitlines()]
    r = _run("to-study", "--out", str(tmp_path / "legacy"))
    assert r.returncode == 0, r.stderr
    schedules = {(q["epochs"], q["patience"]) for q in recs}
    dirs = sorted((tmp_path / "legacy").iterdir())
    assert [d.name for d in dirs] == sorted(f"e{e}_p{p}" for e, p in schedules)
    total = 0
    for d in dirs:
        df = pd.read_csv(d / "leaderboard.csv")
        e, p = (int(x[1:]) for x in d.name.split("_"))
        mine = [q for q in recs if (q["epochs"], q["patience"]) == (e, p)]
        probes = df[df["kind"] != "layout"]
        assert len(probes) == 3 * len(mine)
        total += len(mine)
        for q in mine:
            kind = "random" if "random" in q["backbone"] else "model"
            row = probes[(probes["backbone"] == q["backbone"]) & (probes["env"] == q["env"]) & (probes["task"] == q["task"])]
            row = row[(row["n_train"] == q["n_train"]) & (row["head"] == "efficient") & (row["kind"] == kind)]
            assert list(row["test_acc"]) == [q["heads"]["efficient"]["test"]]
        layout = df[df["kind"] == "layout"]
        assert len(layout) == 3 * len({(Path(q["data"]).name, q["n_train"]) for q in mine})
        assert set(df["data_fingerprint"]) == {f"legacy:{Path(q['data']).name}" for q in mine}
    assert total == len(recs)
    assert len(dirs) > 1  # two schedules: 100 / 10 and 300 / 40
    merge = subprocess.run(
        [sys.executable, "-m", "sceneforge.cli", "study", "merge", *map(str, dirs), "--out", str(tmp_path / "m")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert merge.returncode == 2 and "another protocol" in merge.stderr and merge.stderr.count("\n") == 1, merge.stderr


def test_the_issue46_rerun_is_the_two_study_configs_with_the_rows_it_had():
    """Issue 50 item 6: PLAN's 0.6.0 steps (issue 46 item 5) became study configs, named for 0.7.0's
    default since (benchmarks/studies/default_070*.yaml), run first by `study --root`: the configs
    must load and hold the rows the steps had (SpaRRTa's sizes in all five environments, generate's
    default data, DINOv2-S L9/L12 with its random twin,
    EfficientNet-Lite0 stage 5, 300 epochs / patience 40), and no PLAN step makes those rows twice."""
    from sceneforge.study.config import load_study_config

    s = _scale_module()
    assert [c.name for c in s.STUDIES] == ["default_070.yaml", "default_070_allo.yaml"]
    for config, task, n, n_train in zip(s.STUDIES, ("ego", "allo"), (5000, 10000), (4000, 8000)):
        cfg = load_study_config(config)
        assert tuple(cfg.environments) == s.ENVS and tuple(cfg.tasks) == (task,)
        assert (cfg.n, cfg.seed, tuple(cfg.n_train), cfg.epochs, cfg.patience) == (n, 31, (n_train,), 300, 40)
        assert "camera_policy" not in cfg.data  # generate's default (decorrelated since 0.6.0)
        layers = {b["backbone"]: b["layers"] for b in (e.as_dict() for e in cfg.entries())}
        assert layers["dinov2-s-imgfocus"] == [9, 12] and layers["efficientnet-lite0"] == [5]
        kinds = {(e.backbone, e.kind) for e in cfg.entries()}
        assert ("dinov2-s-imgfocus", "random") in kinds and ("efficientnet-lite0", "random") not in kinds
    assert not [k for k in s.DATASETS if k.endswith(("_060", "_070"))]
    assert not [f for _, f in s.PLAN if "_060" in f or "_070" in f]
