"""The disk a study needs: `--plan` states it (datasets, the feature cache per backbone x dataset,
exact from the cache format, against the free space), the run refuses a unit whose features do not
fit before writing any of it, and `keep_features: false` deletes each unit's features once its rows
are written, giving the same rows byte for byte in about one unit's space.

Real studies on a real small file system (a tmpfs, tests/conftest.py's `small_disk_of`): the tiny
two-backbone study of study_helpers with wider tokens (64 + 1 tokens x 384 per image, ~2.4 MB per
(backbone, dataset) unit, 8 units), so that one unit fits the small disk and all of them do not."""

from __future__ import annotations

import json

import pytest

from sceneforge.probing.features import BLOCK, entry_bytes, open_layer
from sceneforge.study.config import load_study_config
from sceneforge.study.plan import format_plan, plan_study
from sceneforge.study.run import gb
from study_helpers import BACKBONES, make_data, run_study, write_config

WIDE = {"img_size": 64, "patch_size": 8, "embed_dim": 384, "num_heads": 2}
WIDE_BACKBONES = [dict(b, model_args={**WIDE, "depth": b["model_args"]["depth"]}) for b in BACKBONES]
UNIT = entry_bytes(48, 64, 1, 384)  # one layer of one dataset's 48 images: one unit's features
UNITS = 2 * 4


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """The study on a normal disk, features kept (the default): the rows every other run must give."""
    tmp = tmp_path_factory.mktemp("disk")
    datasets = make_data(tmp / "data")
    cfg = write_config(tmp / "study.yaml", datasets, backbones=WIDE_BACKBONES, reports=False)
    out = tmp / "out"
    r = run_study(str(cfg), "--out", str(out), "--quiet")
    assert r.returncode == 0, r.stderr
    return datasets, out


def _entries(out):
    cache = out / "cache"
    return sorted(p for p in cache.iterdir()) if cache.is_dir() else []


def test_keep_features_false_gives_the_same_rows_in_one_units_space(reference, small_disk_of, tmp_path):
    datasets, ref = reference
    assert len(_entries(ref)) == UNITS  # kept: every unit's features
    disk = small_disk_of("6m")  # one unit (2.4 MB + 1 MiB margin) fits, the 8 (19.6 MB) do not
    out = disk / "out"
    # with run reports: they and the leaderboard are made from rows and records, never from features
    cfg = write_config(tmp_path / "study.yaml", datasets, backbones=WIDE_BACKBONES, keep_features=False)
    r = run_study(str(cfg), "--out", str(out), "--quiet")
    assert r.returncode == 0, r.stderr
    assert (out / "results.jsonl").read_bytes() == (ref / "results.jsonl").read_bytes()
    assert _entries(out) == []  # every unit's features deleted once its rows were written
    assert r.stdout.count("features deleted") == UNITS
    assert (out / "leaderboard.html").is_file() and len(list((out / "runs").glob("*/report.html"))) == UNITS
    r = run_study("report", str(out))  # the leaderboard again, later, without features
    assert r.returncode == 0, r.stderr
    # where each unit's features went and their shape: recorded for the plan
    extracts = [json.loads(x) for x in (out / "timings.jsonl").read_text().splitlines() if '"extract"' in x]
    assert len(extracts) == UNITS and all(t["shapes"] == {"2": [64, 1, 384]} and set(t["cache"]) == {"2"} for t in extracts)


def test_a_unit_that_does_not_fit_stops_the_study_in_one_line_before_writing_it(reference, small_disk_of, tmp_path):
    datasets, ref = reference
    disk = small_disk_of("6m")
    out = disk / "out"
    cfg = write_config(tmp_path / "study.yaml", datasets, backbones=WIDE_BACKBONES, reports=False)
    r = run_study(str(cfg), "--out", str(out), "--quiet")
    assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
    err = r.stderr
    assert f"--out {out}: not enough disk for the features of vit-a on" in err, err
    assert "MB (+ 1.0 MB margin)" in err and "MB free" in err and "keep_features: false" in err, err
    entries = _entries(out)
    assert 1 <= len(entries) < UNITS  # the units before it, each complete; nothing of the refused one
    for e in entries:
        assert not e.name.startswith("."), e  # no temporary directory left
        open_layer(e, 48)
    rows = [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines()]
    assert sum(x["kind"] == "random" for x in rows) == len(entries)  # exactly the units whose features are there
    assert (ref / "results.jsonl").read_text().startswith((out / "results.jsonl").read_text())

    # the plan of the rest says so, and what would fit
    plan = format_plan(plan_study(load_study_config(cfg), out))
    assert "does not fit" in plan and "set keep_features: false" in plan, plan

    # as the line says: keep_features false; the run first deletes the finished units' features
    # (their keys are in timings.jsonl), then goes on one unit at a time, to the same rows
    cfg = write_config(tmp_path / "study.yaml", datasets, backbones=WIDE_BACKBONES, reports=False, keep_features=False)
    plan = format_plan(plan_study(load_study_config(cfg), out))
    assert "does not fit" not in plan and "of finished units' features the run deletes first" in plan, plan
    r = run_study(str(cfg), "--out", str(out), "--quiet")
    assert r.returncode == 0, r.stderr
    assert (out / "results.jsonl").read_bytes() == (ref / "results.jsonl").read_bytes()
    assert _entries(out) == []


def test_a_deletion_killed_midway_resumes_to_the_same_rows(reference, tmp_path):
    """keep_features false renames an entry to .trash-<key>-<pid> (atomic) before removing it: a
    kill in between leaves trash, never an entry that looks complete; the next start sweeps it."""
    datasets, ref = reference
    cfg = write_config(tmp_path / "study.yaml", datasets, backbones=WIDE_BACKBONES[:1], reports=False, keep_features=False)
    out = tmp_path / "out"
    assert run_study(str(cfg), "--out", str(out), "--quiet").returncode == 0
    first = (out / "results.jsonl").read_bytes()
    key = json.loads((out / "timings.jsonl").read_text().splitlines()[0])["cache"]["2"]
    trash = out / "cache" / f".trash-{key}-999999"  # what the kill left: half of an entry, renamed
    trash.mkdir()
    (trash / "prefix.npy").write_bytes(b"\x93NUMPY")
    r = run_study(str(cfg), "--out", str(out), "--quiet")
    assert r.returncode == 0, r.stderr
    assert (out / "results.jsonl").read_bytes() == first and _entries(out) == []
    assert "features of" not in r.stdout  # nothing extracted again: every row was written
    ref_rows = (ref / "results.jsonl").read_text().splitlines()
    assert set(first.decode().splitlines()) <= set(ref_rows)


def test_the_plan_states_the_disk_exactly_and_counts_what_is_cached(reference, tmp_path):
    datasets, ref = reference
    cfg = write_config(tmp_path / "study.yaml", datasets, backbones=WIDE_BACKBONES, reports=False)
    # a fresh directory: the shapes from the architecture (no weights), exactly what the run wrote
    plan = plan_study(load_study_config(cfg), tmp_path / "fresh")
    assert not (tmp_path / "fresh").exists()
    on_disk = {e.name: sum(-(-f.stat().st_size // BLOCK) * BLOCK for f in e.iterdir()) for e in _entries(ref)}
    assert set(on_disk.values()) == {UNIT}
    for b in plan.backbones:
        assert b.features == {name.split("/")[-1]: UNIT for name in datasets} and b.shapes == {2: (64, 1, 384)}
        assert "architecture" in b.shape_source
    assert plan.disk_features() == UNITS * UNIT and plan.disk_data() == 0  # the datasets exist already
    text = format_plan(plan)
    assert f"feature cache: {gb(4 * UNIT)} to write (desert_ego {gb(UNIT)}, " in text and "64 + 1 tokens x 384" in text, text
    assert f"disk: {gb(UNITS * UNIT)} to write = datasets 0.0 MB + features {gb(UNITS * UNIT)}" in text, text
    # keep_features false: only the largest unit's features count
    lean = plan_study(load_study_config(cfg, ["keep_features=false"]), tmp_path / "fresh")
    assert lean.disk_features() == UNIT and "(keep_features false: one unit's at a time)" in format_plan(lean)
    # the finished study: nothing to write
    assert plan_study(load_study_config(cfg), ref).disk_total() == 0
    # a smaller n_train beside the done one: rows to run, but their features are cached already
    more = plan_study(load_study_config(cfg, ["n_train=[12, 24]"]), ref)
    assert [b.rows_todo for b in more.backbones] == [4, 4]
    for b in more.backbones:
        assert set(b.features.values()) == {0} and b.features_there == 4 * UNIT
        assert "timings.jsonl" in b.shape_source  # measured by the run
    assert more.disk_total() == 0


@pytest.mark.slow  # a local Ray cluster starts in ~1 min on the shared 2-core machine
def test_on_ray_a_unit_that_does_not_fit_is_one_line_too(reference, small_disk_of, tmp_path):
    datasets, _ = reference
    out = small_disk_of("6m") / "out"
    cfg = write_config(tmp_path / "study.yaml", datasets, backbones=WIDE_BACKBONES, reports=False)
    r = run_study(str(cfg), "--out", str(out), "--backend", "ray", "--quiet", timeout=900)
    assert r.returncode == 2, r.stderr
    ours = [line for line in r.stderr.splitlines() if "sceneforge" in line or "Traceback" in line or "rror" in line]
    assert len(ours) == 1 and "not enough disk for the features of" in ours[0] and "keep_features: false" in ours[0], r.stderr
    for e in _entries(out):  # the other units were stopped: complete entries only, no temporary directory
        assert not e.name.startswith("."), e
        open_layer(e, 48)
