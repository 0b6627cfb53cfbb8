"""Run records → JSONL/CSV, summary tables, plots and one HTML page.

``sceneforge probe`` writes ``runs.jsonl`` + ``runs.csv`` (every grid point: backbone, layer, head,
lr, dropout, protocol, env, task, seed, val/test accuracy, per-class accuracy, confusion matrix)
and calls :func:`write_report`; ``sceneforge probe-report ROOT`` calls it on a directory holding
any number of run directories, so several backbones/jobs end up in one table.

Summary rows are the *selected* configurations (best val accuracy per grid), aggregated over seeds:
``test_mean ± test_std`` over ``n_runs``, next to the layout baselines of their (protocol, env,
task) split (``layout.jsonl``, :mod:`probing.layout`: what the 2-D boxes alone reach). Every file
is written to a temp name and renamed.
"""

from __future__ import annotations

import html
import io
import json
import logging
import os
from pathlib import Path

import numpy as np
import pandas as pd

from sceneforge.core.atomic import atomic_write_bytes, atomic_write_text
from sceneforge.core.errors import ConfigError
from sceneforge.probing.data import read_tables
from sceneforge.probing.groups import make_groups
from sceneforge.probing.layout import group_layout
from sceneforge.probing.stats import MIN_TEST, Z95, wilson_ci  # noqa: F401  (re-exported: reports use them)

log = logging.getLogger(__name__)
KEYS = ["run", "backbone", "layer", "head", "protocol", "env", "task"]  # run: dir below the report root


def atomic_write_npz(path: Path, **arrays) -> None:
    buf = io.BytesIO()
    np.savez_compressed(buf, **arrays)
    atomic_write_bytes(path, buf.getvalue())


def write_runs(out: Path, records: list[dict], info: dict) -> None:
    """``runs.jsonl`` (exact), ``runs.csv`` (lists as JSON text), ``run_info.json`` (timings and
    cache keys: the only output that differs between two identical runs)."""
    out = Path(out)
    atomic_write_text(out / "runs.jsonl", "".join(json.dumps(r, sort_keys=True) + "\n" for r in records))
    df = pd.DataFrame(records)
    for col in ("per_class_acc", "confusion"):
        df[col] = [json.dumps(v) for v in df[col]]
    atomic_write_text(out / "runs.csv", df.to_csv(index=False))
    atomic_write_text(out / "run_info.json", json.dumps(info, indent=1, default=str))


def write_layout(out: Path, records: list[dict]) -> None:
    """``layout.jsonl``: the layout baselines of this run's groups (:func:`probing.layout.group_layout`)."""
    atomic_write_text(Path(out) / "layout.jsonl", "".join(json.dumps(r, sort_keys=True) + "\n" for r in records))


def load_layout(runs: pd.DataFrame) -> pd.DataFrame:
    """Layout baseline records of every run directory in ``runs`` (column ``run`` added).

    Read from ``layout.jsonl``; a run written before that file existed gets them recomputed from
    its dataset (the ``data`` path in its records) when that is still readable, else none (the
    report says so)."""
    frames = []
    for (run_dir, run), g in runs.groupby(["run_dir", "run"], sort=True):
        f = Path(run_dir) / "layout.jsonl"
        if f.is_file():
            rows = [json.loads(line) for line in f.read_text().splitlines() if line.strip()]
        else:
            rows = _recompute_layout(g)
        if rows:
            frames.append(pd.DataFrame(rows).assign(run=run))
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def _recompute_layout(runs: pd.DataFrame) -> list[dict]:
    data = str(runs["data"].iloc[0]) if "data" in runs else ""
    try:
        table = read_tables(data)
        groups = make_groups(table, tuple(sorted(runs["protocol"].unique())))
    except (ConfigError, OSError) as e:
        log.warning("%s: no layout.jsonl and its dataset is not readable (%s): no layout baselines", runs["run_dir"].iloc[0], e)
        return []
    log.info("%s: layout baselines recomputed from %s", runs["run_dir"].iloc[0], data)
    return group_layout(table, groups)


LAYOUT_SETS = ("source", "target", "boxes", "figure")  # figure: allo only


def attach_layout(summary: pd.DataFrame, layout: pd.DataFrame) -> pd.DataFrame:
    """``layout_<set>`` (test accuracy) and ``layout_<set>_lo/_hi`` (95% Wilson) columns per
    summary row, from the baseline of its (run, protocol, env, task); NaN where there is none."""
    cols = [f"layout_{k}{x}" for k in LAYOUT_SETS for x in ("", "_lo", "_hi")]
    if layout.empty:
        return summary.assign(**{c: np.nan for c in cols})
    wide = layout.pivot_table(
        index=["run", "protocol", "env", "task"], columns="features", values=["acc", "ci_lo", "ci_hi"], aggfunc="first"
    )
    flat = pd.DataFrame(index=wide.index)
    for k in LAYOUT_SETS:
        for src, x in (("acc", ""), ("ci_lo", "_lo"), ("ci_hi", "_hi")):
            flat[f"layout_{k}{x}"] = wide[(src, k)] if (src, k) in wide else np.nan
    return summary.merge(flat.reset_index(), on=["run", "protocol", "env", "task"], how="left")


def load_runs(root: str | Path) -> pd.DataFrame:
    """All ``runs.jsonl`` at or below ``root`` as one table (columns ``run_dir``, ``run`` added)."""
    root = Path(root)
    if not root.is_dir():
        raise ConfigError(f"probe-report {root}: not a directory")
    frames = []
    for f in sorted(root.rglob("runs.jsonl")):
        rows = [json.loads(line) for line in f.read_text().splitlines() if line.strip()]
        if rows:
            frames.append(pd.DataFrame(rows).assign(run_dir=str(f.parent), run=os.path.relpath(f.parent, root)))
    if not frames:
        raise ConfigError(f"probe-report {root}: no runs.jsonl found (run `sceneforge probe` first)")
    return pd.concat(frames, ignore_index=True)


def summarize(runs: pd.DataFrame) -> pd.DataFrame:
    """Best (val-selected) configuration per run/backbone/layer/head/protocol/env/task, mean ± std
    over seeds. Separate probe jobs stay separate rows even when their keys coincide."""
    sel = runs[runs["selected"]]
    agg = sel.groupby(KEYS, sort=True).agg(
        test_mean=("test_acc", "mean"),
        test_std=("test_acc", lambda s: float(np.std(s, ddof=0))),
        val_mean=("val_acc", "mean"),
        n_runs=("test_acc", "size"),
        lr=("lr", "first"),
        dropout=("dropout", "first"),
        n_test=("n_test", "first"),
    )
    agg = agg.reset_index()
    lo, hi = [], []
    for _, g in sel.groupby(KEYS, sort=True):
        a, b = wilson_ci(float(g["test_acc"].mean()), int(g["n_test"].min()))
        lo.append(a)
        hi.append(b)
    agg["ci_lo"], agg["ci_hi"] = lo, hi
    return agg


SMALL_TEST = 100  # below this many test images a 95% CI is wider than ±~0.1 around 0.5: a warning


def _images(n: int) -> str:
    return f"{n} test image" + ("" if n == 1 else "s")


def small_splits(summary: pd.DataFrame) -> list[str]:
    """One warning line per (protocol, env, task) whose test split is too small to mean much,
    with the widest 95% interval among its rows."""
    out = []
    for (protocol, env, task), g in summary.groupby(["protocol", "env", "task"], sort=True):
        n = int(g["n_test"].min())
        if n < SMALL_TEST:
            w = (g["ci_hi"] - g["ci_lo"]).to_numpy(float)
            i = int(np.argmax(w))
            out.append(
                f"{protocol} {env}/{task}: only {_images(n)}: 95% CI of the accuracy up to "
                f"{w[i]:.2f} wide ([{g['ci_lo'].iloc[i]:.2f}, {g['ci_hi'].iloc[i]:.2f}]); "
                "differences smaller than that mean nothing"
            )
    return out


def missing_layout(summary: pd.DataFrame) -> list[str]:
    """One line per run whose cells have no layout baselines (tables without box columns, or an
    old run whose dataset is gone)."""
    gone = summary[summary["layout_boxes"].isna()]
    return [
        f"{run}: no layout baselines (the dataset's table has no *_bbox_* columns, or it is no longer "
        "readable): the probe's accuracy cannot be compared with what the boxes alone give"
        for run in sorted(gone["run"].unique())
    ]


def format_layout(row) -> dict[str, str]:
    """'0.588 [0.52, 0.65]' per layout set of one summary row ('–' where missing)."""
    return {
        f"layout {k}": (
            "–"
            if pd.isna(row[f"layout_{k}"])
            else f"{row[f'layout_{k}']:.3f} [{row[f'layout_{k}_lo']:.2f}, {row[f'layout_{k}_hi']:.2f}]"
        )
        for k in LAYOUT_SETS
    }


def text_table(summary: pd.DataFrame) -> str:
    """The summary as fixed-width text (what ``probe`` and ``probe-report`` print): each cell's
    test accuracy and CI next to its layout baselines."""
    rows = [
        {
            "backbone": r.backbone,
            "layer": r.layer,
            "head": r.head,
            "protocol": r.protocol,
            "env": r.env,
            "task": r.task,
            "test [95% CI]": f"{r.test_mean:.3f} [{r.ci_lo:.2f}, {r.ci_hi:.2f}]",
            "n_test": r.n_test,
            **format_layout(r._asdict()),
        }
        for r in summary.itertuples(index=False)
    ]
    return pd.DataFrame(rows).to_string(index=False)


def check_min_test(sizes, min_test: int, command: str) -> None:
    """Refuse (one :class:`ConfigError` line) when a (protocol, env, task) has fewer than
    ``min_test`` test images. ``sizes``: (protocol, env, task, n_test) tuples. The line names the
    smallest group and the ``--min-test`` value that would let every group through."""
    small = sorted({s for s in sizes if int(s[3]) < min_test}, key=lambda s: (int(s[3]), s[:3]))
    if not small:
        return
    protocol, env, task, n = small[0]
    lo, hi = wilson_ci(0.5, int(n))
    k = len(small) - 1
    more = f" (and {k} more group{'s' if k > 1 else ''} below {min_test})" if k else ""
    raise ConfigError(
        f"{command}: {protocol} {env}/{task} has only {_images(int(n))}{more}, fewer than the "
        f"{min_test} a report needs (95% CI at 0.5 accuracy: [{lo:.2f}, {hi:.2f}]); generate "
        f"more data, or pass --min-test {int(n)} to report anyway"
    )


def layer_head_tables(summary: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """Per backbone: test accuracy (mean over envs/tasks, within protocol if present), layer × head."""
    within = summary[summary["protocol"] == "within"]
    s = within if len(within) else summary
    return {
        bb: g.pivot_table(index="layer", columns="head", values="test_mean", aggfunc="mean")
        for bb, g in s.groupby("backbone", sort=True)
    }


def write_report(root: str | Path, min_test: int = MIN_TEST) -> Path:
    """summary.csv/json/txt, plots/*.png and report.html under ``root``; returns the HTML path.

    Refuses (:class:`ConfigError`, nothing written) when a (protocol, env, task) has fewer than
    ``min_test`` test images (:func:`check_min_test`; 0 reports anything)."""
    from sceneforge.probing import plots  # matplotlib: only when a report is drawn

    root = Path(root)
    runs = load_runs(root)
    check_min_test(
        runs[["protocol", "env", "task", "n_test"]].itertuples(index=False, name=None), min_test, f"probe-report {root}"
    )
    summary = attach_layout(summarize(runs), load_layout(runs))
    atomic_write_text(root / "summary.csv", summary.to_csv(index=False, float_format="%.4f"))
    atomic_write_text(root / "summary.json", summary.to_json(orient="records", indent=1))
    figures = plots.make_all(runs, summary, root, root / "plots")
    small, no_layout = small_splits(summary), missing_layout(summary)
    for w in small:
        log.warning("small split: %s", w)
    for w in no_layout:
        log.warning("%s", w)
    warnings = small + no_layout
    atomic_write_text(root / "summary.txt", text_table(summary) + "\n")
    page = _html(summary, figures, root, warnings)
    atomic_write_text(root / "report.html", page)
    log.info("report: %s (%d runs, %d summary rows)", root / "report.html", len(runs), len(summary))
    return root / "report.html"


def accuracy_cell(mean: float, std: float, n_runs: int) -> str:
    """``0.412 ± 0.013`` over several runs; one run has no spread to show: ``0.333`` (a ``± 0.000``
    read as a measured zero spread, issue 47)."""
    return f"{mean:.3f} ± {std:.3f}" if int(n_runs) > 1 else f"{mean:.3f}"


def _html(summary: pd.DataFrame, figures: list[tuple[str, Path]], root: Path, warnings: list[str] | None = None) -> str:
    layout = pd.DataFrame(
        [format_layout(r) for _, r in summary.iterrows()], index=summary.index, columns=[f"layout {k}" for k in LAYOUT_SETS]
    )
    table = summary.assign(
        test=[accuracy_cell(m, s, n) for m, s, n in zip(summary.test_mean, summary.test_std, summary.n_runs)],
        ci95_wilson=[f"[{a:.3f}, {b:.3f}]" for a, b in zip(summary.ci_lo, summary.ci_hi)],
    )
    table = pd.concat([table, layout], axis=1)
    cols = KEYS + ["test", "ci95_wilson", *layout.columns, "val_mean", "n_runs", "lr", "dropout", "n_test"]
    parts = [
        "<!doctype html><html><head><meta charset='utf-8'><title>sceneforge probing report</title>",
        "<style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}"
        "td,th{border:1px solid #ccc;padding:2px 6px;font-size:13px}img{max-width:100%}</style>",
        "</head><body><h1>sceneforge probing report</h1>",
        "<p>Rows: configuration selected on validation accuracy (lr × dropout grid), "
        "test accuracy mean ± std over runs (seeds; one run: its accuracy, no ±); ci95_wilson: 95% Wilson score interval of "
        "that mean over the n_test test images. layout source / target / boxes: test accuracy "
        "[95% Wilson CI] of a small MLP that sees only the 2-D boxes (source box; target box; "
        "source, target and, on allo, the figure) on the same split, no pixels: how much of "
        "the probe's accuracy the layout alone explains (chance 0.25).</p>",
        table[cols].to_html(index=False, float_format=lambda v: f"{v:.4g}", escape=True),
    ]
    if warnings:
        parts.append("<h2>Warnings</h2><ul>" + "".join(f"<li>{html.escape(w)}</li>" for w in warnings) + "</ul>")
    for bb, t in layer_head_tables(summary).items():
        parts.append(
            f"<h2>Layer × head, {html.escape(str(bb))}</h2><p>test accuracy, mean over "
            "environments and tasks (within-environment protocol)</p>" + t.to_html(float_format=lambda v: f"{v:.3f}", escape=True)
        )
    for title, path in figures:
        rel = os.path.relpath(path, root)
        parts.append(f"<h2>{html.escape(title)}</h2><img src='{html.escape(rel)}' alt='{html.escape(title)}'>")
    parts.append("</body></html>")
    return "\n".join(parts)
