"""``run_job``: the farm's front door (plan → manifest → journal → workers → finalize → summary)."""

from __future__ import annotations

import logging
import os
import sys
import time
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path

from sceneforge.core.errors import ConfigError
from sceneforge.core.signals import sigterm_as_interrupt
from sceneforge.scenarios.config import ScenarioConfig
from sceneforge.scenarios.contract import Scenario, get_scenario
from sceneforge.renderfarm.inline import run_inline
from sceneforge.renderfarm.journal import Journal
from sceneforge.renderfarm.jsonlog import attach_json_log, detach_json_log, event_logger
from sceneforge.renderfarm.local import LocalPool, WorkerSpec, refuse_in_spawn_bootstrap
from sceneforge.renderfarm.manifest import (
    JOURNAL,
    LOG,
    check_out_dir,
    claim_output,
    farm_dir,
    job_lock,
    make_shards,
    open_manifest,
)
from sceneforge.renderfarm.objstore import Publisher, RemoteOut, is_remote
from sceneforge.renderfarm.pool import DEFAULT_SAMPLE_TIMEOUT_S
from sceneforge.renderfarm.raypool import RayPool  # ray itself is imported when a RayPool starts
from sceneforge.renderfarm.scheduler import Scheduler
from sceneforge.renderfarm.servers import parse_server_list
from sceneforge.renderfarm.summary import add_throughput, format_summary, summarise, write_summary
from sceneforge.renderfarm.wds import check_shard_size, pack, samples_of

log = logging.getLogger(__name__)

BACKENDS = ("inline", "local", "ray")
# Samples in one job (all environments and tasks together). Why: ``--n 99999999999999`` passed
# validation and died in a MemoryError traceback building the shard list; 10 million images is
# far beyond any dataset made here (split larger ones over several --out). docs/renderfarm.md.
MAX_JOB_SAMPLES = 10_000_000


@dataclass(frozen=True)
class JobOptions:
    """How a job runs, never what it makes (that is the scenario's config): :func:`run_job`'s
    keywords, in one value the runner hands down instead of relaying each one.

    ``backend``: ``inline`` (every sample in this process on one server; ``server`` uses a running
    one), ``local`` (worker processes) or ``ray`` (``ray_address``); ``workers`` (None: the CPU
    count, or the Ray cluster's); ``servers``: external servers, one worker each; ``shard_size``
    (None: a function of n); ``max_attempts`` per work item; ``sample_timeout_s``: a work item
    running longer than this per sample has its worker killed (a guard against hung renderers);
    ``wds_shard_size``: also pack the finished dataset into WebDataset shards; ``progress``: bars
    and the summary on stderr."""

    workers: int | None = None
    backend: str = "local"
    servers: list[str] | str | None = None
    ray_address: str | None = None
    shard_size: int | None = None
    progress: bool = True
    max_attempts: int = 3
    sample_timeout_s: float = DEFAULT_SAMPLE_TIMEOUT_S
    server: str | None = None
    wds_shard_size: int | None = None

    def checked(self) -> "JobOptions":
        """Validated, ``servers`` parsed into a list; one line naming the option otherwise."""
        if not self.sample_timeout_s or self.sample_timeout_s <= 0:
            raise ConfigError(f"sample_timeout_s must be > 0, got {self.sample_timeout_s}")
        if self.backend not in BACKENDS:
            raise ConfigError(f"--backend: '{self.backend}' is not one of {', '.join(BACKENDS)}")
        return replace(self, servers=parse_server_list(self.servers))


def run_job(
    scenario: str,
    config: dict | ScenarioConfig,
    out_dir: Path | str,
    options: JobOptions | None = None,
    **keywords,
) -> dict:
    """Run (or resume) a scenario job in ``out_dir`` and return its summary.

    Example::

        summary = run_job("sparrta", cfg, Path("data"), workers=2)    # or backend="inline"/"ray"
        if summary["failed"]: ...   # {sample index: error}; the CLI exits non-zero
        run_job("sparrta", cfg, out, JobOptions(backend="inline", progress=False))  # options as one value

    ``scenario`` is a registry name (:mod:`scenarios.registry`) or an import path; ``config`` a
    plain dict or the scenario's parsed ``Config``. This is the only runner: it builds the
    scenario once (the config parsed once), plans the job, takes the output directory's lock,
    claims it (``OUT/job.json``), starts render servers with the scenario's
    :class:`~scenarios.contract.ServerSpec` as arguments, and finalizes a complete job. Workers
    (other processes) each build the scenario once from the normalised config. How it runs is a
    :class:`JobOptions` (or its fields as keywords, which override ``options``):
    ``backend="inline"`` runs every sample in this process on one server (``server=`` uses a
    running one instead); ``local``/``ray`` shard the job over workers.

    Re-running the same call on the same ``out_dir`` continues where a killed run stopped; a
    different config is refused (ConfigError). ``finalize`` runs only once every sample is done.
    A work item running longer than ``sample_timeout_s`` per sample has its worker killed and
    counts as a failed attempt (a guard against hung renderers, not a performance limit).
    ``out_dir`` may be a URL (``s3://bucket/prefix``: :mod:`renderfarm.objstore`);
    ``wds_shard_size=N`` also packs the finished dataset into WebDataset shards of N samples
    (``OUT/wds/``, :mod:`renderfarm.wds`).
    """
    refuse_in_spawn_bootstrap()
    opts = replace(options or JobOptions(), **keywords).checked()
    job = get_scenario(scenario)(config)
    scenario = job.path()  # what job.json records and workers import
    finish = Finish(None, check_packable(job, opts.wds_shard_size))
    plan = job.plan()
    check_job_size(plan.n_samples)
    # workers get the normalised config (the one job.json records)
    config = plan.config if plan.config is not None else getattr(job.config, "to_dict", lambda: job.config)()
    remote = remote_out(out_dir)
    out_dir = check_out_dir(remote.staging if remote else out_dir)
    with job_lock(out_dir), publishing(remote) as publisher:
        finish = Finish(publisher, finish.wds_shard_size)
        claim_output(out_dir, scenario, plan)
        if opts.backend == "inline":
            return _run_inline(job, scenario, out_dir, plan, server=opts.server, progress=opts.progress, finish=finish)
        manifest = open_manifest(out_dir, scenario, plan, opts.shard_size)
        fdir = farm_dir(out_dir)
        events, ev_handler = event_logger(fdir / LOG)
        warn_handler = attach_json_log(fdir / LOG, logging.WARNING, "renderfarm")
        try:
            return _run(job, scenario, config, out_dir, manifest, events, opts, finish)
        finally:
            detach_json_log(warn_handler, "renderfarm")
            detach_json_log(ev_handler, "renderfarm.events")


def check_job_size(n_samples: int) -> None:
    """One line instead of a MemoryError when ``--n`` × environments × tasks is absurd."""
    if n_samples > MAX_JOB_SAMPLES:
        raise ConfigError(
            f"--n: the job would have {n_samples} samples (n x environments x tasks); at most "
            f"{MAX_JOB_SAMPLES} per job: lower --n or split the job over several --out"
        )


@dataclass(frozen=True)
class Finish:
    """What happens to a finished job's files beyond ``finalize``: publishing to a bucket
    (:class:`~renderfarm.objstore.Publisher`, or None) and packing into WebDataset shards."""

    publisher: object | None = None
    wds_shard_size: int | None = None


def check_packable(job: Scenario, wds_shard_size: int | None) -> int | None:
    """``--format wds`` is refused up front for a scenario that cannot be packed."""
    if wds_shard_size is None:
        return None
    samples_of(job)
    return check_shard_size(wds_shard_size)


def _run_inline(job: Scenario, scenario, out_dir, plan, *, server, progress, finish=Finish()) -> dict:
    t0 = time.perf_counter()
    summary = run_inline(job, scenario, out_dir, plan.n_samples, server=server, progress=progress)
    if summary["complete"] == summary["samples"]:
        _finalize(job, out_dir, summary, finish)
    summary["seconds"] = round(time.perf_counter() - t0, 3)
    write_summary(farm_dir(out_dir), summary)  # what `farm status OUT` reads of an inline run (no journal)
    _publish(finish.publisher, summary)
    return summary


def _finalize(job: Scenario, out_dir, summary, finish: Finish) -> None:
    """``finalize`` (then the WebDataset shards); with a bucket, every sample is published
    first, so the index files it writes never list a sample the bucket lacks."""
    if finish.publisher is not None:
        finish.publisher.publish()
    summary["finalize"] = job.finalize(out_dir)
    summary["finalized"] = True
    if finish.wds_shard_size:
        summary["wds"] = pack(job, out_dir, finish.wds_shard_size)


def _publish(publisher, summary: dict) -> None:
    if publisher is not None:
        publisher.publish()
        summary["published"] = {"url": publisher.remote.url, "objects": publisher.objects}


def _run(job: Scenario, scenario, config, out_dir, manifest, events, opts: JobOptions, finish=Finish()) -> dict:
    fdir = farm_dir(out_dir)
    t0 = time.perf_counter()
    with Journal(fdir / JOURNAL) as journal:
        journal.add_shards(make_shards(manifest.n_samples, manifest.shard_size))
        todo = journal.unfinished()
        n_workers = resolve_workers(opts.workers, opts.servers, len(todo), opts.backend)
        events.info(
            "job started",
            extra={
                "event": "job_start",
                "scenario": scenario,
                "samples": manifest.n_samples,
                "shards_todo": len(todo),
                "workers": n_workers,
                "backend": opts.backend,
            },
        )
        finished = []
        if todo:
            spec = WorkerSpec(scenario, config, str(out_dir), str(fdir / "servers"), str(fdir / LOG))
            on_shard = finish.publisher.maybe_publish if finish.publisher else None
            finished, n_workers = _dispatch(todo, journal, spec, n_workers, opts, events, manifest.n_samples, on_shard)
        summary = summarise(journal, manifest, elapsed=time.perf_counter() - t0, workers=n_workers, backend=opts.backend)
    add_throughput(summary, sum(len(r.done) for r in finished), time.perf_counter() - t0)
    return _conclude(job, out_dir, summary, events, opts.progress, t0, finish)


def _conclude(job: Scenario, out_dir, summary, events, progress, t0, finish=Finish()) -> dict:
    """finalize (only for a complete job), then record and show the summary."""
    if summary["complete"] == summary["samples"]:
        _finalize(job, out_dir, summary, finish)
    summary["seconds"] = round(time.perf_counter() - t0, 3)
    if finish.publisher is not None:
        summary["published"] = {"url": finish.publisher.remote.url}
    write_summary(farm_dir(out_dir), summary)
    _publish(finish.publisher, summary)
    events.info("job finished", extra={"event": "job_end", "summary": summary})
    if progress:
        print(format_summary(summary), file=sys.stderr, flush=True)
    return summary


def resolve_workers(workers: int | None, servers: list[str] | None, n_shards: int, backend: str = "local") -> int | None:
    """External servers fix the count (one worker each); else ``workers``, or the CPU count of
    this machine (local) or of the Ray cluster (ray); never more workers than shards to run."""
    if workers is not None and int(workers) < 1:
        raise ConfigError(f"--workers must be >= 1, got {workers}")
    if servers:
        if workers and workers != len(servers):
            log.warning("--workers %s ignored: one worker per --servers address (%d)", workers, len(servers))
        return len(servers)
    n = int(workers) if workers else _default_workers(backend)
    return max(1, min(n, n_shards)) if n and n_shards else n


def _default_workers(backend: str) -> int | None:
    """CPU count here, or None for Ray: the pool asks the cluster once connected."""
    return None if backend == "ray" else (os.cpu_count() or 1)


def _dispatch(todo, journal, spec, n_workers, opts: JobOptions, events, total: int, on_shard=None) -> tuple[list, int]:
    from tqdm import tqdm

    done_before = total - sum(len(s.indices) for s in todo)
    with tqdm(
        total=total,
        initial=done_before,
        unit="sample",
        desc=spec.scenario.rsplit(".")[-1],
        disable=not opts.progress,
        smoothing=0.05,
        dynamic_ncols=True,
    ) as bar:
        scheduler = Scheduler(
            todo,
            journal,
            max_attempts=opts.max_attempts,
            events=events,
            on_samples=bar.update,
            status_path=farm_dir(Path(spec.out_dir)) / "workers.json",
            on_shard=on_shard,
        )
        pool = None
        try:
            with sigterm_as_interrupt():
                pool = _make_pool(opts.backend, spec, n_workers, opts.servers, opts.ray_address, len(todo))
                pool.sample_timeout_s = opts.sample_timeout_s
                return scheduler.run(pool), len(pool.slots)
        except KeyboardInterrupt:
            events.warning("job interrupted", extra={"event": "job_interrupted"})
            raise
        finally:
            if pool is not None:
                pool.close()
            (farm_dir(Path(spec.out_dir)) / "workers.json").unlink(missing_ok=True)


def _make_pool(backend, spec, n_workers, servers, ray_address, n_todo):
    if backend == "ray":
        return RayPool(spec, n_workers, servers, ray_address, max_workers=n_todo)
    return LocalPool(spec, n_workers, servers)


def remote_out(out_dir: Path | str):
    """A :class:`~renderfarm.objstore.RemoteOut` for ``s3://...`` (any fsspec URL), else None."""
    return RemoteOut(str(out_dir)) if is_remote(out_dir) else None


@contextmanager
def publishing(remote):
    """With a bucket: hold its lock, fetch a job it holds that this machine has not staged, and
    yield the :class:`~renderfarm.objstore.Publisher`; on an error or Ctrl-C, publish what is
    finished (best effort) so a resume from another machine starts from there."""
    if remote is None:
        yield None
        return
    with remote.session():
        remote.pull_if_new()
        publisher = Publisher(remote)
        try:
            yield publisher
        except BaseException:
            try:
                publisher.publish()
            except Exception as e:  # noqa: BLE001 - the job's own error is the one to show
                log.warning("%s: could not publish the finished files (%s)", remote.url, e)
            raise
