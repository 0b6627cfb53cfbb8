"""Run records → JSONL/CSV, summary tables, plots and one HTML page.

``sceneforge probe`` writes ``runs.jsonl`` + ``runs.csv`` (every grid point: backbone, layer, head,
lr, dropout, protocol, env, task, seed, val/test accuracy, per-class accuracy, confusion matrix)
and calls :func:`write_report`; ``sceneforge probe-report ROOT`` calls it on a directory holding
any number of run directories, so several backbones/jobs end up in one table.

Summary rows are the *selected* configurations (best val accuracy per grid), aggregated over seeds:
``test_mean ± test_std`` over ``n_runs``. Every file is written to a temp name and renamed.
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

from core.atomic import atomic_write_bytes, atomic_write_text
from core.errors import ConfigError

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


def load_runs(root: str | Path) -> pd.DataFrame:
    """All ``runs.jsonl`` at or below ``root`` as one table (columns ``run_dir``, ``run`` added)."""
    root = Path(root)
    if not root.is_dir():
        raise ConfigError(f"probe-report {root}: not a directory")
    frames = []
    for f in sorted(root.rglob("runs.jsonl")):
        rows = [json.loads(line) for line in f.read_text().splitlines() if line.strip()]
        if rows:
            frames.append(pd.DataFrame(rows).assign(run_dir=str(f.parent),
                                                    run=os.path.relpath(f.parent, root)))
    if not frames:
        raise ConfigError(f"probe-report {root}: no runs.jsonl found (run `sceneforge probe` first)")
    return pd.concat(frames, ignore_index=True)


def summarize(runs: pd.DataFrame) -> pd.DataFrame:
    """Best (val-selected) configuration per run/backbone/layer/head/protocol/env/task, mean ± std
    over seeds. Separate probe jobs stay separate rows even when their keys coincide."""
    sel = runs[runs["selected"]]
    agg = sel.groupby(KEYS, sort=True).agg(
        test_mean=("test_acc", "mean"), test_std=("test_acc", lambda s: float(np.std(s, ddof=0))),
        val_mean=("val_acc", "mean"), n_runs=("test_acc", "size"), lr=("lr", "first"),
        dropout=("dropout", "first"), n_test=("n_test", "first"))
    agg = agg.reset_index()
    lo, hi = [], []
    for _, g in sel.groupby(KEYS, sort=True):
        a, b = bootstrap_ci(g["test_acc"].to_numpy(float), g["n_test"].to_numpy(int))
        lo.append(a)
        hi.append(b)
    agg["ci_lo"], agg["ci_hi"] = lo, hi
    return agg


SMALL_TEST = 100  # below this many test images a 95% CI is wider than ±~0.1 around 0.5


def bootstrap_ci(accs: np.ndarray, n_test: np.ndarray, draws: int = 2000, seed: int = 0) -> tuple[float, float]:
    """95% bootstrap interval of the seed-mean test accuracy, resampling test images.

    Per seed, resampling n test images with replacement from a set with accuracy p gives
    Binomial(n, p)/n; the draws of all seeds are averaged (the reported mean), then the 2.5/97.5
    percentiles taken. Seeded: the same runs give the same interval (byte-identical summaries).
    """
    rng = np.random.default_rng(seed)
    sims = np.stack([rng.binomial(max(int(n), 1), min(max(float(p), 0.0), 1.0), draws) / max(int(n), 1)
                     for p, n in zip(accs, n_test)]).mean(0)
    return float(np.percentile(sims, 2.5)), float(np.percentile(sims, 97.5))


def small_splits(summary: pd.DataFrame) -> list[str]:
    """One warning line per (protocol, env, task) whose test split is too small to mean much."""
    out = []
    for (protocol, env, task), g in summary.groupby(["protocol", "env", "task"], sort=True):
        n = int(g["n_test"].min())
        if n < SMALL_TEST:
            width = float((g["ci_hi"] - g["ci_lo"]).max())
            out.append(f"{protocol} {env}/{task}: only {n} test images (95% CI up to "
                       f"{width:.2f} wide): differences smaller than that mean nothing")
    return out


def layer_head_tables(summary: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """Per backbone: test accuracy (mean over envs/tasks, within protocol if present), layer × head."""
    within = summary[summary["protocol"] == "within"]
    s = within if len(within) else summary
    return {bb: g.pivot_table(index="layer", columns="head", values="test_mean", aggfunc="mean")
            for bb, g in s.groupby("backbone", sort=True)}


def write_report(root: str | Path) -> Path:
    """summary.csv/json, plots/*.png and report.html under ``root``; returns the HTML path."""
    from probing import plots

    root = Path(root)
    runs = load_runs(root)
    summary = summarize(runs)
    atomic_write_text(root / "summary.csv", summary.to_csv(index=False, float_format="%.4f"))
    atomic_write_text(root / "summary.json", summary.to_json(orient="records", indent=1))
    figures = plots.make_all(runs, summary, root, root / "plots")
    warnings = small_splits(summary)
    for w in warnings:
        log.warning("small split: %s", w)
    page = _html(summary, figures, root, warnings)
    atomic_write_text(root / "report.html", page)
    log.info("report: %s (%d runs, %d summary rows)", root / "report.html", len(runs), len(summary))
    return root / "report.html"


def _html(summary: pd.DataFrame, figures: list[tuple[str, Path]], root: Path,
          warnings: list[str] | None = None) -> str:
    table = summary.assign(test=[f"{m:.3f} ± {s:.3f}" for m, s in zip(summary.test_mean, summary.test_std)],
                           ci95=[f"[{a:.3f}, {b:.3f}]" for a, b in zip(summary.ci_lo, summary.ci_hi)])
    cols = KEYS + ["test", "ci95", "val_mean", "n_runs", "lr", "dropout", "n_test"]
    parts = ["<!doctype html><html><head><meta charset='utf-8'><title>sceneforge probing report</title>",
             "<style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}"
             "td,th{border:1px solid #ccc;padding:2px 6px;font-size:13px}img{max-width:100%}</style>",
             "</head><body><h1>sceneforge probing report</h1>",
             "<p>Rows: configuration selected on validation accuracy (lr × dropout grid), "
             "test accuracy mean ± std over runs (seeds).</p>",
             table[cols].to_html(index=False, float_format=lambda v: f"{v:.4g}", escape=True)]
    if warnings:
        parts.append("<h2>Warnings</h2><ul>" + "".join(f"<li>{html.escape(w)}</li>" for w in warnings)
                     + "</ul>")
    for bb, t in layer_head_tables(summary).items():
        parts.append(f"<h2>Layer × head, {html.escape(str(bb))}</h2><p>test accuracy, mean over "
                     "environments and tasks (within-environment protocol)</p>"
                     + t.to_html(float_format=lambda v: f"{v:.3f}", escape=True))
    for title, path in figures:
        rel = os.path.relpath(path, root)
        parts.append(f"<h2>{html.escape(title)}</h2><img src='{html.escape(rel)}' alt='{html.escape(title)}'>")
    parts.append("</body></html>")
    return "\n".join(parts)
