"""Run a SpaRRTa job inline: one render server, every index in one shard, then finalize.

This is what ``sceneforge generate`` does with one worker (no render farm needed); with more
workers the command calls :func:`renderfarm.run_job`, which calls the same ``run``/``finalize``
on each worker, so both paths write identical bytes.
"""
from __future__ import annotations

import logging
from collections import Counter
from pathlib import Path

from core.errors import ConnectionFailed, PlacementError
from renderfarm.contract import Shard
from scenarios.sparrta import scenario as sparrta
from scenarios.sparrta.config import apply_licenses, locate, parse_config
from scenarios.sparrta.record import load_record

log = logging.getLogger(__name__)


def generate(config: dict, out_dir: Path, *, server: str | None = None, progress: bool = True) -> dict:
    """Make (or resume) the dataset in ``out_dir``; returns a summary with the finalize stats.

    Example::

        summary = generate({"envs": ["desert"], "tasks": ["ego"], "n": 16}, Path("demo"))
    """
    from tqdm import tqdm

    out = Path(out_dir)
    plan = sparrta.plan(config)
    cfg = parse_config(config)
    apply_licenses(cfg)  # before the server starts: both sides use the same filtered library
    if server:
        check_reachable(server)
    sparrta.claim_output(cfg, out)
    units = sparrta.units_of(cfg)
    done_before = sum(1 for g in range(plan.n_samples) if load_record(out, *locate(units, g)))
    with tqdm(total=plan.n_samples, initial=done_before, unit="img", desc="generate", disable=not progress,
              dynamic_ncols=True) as bar:
        result = _run(config, out, plan.n_samples, server, bar.update)
    elapsed = result.seconds  # excludes starting the server
    if result.failed:
        idx, msg = next(iter(sorted(result.failed.items())))
        more = f" ({len(result.failed)} samples failed, {len(result.done) + len(result.skipped)} done)" \
            if len(result.failed) > 1 else ""
        raise PlacementError(f"sample {idx}: {msg}{more}", rule=None, tries=0, rejections=result.rejections)
    stats = sparrta.finalize(config, out)
    return {"samples": plan.n_samples, "rendered": len(result.done), "skipped": len(result.skipped),
            "seconds": round(elapsed, 3), "samples_per_s": round(len(result.done) / elapsed, 3) if elapsed else 0.0,
            "workers": 1, "backend": "inline", "finalize": stats}


def _run(config: dict, out: Path, n: int, server: str | None, progress):
    shard = Shard(0, tuple(range(n)))
    if server:
        return sparrta.run(config, shard, out, server=server, progress=progress)
    from engine.server.launch import start_server

    with start_server(port=0, renderer=config.get("renderer")) as srv:
        return sparrta.run(config, shard, out, server=srv.address, progress=progress)


def check_reachable(address: str, timeout: float = 5.0) -> None:
    """Fail fast, in one line, when a user-given server does not accept connections (the
    client would otherwise retry for its whole connect timeout)."""
    import socket

    from engine.client import parse_address

    host, port = parse_address(address)
    try:
        socket.create_connection((host, port), timeout=timeout).close()
    except OSError as e:
        raise ConnectionFailed(f"--server {address}: cannot connect ({e.strerror or e})") from None


def rejection_summary(stats: dict) -> str:
    """Human-readable rejection line for the end of a run."""
    rej = Counter(stats.get("rejections", {}))
    n = max(1, stats.get("samples", 1))
    rules = ", ".join(f"{k} {v}" for k, v in rej.most_common()) or "none"
    return (f"rejected candidates: {sum(rej.values())} ({sum(rej.values()) / n:.1f} per sample; "
            f"{stats.get('visibility_checks_per_sample', 0):.2f} visibility renders per sample) — {rules}")
