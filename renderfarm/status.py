"""``sceneforge farm status DIR``: what the journal says, per shard, plus live workers if running.

Reads only (SQLite read-only connection; WAL lets it run beside a live job).
"""

from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path

from sceneforge.core.errors import ConfigError
from sceneforge.renderfarm.journal import Journal
from sceneforge.renderfarm.manifest import JOURNAL, MANIFEST, farm_dir

MAX_ROWS = 50


def job_status(out_dir: Path) -> dict:
    """Manifest, per-shard rows, failures and (if a job is running) its workers, as plain data."""
    fdir = farm_dir(Path(out_dir))
    manifest_path = fdir / MANIFEST
    if not manifest_path.exists():
        raise ConfigError(f"{out_dir}: not a farm output dir (no {manifest_path.relative_to(out_dir)})")
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
