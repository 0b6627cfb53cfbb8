"""``sceneforge farm status DIR``: what the journal says, per shard, plus live workers if running.

Reads only (SQLite read-only connection; WAL lets it run beside a live job).

Any directory the CLI wrote a dataset into answers (issue 47: ``farm status data/`` failed on
every ordinary ``generate`` output). A sharded job (``--workers N``, Ray) has a journal under
``OUT/.farm/``; an inline run (the default with one worker: ``generate``, ``videos``, ``vqa``,
``demo``) keeps no journal, so its status is ``OUT/job.json`` (what was asked) and
``OUT/.farm/summary.json`` (how its last run ended: complete, failed and pending samples). An
inline run stopped before its end (Ctrl-C, a crash) or made before summaries were kept has no
summary: the status says so and that rerunning the same command resumes it.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path

from sceneforge.core.errors import ConfigError
from sceneforge.renderfarm.journal import Journal
from sceneforge.renderfarm.manifest import JOB_FILE, JOURNAL, MANIFEST, farm_dir
from sceneforge.renderfarm.summary import SUMMARY

MAX_ROWS = 50


def job_status(out_dir: Path) -> dict:
    """Manifest, per-shard rows, failures and (if a job is running) its workers, as plain data."""
    fdir = farm_dir(Path(out_dir))
    manifest_path = fdir / MANIFEST
    if not manifest_path.exists():
        if (Path(out_dir) / JOB_FILE).exists():
            return inline_status(Path(out_dir))
        raise ConfigError(
            f"{out_dir}: not a sceneforge output dir (no {JOB_FILE}: the directory a generate/videos/vqa/run/demo --out wrote)"
        )
    manifest = json.loads(manifest_path.read_text())
    with Journal(fdir / JOURNAL, readonly=True) as journal:
        rows = journal.rows()
        failures = journal.failures()
    samples = Counter()
    for r in rows:
        samples[r.status] += r.n_samples
        samples["failed_samples"] += r.n_failed
    return {
        "manifest": manifest,
        "shards": [vars(r) for r in rows],
        "failures": {i: {"attempts": a, "error": e} for i, (a, e) in failures.items()},
        "counts": {"shards": dict(Counter(r.status for r in rows)), "samples": dict(samples)},
        "workers": _live_workers(fdir),
    }


def inline_status(out_dir: Path) -> dict:
    """The status of an inline run (no journal): ``job.json`` + the last run's ``summary.json``,
    in the shape :func:`job_status` returns (``inline`` set; one pseudo-shard of every sample)."""
    try:
        job = json.loads((out_dir / JOB_FILE).read_text())
    except (OSError, ValueError) as e:
        raise ConfigError(f"{out_dir / JOB_FILE}: unreadable ({e}); is this a sceneforge dataset directory?") from None
    try:
        summary = json.loads((farm_dir(out_dir) / SUMMARY).read_text())
    except (OSError, ValueError):
        summary = None
    manifest = {
        "scenario": job.get("scenario", "?"),
        "fingerprint": job.get("fingerprint", ""),
        "n_samples": summary["samples"] if summary else None,
        "shard_size": summary["samples"] if summary else None,
    }
    if summary is None:
        state, n_failed = "unknown", 0
    else:
        n_failed = len(summary.get("failed") or {})
        state = "done" if summary["complete"] == summary["samples"] and summary.get("finalized") else "pending"
        state = "failed" if n_failed else state
    shards = (
        []
        if summary is None
        else [
            {
                "shard_id": 0,
                "first": 0,
                "last": summary["samples"] - 1,
                "status": state,
                "n_failed": n_failed,
                "worker": "inline",
                "seconds": float(summary.get("seconds") or 0.0),
                "n_samples": summary["samples"],
            }
        ]
    )
    failures = {} if summary is None else {i: {"attempts": 1, "error": e} for i, e in (summary.get("failed") or {}).items()}
    samples = (
        {} if summary is None else {"done": summary["complete"], "failed_samples": n_failed, "pending": summary.get("pending", 0)}
    )
    return {
        "inline": True,
        "manifest": manifest,
        "shards": shards,
        "failures": failures,
        "counts": {"shards": {state: 1}, "samples": samples},
        "workers": _live_workers(farm_dir(out_dir)),
    }


def _live_workers(fdir: Path) -> dict | None:
    path = fdir / "workers.json"
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    try:
        os.kill(int(data["pid"]), 0)
    except (ProcessLookupError, PermissionError, KeyError, ValueError):
        return {"stale": True, **data}
    return data


def format_status(status: dict, show_all: bool = False) -> str:
    if status.get("inline"):
        return _format_inline(status)
    m, counts = status["manifest"], status["counts"]
    shard_counts = counts["shards"]
    lines = [
        f"job {m['scenario']}: {m['n_samples']} samples in {len(status['shards'])} shards "
        f"of <= {m['shard_size']} (fingerprint {m['fingerprint'][:12]})",
        "shards: " + ", ".join(f"{k} {shard_counts.get(k, 0)}" for k in ("done", "pending", "failed")),
        f"failed samples: {len(status['failures'])}",
    ]
    rows = status["shards"]
    if not show_all and len(rows) > MAX_ROWS:
        rows = [r for r in rows if r["status"] != "done"][:MAX_ROWS]
        lines.append(f"(showing {len(rows)} unfinished shards; --all lists every shard)")
    lines.append(f"{'shard':>6}  {'samples':<13} {'status':<8} {'failed':>6}  {'worker':<6} {'seconds':>8}")
    for r in rows:
        span = f"{r['first']}-{r['last']}"
        lines.append(
            f"{r['shard_id']:>6}  {span:<13} {r['status']:<8} {r['n_failed']:>6}  {r['worker'] or '-':<6} {r['seconds']:>8.2f}"
        )
    for index, f in list(status["failures"].items())[:20]:
        lines.append(f"sample {index}: failed after {f['attempts']} attempts: {f['error']}")
    lines += _format_workers(status["workers"])
    return "\n".join(lines)


def _format_workers(workers: dict | None) -> list[str]:
    if workers is None:
        return ["no job running"]
    if workers.get("stale"):
        return [f"no job running (pid {workers.get('pid')} ended without cleanup; re-run to resume)"]
    out = [f"job running (pid {workers['pid']}):"]
    for w in workers["workers"]:
        out.append(
            f"  {w['worker']}: {w['state']:<8} shard {w['shard'] if w['shard'] is not None else '-'}"
            f"  server {w['server'] or '-'}  items {w['items_done']}  restarts {w['restarts']}"
            + (f"  ({w['note']})" if w.get("note") else "")
        )
    return out


def _format_inline(status: dict) -> str:
    m = status["manifest"]
    head = f"job {m['scenario']} (fingerprint {m['fingerprint'][:12]}), run inline: no journal, one shard"
    if not status["shards"]:
        return "\n".join(
            [
                head,
                "status unknown: no summary of a finished run (.farm/summary.json): the run was stopped before its end or "
                "was made before summaries were kept; rerun the same command: it skips finished samples and resumes",
            ]
        )
    s = status["counts"]["samples"]
    lines = [
        head,
        f"samples: {m['n_samples']}: done {s['done']}, failed {s['failed_samples']}, pending {s['pending']}"
        + ("" if status["shards"][0]["status"] == "done" else " (rerun the same command to resume)"),
    ]
    for index, f in list(status["failures"].items())[:20]:
        lines.append(f"sample {index}: failed: {f['error']}")
    return "\n".join(lines)
