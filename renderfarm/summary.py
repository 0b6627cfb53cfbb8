"""The job summary: built from the journal (so a resumed job reports the whole job, not one run)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from sceneforge.core.atomic import atomic_write_text
from sceneforge.core.errors import EXIT_INCOMPLETE, EXIT_OK

from sceneforge.renderfarm.journal import Journal
from sceneforge.renderfarm.manifest import JobManifest

SUMMARY = "summary.json"


def summarise(journal: Journal, manifest: JobManifest, *, elapsed: float, workers: int, backend: str) -> dict:
    """Samples complete/failed/pending, rejections by rule, and this run's throughput.

    ``rendered`` counts samples whose results this run produced (``done``), not those found
    complete on disk (``skipped``), so a resume of a finished job reports 0 samples/s honestly.
    """
    results = journal.results()
    failures = journal.failures()
    complete = sum(len(r.done) + len(r.skipped) for r in results)
    rejections: Counter[str] = Counter()
    for r in results:
        rejections.update(r.rejections)
    rendered = sum(len(r.done) for r in results)
    return {
        "scenario": manifest.scenario,
        "samples": manifest.n_samples,
        "complete": complete,
        "failed": {str(i): err for i, (_, err) in sorted(failures.items())},
        "pending": manifest.n_samples - complete - len(failures),
        "rejections": dict(sorted(rejections.items())),
        "rendered_total": rendered,
        "workers": workers,
        "backend": backend,
        "seconds": round(elapsed, 3),
        "finalized": False,
    }


def add_throughput(summary: dict, rendered_this_run: int, elapsed: float) -> dict:
    summary["rendered"] = rendered_this_run
    summary["samples_per_s"] = round(rendered_this_run / elapsed, 3) if elapsed > 0 else 0.0
    return summary


def exit_code(summary: dict) -> int:
    """What a CLI command should return: 0 when every sample is done, 1 (failed or pending
    samples) otherwise; the convention is core/errors.py's."""
    return EXIT_OK if summary["complete"] == summary["samples"] else EXIT_INCOMPLETE


def format_summary(summary: dict) -> str:
    lines = [
        f"{summary['scenario']}: {summary['complete']}/{summary['samples']} samples complete, "
        f"{len(summary['failed'])} failed, {summary['pending']} pending "
        f"({summary.get('rendered', 0)} rendered this run in {summary['seconds']:.1f} s, "
        f"{summary.get('samples_per_s', 0.0):.2f} samples/s on {summary['workers']} "
        f"{summary['backend']} workers)"
    ]
    if summary["rejections"]:
        lines.append("  rejections: " + ", ".join(f"{k}={v}" for k, v in summary["rejections"].items()))
    for index, error in list(summary["failed"].items())[:10]:
        lines.append(f"  failed sample {index}: {error}")
    if len(summary["failed"]) > 10:
        lines.append(f"  ... and {len(summary['failed']) - 10} more (see .farm/summary.json)")
    return "\n".join(lines)


def write_summary(fdir: Path, summary: dict) -> None:
    atomic_write_text(Path(fdir) / SUMMARY, json.dumps(summary, indent=2, default=str) + "\n")
