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

from sceneforge.core.atomic import atomic_write_bytes, atomic_write_text
from sceneforge.core.errors import ConfigError

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
        a, b = wilson_ci(float(g["test_acc"].mean()), int(g["n_test"].min()))
        lo.append(a)
        hi.append(b)
    agg["ci_lo"], agg["ci_hi"] = lo, hi
    return agg


SMALL_TEST = 100  # below this many test images a 95% CI is wider than ±~0.1 around 0.5: a warning
MIN_TEST = 30     # below this many no report at all unless asked (--min-test N); docs/probing.md
Z95 = 1.959963984540054  # scipy.stats.norm.ppf(0.975)


def wilson_ci(p: float, n: int, z: float = Z95) -> tuple[float, float]:
    """95% Wilson score interval of an accuracy ``p`` measured on ``n`` test images.

    Unlike the normal approximation or a bootstrap of the observed accuracy, it never collapses
    to a point at p = 0 or 1 (1 image, right: [0.21, 1]) and keeps close to 95% coverage down to
    a handful of images. ``p`` may be a seed-mean (a fraction of a count): the seeds share the
    same test images, so ``n`` is the number of images, not images × seeds. No images: [0, 1].
    """
    n = int(n)
    if n <= 0:
        return 0.0, 1.0
    p = min(max(float(p), 0.0), 1.0)
    z2 = z * z
    denom = 1.0 + z2 / n
    centre = (p + z2 / (2 * n)) / denom
    half = z * np.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / denom
    return float(max(0.0, centre - half)), float(min(1.0, centre + half))


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
            out.append(f"{protocol} {env}/{task}: only {_images(n)}: 95% CI of the accuracy up to "
                       f"{w[i]:.2f} wide ([{g['ci_lo'].iloc[i]:.2f}, {g['ci_hi'].iloc[i]:.2f}]); "
                       "differences smaller than that mean nothing")
    return out


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
    raise ConfigError(f"{command}: {protocol} {env}/{task} has only {_images(int(n))}{more}, fewer than the "
                      f"{min_test} a report needs (95% CI at 0.5 accuracy: [{lo:.2f}, {hi:.2f}]); generate "
                      f"more data, or pass --min-test {int(n)} to report anyway")


def layer_head_tables(summary: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """Per backbone: test accuracy (mean over envs/tasks, within protocol if present), layer × head."""
    within = summary[summary["protocol"] == "within"]
    s = within if len(within) else summary
    return {bb: g.pivot_table(index="layer", columns="head", values="test_mean", aggfunc="mean")
            for bb, g in s.groupby("backbone", sort=True)}


def write_report(root: str | Path, min_test: int = MIN_TEST) -> Path:
    """summary.csv/json, plots/*.png and report.html under ``root``; returns the HTML path.

    Refuses (:class:`ConfigError`, nothing written) when a (protocol, env, task) has fewer than
    ``min_test`` test images (:func:`check_min_test`; 0 reports anything)."""
    from sceneforge.probing import plots

    root = Path(root)
    runs = load_runs(root)
    check_min_test(runs[["protocol", "env", "task", "n_test"]].itertuples(index=False, name=None),
                   min_test, f"probe-report {root}")
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
                           ci95_wilson=[f"[{a:.3f}, {b:.3f}]" for a, b in zip(summary.ci_lo, summary.ci_hi)])
    cols = KEYS + ["test", "ci95_wilson", "val_mean", "n_runs", "lr", "dropout", "n_test"]
    parts = ["<!doctype html><html><head><meta charset='utf-8'><title>sceneforge probing report</title>",
             "<style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}"
             "td,th{border:1px solid #ccc;padding:2px 6px;font-size:13px}img{max-width:100%}</style>",
             "</head><body><h1>sceneforge probing report</h1>",
             "<p>Rows: configuration selected on validation accuracy (lr × dropout grid), "
             "test accuracy mean ± std over runs (seeds); ci95_wilson: 95% Wilson score interval of "
             "that mean over the n_test test images.</p>",
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
