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
    return agg.reset_index()


def write_report(root: str | Path) -> Path:
    """summary.csv/json, plots/*.png and report.html under ``root``; returns the HTML path."""
    from probing import plots

    root = Path(root)
    runs = load_runs(root)
    summary = summarize(runs)
    atomic_write_text(root / "summary.csv", summary.to_csv(index=False, float_format="%.4f"))
    atomic_write_text(root / "summary.json", summary.to_json(orient="records", indent=1))
    figures = plots.make_all(runs, summary, root, root / "plots")
    page = _html(summary, figures, root)
    atomic_write_text(root / "report.html", page)
    log.info("report: %s (%d runs, %d summary rows)", root / "report.html", len(runs), len(summary))
    return root / "report.html"


def _html(summary: pd.DataFrame, figures: list[tuple[str, Path]], root: Path) -> str:
    table = summary.assign(test=[f"{m:.3f} ± {s:.3f}" for m, s in zip(summary.test_mean, summary.test_std)])
    cols = KEYS + ["test", "val_mean", "n_runs", "lr", "dropout", "n_test"]
    parts = ["<!doctype html><html><head><meta charset='utf-8'><title>sceneforge probing report</title>",
             "<style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}"
             "td,th{border:1px solid #ccc;padding:2px 6px;font-size:13px}img{max-width:100%}</style>",
             "</head><body><h1>sceneforge probing report</h1>",
             "<p>Rows: configuration selected on validation accuracy (lr × dropout grid), "
             "test accuracy mean ± std over runs (seeds).</p>",
             table[cols].to_html(index=False, float_format=lambda v: f"{v:.4g}", escape=True)]
    for title, path in figures:
        rel = os.path.relpath(path, root)
        parts.append(f"<h2>{html.escape(title)}</h2><img src='{html.escape(rel)}' alt='{html.escape(title)}'>")
    parts.append("</body></html>")
    return "\n".join(parts)
