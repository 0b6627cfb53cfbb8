"""Layout baselines (probing/layout.py) on tables whose answer is known, and in the report."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from sceneforge.probing.data import CLASSES
from sceneforge.probing.layout import BOX_SETS, layout_baselines

# the probing tests' helpers, imported at collection (as test_cli_report does): inside a test,
# "conftest" is whichever conftest.py pytest loaded last (tests/renderfarm's in a full run)
from conftest import make_image_dataset
from test_cli_report import probe_args

SPLIT = {"train": np.arange(1600), "val": np.arange(1600, 1800), "test": np.arange(1800, 2000)}


def boxes_table(label_rule, n: int = 2000, with_human: bool = True, seed: int = 0) -> pd.DataFrame:
    """Random 224² boxes of source, target (and figure); labels from ``label_rule(a, b, c)`` where
    a, b, c say whether the source, target, figure centre is in the right half of the image."""
    rng = np.random.default_rng(seed)
    cols, halves = {}, []
    for obj in ("source", "target", "human"):
        side = rng.integers(8, 40, n)
        x0, y0 = rng.integers(0, 224 - side), rng.integers(0, 224 - side)
        cx = x0 + (side - 1) / 2
        halves.append(cx > 111.5)
        present = with_human or obj != "human"
        for k, v in (("x0", x0), ("y0", y0), ("x1", x0 + side - 1), ("y1", y0 + side - 1)):
            cols[f"{obj}_bbox_{k}"] = v.astype(float) if present else np.full(n, np.nan)
    labels = label_rule(*halves, rng)
    split = np.empty(n, dtype=object)
    for name, rows in SPLIT.items():
        split[rows] = name
    return pd.DataFrame(
        {"label": [CLASSES[i] for i in labels], "split": split, "camera_width": 224, "camera_height": 224, **cols}
    )


def test_labels_made_from_the_boxes_are_recovered_as_computed_by_hand():
    """label = 2·[source right] + ([target right] XOR [figure right]). By hand: the source box
    alone fixes the first bit → Bayes accuracy 0.5; the target box alone tells nothing (the XOR
    with an unseen figure is a fair coin) → 0.25; all three boxes → 1.0. Needs the figure in
    'boxes', and a non-linear model: XOR defeats any logistic model."""
    table = boxes_table(lambda a, b, c, rng: 2 * a + (b ^ c))
    out = layout_baselines(table, SPLIT)
    assert set(out) == set(BOX_SETS) and out["boxes"].boxes == ("source", "target", "human")
    assert out["boxes"].acc >= 0.9, out
    assert out["source"].ci_lo <= 0.5 <= out["source"].ci_hi and abs(out["source"].acc - 0.5) < 0.1, out
    assert out["target"].ci_lo <= 0.25 <= out["target"].ci_hi, out
    assert out["source"].n_test == 200 and out["source"].ci_lo < out["source"].acc < out["source"].ci_hi
    # the figure's box alone: by hand the same as the target's (the XOR with an unseen target box)
    assert out["figure"].boxes == ("human",) and out["figure"].ci_lo <= 0.25 <= out["figure"].ci_hi, out


def test_the_figure_box_alone_is_a_baseline_of_its_own_on_allo():
    """label = 2·[figure right] + [source right]: the figure alone fixes the first bit → 0.5 by
    hand, as the source alone; the target alone says nothing → 0.25. On ego rows (no figure) there
    is no figure baseline at all, not a chance-level one."""
    out = layout_baselines(boxes_table(lambda a, b, c, rng: 2 * c + a), SPLIT)
    assert abs(out["figure"].acc - 0.5) < 0.1 and out["figure"].ci_lo <= 0.5 <= out["figure"].ci_hi, out
    assert out["target"].ci_lo <= 0.25 <= out["target"].ci_hi and out["boxes"].acc >= 0.9, out
    ego = layout_baselines(boxes_table(lambda a, b, c, rng: 2 * a + b, with_human=False), SPLIT)
    assert set(ego) == {"source", "target", "boxes"}


def test_random_labels_give_chance():
    table = boxes_table(lambda a, b, c, rng: rng.integers(0, 4, len(a)))
    for name, b in layout_baselines(table, SPLIT).items():
        assert b.ci_lo <= 0.25 <= b.ci_hi, (name, b)


def test_ego_has_no_figure_box_and_both_boxes_decide():
    """Ego rows have empty figure columns: 'boxes' is then source + target only."""
    table = boxes_table(lambda a, b, c, rng: 2 * a + b, with_human=False)
    out = layout_baselines(table, SPLIT)
    assert out["boxes"].boxes == ("source", "target") and out["boxes"].acc >= 0.9
    assert abs(out["source"].acc - 0.5) < 0.1 and abs(out["target"].acc - 0.5) < 0.1


def test_deterministic_and_none_without_box_columns():
    table = boxes_table(lambda a, b, c, rng: 2 * a + b)
    assert layout_baselines(table, SPLIT) == layout_baselines(table, SPLIT)
    assert layout_baselines(table[["label", "split"]], SPLIT) == {}


@pytest.fixture(scope="module")
def reported(tmp_path_factory):
    from sceneforge.cli import main

    root = tmp_path_factory.mktemp("layout")
    data = make_image_dataset(root / "data", envs=("desert",), tasks=("ego",), n=(48, 24, 24))
    assert main(probe_args(data, root / "runs" / "a", "--heads", "linear", "--epochs", "1")) == 0
    return root


def test_probe_writes_layout_and_the_report_shows_it_next_to_each_cell(reported, capsys):
    from sceneforge.cli import main

    out = reported / "runs" / "a"
    rows = [json.loads(line) for line in (out / "layout.jsonl").read_text().splitlines()]
    # ego data: every set but the figure's alone (ego has no figure)
    assert {r["features"] for r in rows} == set(BOX_SETS) - {"figure"} and all(r["n_test"] == 24 for r in rows)
    by = {r["features"]: r for r in rows}
    assert by["source"]["acc"] >= 0.9  # the fixture's source box is the square that sets the label
    s = pd.read_csv(out / "summary.csv")
    assert s["layout_source"].iloc[0] == pytest.approx(by["source"]["acc"], abs=1e-4)
    assert {"layout_target_lo", "layout_boxes_hi"} <= set(s.columns)
    page = (out / "report.html").read_text()
    assert "layout source" in page and f"{by['source']['acc']:.3f} [" in page
    assert main(["probe-report", str(reported / "runs"), "--min-test", "0"]) == 0
    printed = capsys.readouterr().out
    assert "layout boxes" in printed and f"{by['target']['acc']:.3f} [" in printed


def test_old_runs_get_layout_recomputed_or_a_warning(reported, caplog):
    from sceneforge.probing.report import write_report

    out = reported / "runs" / "a"
    before = (out / "layout.jsonl").read_text()
    (out / "layout.jsonl").unlink()  # a run from before layout.jsonl existed
    write_report(reported / "runs", min_test=0)
    s = pd.read_csv(reported / "runs" / "summary.csv")
    assert s["layout_source"].iloc[0] == pytest.approx(json.loads(before.splitlines()[0])["acc"], abs=1e-4)
    (reported / "data" / "desert_ego" / "metadata.parquet").rename(reported / "gone.parquet")
    (reported / "data" / "desert_ego" / "metadata.csv").rename(reported / "gone.csv")
    write_report(reported / "runs", min_test=0)
    assert s.shape[0] == pd.read_csv(reported / "runs" / "summary.csv").shape[0]
    assert pd.read_csv(reported / "runs" / "summary.csv")["layout_source"].isna().all()
    assert "no layout baselines" in (reported / "runs" / "report.html").read_text()


@pytest.mark.filterwarnings("error::RuntimeWarning")
def test_ego_and_allo_in_one_table_no_warning_and_ego_boxes_without_the_figure():
    """Issue 47 item 5: a probe's table holds ego rows (no figure box) beside allo rows (with one).
    The ego group's baselines used to standardise the all-empty figure column on its train rows
    (numpy's "Mean of empty slice" and "Degrees of freedom <= 0" on every ego+allo probe) and its
    "boxes" baseline named the figure it never saw. Any RuntimeWarning fails this test (and
    pyproject's filterwarnings turns one raised in probing/layout.py into an error everywhere)."""
    allo = boxes_table(lambda a, b, c, rng: 2 * a + (b ^ c))
    ego = boxes_table(lambda a, b, c, rng: 2 * a + b, with_human=False, seed=1)
    table = pd.concat([allo, ego], ignore_index=True)
    ego_idx = {k: v + len(allo) for k, v in SPLIT.items()}
    out = layout_baselines(table, ego_idx)
    assert out["boxes"].boxes == ("source", "target") and out["boxes"].acc >= 0.9, out
    assert layout_baselines(table, SPLIT)["boxes"].boxes == ("source", "target", "human")


@pytest.mark.filterwarnings("error::RuntimeWarning")
def test_standardise_a_column_with_one_or_no_train_value_is_quiet_and_finite():
    from sceneforge.probing.layout import _standardise

    x = np.array([[1.0, np.nan, 5.0], [3.0, np.nan, np.nan], [2.0, 7.0, np.nan]])
    z = _standardise(x, np.array([0, 1]))
    assert np.isfinite(z).all()
    assert np.allclose(z[:, 0], [-1.0, 1.0, 0.0]) and np.allclose(z[:, 1], [0.0, 0.0, 7.0]) and np.allclose(z[:, 2], [0, 0, 0])
