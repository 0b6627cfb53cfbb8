"""The leaderboard's figures draw every layout floor of a cell (source box, target box, all boxes,
with the figure on allo) as labelled lines, and say where features and heads ran; the committed
docs/study leaderboard is the one its committed rows give.

Rows are written in the study's own row format (as `sceneforge study` appends them) and go
through the real leaderboard code: table, markdown, matplotlib figures."""

from __future__ import annotations

import json
import sys

import numpy as np
import pandas as pd
import pytest

from sceneforge.study.leaderboard import figures, floors, table, write_leaderboard
from sceneforge.study.results import FORMAT
from study_helpers import ROOT

ENVS, TASKS = ("desert", "city"), ("ego", "allo")
# layout floors per (env, task): the target box above every model, as on desert ego
FLOOR = {(e, t): {"source": round(0.31 + 0.01 * i, 4), "target": round(0.84 - 0.02 * i, 4), "boxes": round(0.9 - 0.01 * i, 4)}
         for i, (e, t) in enumerate((e, t) for e in ENVS for t in TASKS)}  # fmt: skip


def _cell(acc: float, **extra) -> dict:
    return {"test": acc, "ci": [round(acc - 0.1, 4), round(acc + 0.1, 4)], **extra}


def _rows() -> list[dict]:
    rows = []
    for e in ENVS:
        for t in TASKS:
            base = {"format": FORMAT, "dataset": f"{e}_{t}", "env": e, "task": t, "n_train": 300, "n_val": 40, "n_test": 38,
                    "data_fingerprint": "f" * 16, "protocol": "p" * 16}  # fmt: skip
            boxes = ["source", "target", "human"] if t == "allo" else ["source", "target"]
            heads = {k: _cell(v, boxes=boxes if k == "boxes" else [k]) for k, v in FLOOR[(e, t)].items()}
            rows.append({**base, "kind": "layout", "backbone": "layout", "layer": 0, "heads": heads, "device": "cpu",
                         "precision": "fp64", "train_device": "cpu"})  # fmt: skip
            for bb, kind, acc in (("vit-s", "model", 0.7), ("vit-s-random", "random", 0.4)):
                for layer in (6, 12):
                    a = acc + 0.01 * layer / 6
                    heads = {h: _cell(a, val=a, lr=1e-3, dropout=0.2) for h in ("linear", "abmilp", "efficient")}
                    rows.append({**base, "kind": kind, "backbone": bb, "layer": layer, "heads": heads, "device": "cpu",
                                 "precision": "fp32", **({"train_device": "cpu"} if bb == "vit-s" else {})})  # fmt: skip
    return rows


@pytest.fixture
def df():
    return table(_rows())


def _lines(fig) -> dict[str, list]:
    """label -> the y values (or x, for vertical lines) of every line with that label."""
    out: dict[str, list] = {}
    for ax in fig.axes:
        for line in ax.get_lines():
            xs, ys = np.asarray(line.get_xdata(), dtype=float), np.asarray(line.get_ydata(), dtype=float)
            value = xs[0] if len(set(np.round(xs, 6))) == 1 and len(set(np.round(ys, 6))) > 1 else ys[0]
            out.setdefault(line.get_label(), []).append(round(float(value), 4))
    return out


def _legend(fig) -> set[str]:
    return {
        t.get_text() for leg in fig.legends + [ax.get_legend() for ax in fig.axes if ax.get_legend()] for t in leg.get_texts()
    }


def test_the_bars_draw_every_floor_of_every_cell_labelled(df):
    import matplotlib.pyplot as plt

    figs = {name: fig for _, name, fig in figures(df, "features on cpu (2 threads), heads on cpu (2 threads)", {"allo"})}
    assert set(figs) == {"plots/bars_ego.png", "plots/bars_allo.png", "plots/ego_allo.png", "plots/layers.png"}
    for task in TASKS:
        fig = figs[f"plots/bars_{task}.png"]
        figure = " + figure" if task == "allo" else ""
        legend = _legend(fig)
        assert {"floor: source box", "floor: target box", f"floor: all boxes{figure}", "chance (4 classes)"} <= legend
        assert {"vit-s", "vit-s-random (random init)"} <= legend
        lines = _lines(fig)
        for box, label in (
            ("source", "floor: source box"),
            ("target", "floor: target box"),
            ("boxes", f"floor: all boxes{figure}"),
        ):
            want = sorted(FLOOR[(e, task)][box] for e in ENVS)
            # one segment per env in each of the three head panels (the first carries the label)
            assert sorted(set(lines[label])) == want, (task, box, lines)
        assert "heads on cpu" in fig._suptitle.get_text() and "features on cpu" in fig._suptitle.get_text()
    # the target floor is drawn above every bar of the ego panel: the chart shows what it must
    ego = figs["plots/bars_ego.png"]
    tallest = max(p.get_height() for ax in ego.axes for p in ax.patches)
    assert min(FLOOR[(e, "ego")]["target"] for e in ENVS) > tallest
    # ego vs allo: the floors (mean of envs) as vertical (ego) and horizontal (allo) lines
    lines = _lines(figs["plots/ego_allo.png"])
    assert lines["ego floor: target box"] == [round(np.mean([FLOOR[(e, "ego")]["target"] for e in ENVS]), 4)]
    assert lines["allo floor: all boxes + figure"] == [round(np.mean([FLOOR[(e, "allo")]["boxes"] for e in ENVS]), 4)]
    # layer curves: the floors of each task beside the curves
    lines = _lines(figs["plots/layers.png"])
    assert lines["floor: target box"] == [round(np.mean([FLOOR[(e, t)]["target"] for e in ENVS]), 4) for t in TASKS]
    assert lines["floor: all boxes + figure"] == [round(np.mean([FLOOR[(e, "allo")]["boxes"] for e in ENVS]), 4)]
    for fig in figs.values():
        plt.close(fig)


def test_floors_are_taken_at_the_bars_train_size(df):
    more = pd.concat([df, df[df["kind"] == "layout"].assign(n_train=100, test_acc=0.1)], ignore_index=True)
    wide = floors(more, "ego")
    assert wide.loc["desert", "target"] == FLOOR[("desert", "ego")]["target"]  # n_train 300, not the 100-row floor


def test_the_leaderboard_names_where_features_and_heads_ran(tmp_path):
    rows = _rows()
    (tmp_path / "results.jsonl").write_text("".join(json.dumps(r, sort_keys=True) + "\n" for r in rows))
    (tmp_path / "study.json").write_text(json.dumps({"format": FORMAT, "device": "cpu (2 threads)", "protocol": {}}))
    out = write_leaderboard(tmp_path, say=lambda _: None)
    csv = pd.read_csv(tmp_path / "leaderboard.csv")
    assert list(csv.columns[:10]) == [
        "backbone",
        "kind",
        "env",
        "task",
        "layer",
        "head",
        "n_train",
        "test_acc",
        "ci_low",
        "ci_high",
    ]
    assert csv.columns[-1] == "train_device" and set(csv["train_device"]) == {"cpu"}  # a row without one: heads on the CPU
    assert len(out) == len(csv)
    assert "Features on cpu (2 threads), heads on cpu (2 threads)." in (tmp_path / "leaderboard.md").read_text()
    assert "heads on cpu" in (tmp_path / "leaderboard.html").read_text()
    assert (tmp_path / "plots" / "bars_allo.png").stat().st_size > 0


def test_a_row_missing_an_env_has_no_mean_and_no_empty_bold(tmp_path):
    """A study still running (its rows committed as they come) has model rows without every env:
    their mean cell is empty, never ``****`` (markdown's empty bold, shown as four asterisks)."""
    rows = [r for r in _rows() if not (r["backbone"] == "vit-s" and r["layer"] == 12 and r["env"] == "city")]
    (tmp_path / "results.jsonl").write_text("".join(json.dumps(r, sort_keys=True) + "\n" for r in rows))
    (tmp_path / "study.json").write_text(json.dumps({"format": FORMAT, "device": "cpu (2 threads)", "protocol": {}}))
    write_leaderboard(tmp_path, say=lambda _: None)
    md = (tmp_path / "leaderboard.md").read_text()
    assert "****" not in md
    partial = [x for x in md.splitlines() if x.startswith("| vit-s | model | L12 |")]
    full = [x for x in md.splitlines() if x.startswith("| vit-s | model | L6 |")]
    assert partial and all(x.split(" | ")[-2] == "" for x in partial)  # desert only: no mean
    assert full and all(x.split(" | ")[-2].startswith("**") for x in full)  # both envs: the bold mean


def test_layer_curves_of_a_study_still_running_average_the_same_envs_at_every_layer():
    """vit-s L12 missing on city ego: its ego curves average desert alone at both layers (not
    desert + city at L6 against desert at L12) and say "1 of 2 envs"; complete curves keep both."""
    import matplotlib.pyplot as plt

    rows = _rows()
    for r in rows:  # city ego: a harder environment, its L6 far below desert's
        if r["env"] == "city" and r["task"] == "ego" and r["kind"] != "layout":
            r["heads"] = {h: {**c, **_cell(round(c["test"] - 0.3, 4))} for h, c in r["heads"].items()}
    rows = [r for r in rows if not (r["backbone"] == "vit-s" and r["layer"] == 12 and r["env"] == "city" and r["task"] == "ego")]
    figs = {name: fig for _, name, fig in figures(table(rows), "cpu", {"allo"})}
    ego = figs["plots/layers.png"].axes[0]
    curves = {line.get_label(): list(np.round(line.get_ydata(), 4)) for line in ego.get_lines()}
    desert = {layer: round(0.7 + 0.01 * layer / 6, 4) for layer in (6, 12)}
    assert curves["vit-s efficient (1 of 2 envs)"] == [desert[6], desert[12]]
    both = [round(np.mean([0.4 + 0.01 * layer / 6, 0.4 + 0.01 * layer / 6 - 0.3]), 4) for layer in (6, 12)]
    assert curves["vit-s-random efficient"] == both
    # a backbone run in one environment so far: its curve says so
    alone = [r for r in rows if not (r["backbone"] == "vit-s-random" and r["env"] == "city")]
    figs2 = {name: fig for _, name, fig in figures(table(alone), "cpu", {"allo"})}
    labels = {line.get_label() for line in figs2["plots/layers.png"].axes[0].get_lines()}
    assert "vit-s-random efficient (1 of 2 envs)" in labels and "vit-s abmilp (1 of 2 envs)" in labels
    figs.update({f"2{k}": v for k, v in figs2.items()})
    for fig in figs.values():
        plt.close(fig)


def test_the_committed_study_leaderboard_is_what_its_committed_rows_give(tmp_path):
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import study_docs
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    assert {"study_desert_ego_reduced", "study_desert_ego"} <= set(study_docs.STUDIES)
    for name, (md_name, _) in study_docs.STUDIES.items():
        out = study_docs.rebuild(name, tmp_path)
        committed = (ROOT / "docs" / "study" / f"{md_name}.md").read_text()
        assert study_docs.markdown(out) == committed
        assert "layout: target box" in committed and "heads on cpu" in committed
    # a changed row gives another page: the check can fail (on the reduced study's rows)
    out = tmp_path / "study_desert_ego_reduced"
    committed = (ROOT / "docs" / "study" / "validation_desert_ego_reduced.md").read_text()
    rows = (out / "results.jsonl").read_text().replace('"test": 0.8421', '"test": 0.8', 1)
    assert rows != (out / "results.jsonl").read_text()
    (out / "results.jsonl").write_text(rows)
    from sceneforge.study.run import report

    report(out, say=lambda _: None)
    assert study_docs.markdown(out) != committed
