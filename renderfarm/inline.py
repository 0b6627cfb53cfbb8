"""The inline backend: every sample in this process, on one render server, no worker pool.

What ``sceneforge generate``/``videos`` do by default on a small job: no journal and no worker
processes, so nothing to start but one server (~1 s). The scenario's ``run`` skips samples whose
files are complete, so a rerun resumes; the output directory is claimed by :func:`run_job`
exactly as for the farm, so inline and farm runs of one config write identical bytes.
"""

from __future__ import annotations

import inspect
import logging
import time
from collections import Counter
from contextlib import ExitStack
from pathlib import Path

from sceneforge.engine.server.launch import start_server
from sceneforge.renderfarm.auto import inline_threads
from sceneforge.renderfarm.servers import check_reachable, check_serves
from sceneforge.scenarios.contract import Scenario, Shard

log = logging.getLogger(__name__)


def run_inline(
    job: Scenario,
    scenario: str,
    out_dir: Path,
    n_samples: int,
    *,
    server: str | None = None,
    progress: bool = True,
) -> dict:
    """Run all ``n_samples`` indices as one shard; returns a farm-shaped summary (no finalize)."""
    from tqdm import tqdm

    t0 = time.perf_counter()
    takes_progress = "progress" in inspect.signature(job.run).parameters
    with ExitStack() as stack:
        address = ""
        if job.NEEDS_SERVER:
            address = _server(stack, job, server)
        bar = stack.enter_context(
            tqdm(total=n_samples, unit="sample", desc=scenario.rsplit(".")[-1], disable=not progress, dynamic_ncols=True)
        )
        extra = {"progress": bar.update} if takes_progress else {}
        result = job.run(Shard(0, tuple(range(n_samples))), Path(out_dir), server=address, **extra)
        if not takes_progress:
            bar.update(len(result.done) + len(result.skipped))
    elapsed = time.perf_counter() - t0
    complete = len(result.done) + len(result.skipped)
    return {
        "scenario": scenario,
        "samples": n_samples,
        "complete": complete,
        "failed": {str(i): e for i, e in sorted(result.failed.items())},
        "pending": n_samples - complete - len(result.failed),
        "rejections": dict(sorted(Counter(result.rejections).items())),
        "rendered_total": len(result.done),
        "rendered": len(result.done),
        "skipped": len(result.skipped),
        "workers": 1,
        "backend": "inline",
        "seconds": round(elapsed, 3),
        "samples_per_s": round(len(result.done) / result.seconds, 3) if result.seconds else 0.0,
        "finalized": False,
    }


def _server(stack: ExitStack, job: Scenario, server: str | None) -> str:
    """A user-given server (checked: reachable and serving what the job needs), or our own one
    started with the scenario's :class:`~scenarios.contract.ServerSpec` as arguments."""
    spec = job.server_spec()
    if server:
        check_reachable(server)
        check_serves(server, spec)
        return server
    threads = inline_threads()
    log.info("inline render server: %d renderer thread(s)", threads)
    srv = stack.enter_context(
        start_server(port=0, assets=list(spec.assets), licenses=spec.licenses, renderer=spec.renderer, threads=threads)
    )
    return srv.address
