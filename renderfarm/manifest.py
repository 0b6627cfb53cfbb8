"""Claiming an output directory (``OUT/job.json``), the farm manifest (``OUT/.farm/job.json``)
and the shard layout it fixes.

:func:`claim_output` is the only place that decides whether ``OUT`` may be written: every runner
(inline, local farm, Ray) calls it under :func:`job_lock` before any sample is made.

Why a manifest: re-running a command on an existing output directory must either continue the
*same* job or refuse loudly. The scenario's fingerprint (a hash of its normalised config) and the
sample count are recorded on the first run; a different config raises :class:`ConfigError`
instead of silently mixing two datasets. The shard size is recorded too, so a resume with another
worker count reuses the journal's shards (shard size never changes outputs, only scheduling).

All farm bookkeeping lives under ``OUT/.farm/`` (manifest, journal, JSON-lines log), apart from
the dataset's own files, so hashing a dataset never sees timestamps or worker ids.
"""

from __future__ import annotations

import fcntl
import json
import logging
import math
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path

from sceneforge.core.atomic import atomic_path, atomic_write_json
from sceneforge.core.errors import ConfigError
from sceneforge.scenarios.contract import JobPlan, Shard

log = logging.getLogger(__name__)

FARM_DIR = ".farm"
MANIFEST = "job.json"
JOURNAL = "journal.sqlite"
LOG = "log.jsonl"
LOCK = "lock"
MAX_DEFAULT_SHARD = 32


@dataclass(frozen=True)
class JobManifest:
    scenario: str
    fingerprint: str
    n_samples: int
    shard_size: int
    description: str = ""


def farm_dir(out_dir: Path) -> Path:
    return Path(out_dir) / FARM_DIR


def default_shard_size(n_samples: int) -> int:
    """About 64 shards per job, at most 32 samples each: depends only on ``n``, never on workers.

    Small shards keep both workers busy at the end of a job and make a crash cost little work;
    32 samples amortise the per-shard overhead (one IPC round trip, one journal commit).
    """
    return max(1, min(MAX_DEFAULT_SHARD, math.ceil(n_samples / 64)))


def make_shards(n_samples: int, shard_size: int) -> list[Shard]:
    """Contiguous shards of global indices ``0..n-1`` in order."""
    return [
        Shard(k, tuple(range(start, min(start + shard_size, n_samples))))
        for k, start in enumerate(range(0, n_samples, shard_size))
    ]


JOB_FILE = "job.json"  # OUT/job.json: the dataset's identity (scenario, fingerprint, config)


def check_out_dir(out_dir: Path) -> Path:
    """``out_dir`` usable as a dataset directory (created); one ConfigError line otherwise."""
    out_dir = Path(out_dir)
    try:  # exists() itself raises for a name over NAME_MAX (ENAMETOOLONG), not only mkdir
        if out_dir.exists() and not out_dir.is_dir():
            raise ConfigError(f"--out {out_dir}: exists and is not a directory")
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise ConfigError(f"--out {str(out_dir)[:200]}: cannot create the directory ({e.strerror or e})") from None
    return out_dir


def claim_output(out_dir: Path, scenario: str, plan: JobPlan) -> None:
    """Write ``OUT/job.json`` on a fresh job, or refuse a directory made with another config.

    The file records the scenario's import path, the config fingerprint and the normalised
    config, so a dataset says how it was made and a resume with other options is refused.
    """
    job = Path(out_dir) / JOB_FILE
    config = plan.config if plan.config is not None else {}
    if job.exists():
        try:
            old = json.loads(job.read_text())
        except (OSError, ValueError) as e:
            raise ConfigError(f"{job}: unreadable ({e}); is this a sceneforge dataset directory?") from None
        if not isinstance(old, dict) or old.get("scenario") != scenario:
            raise ConfigError(
                f"{out_dir} holds a '{old.get('scenario') if isinstance(old, dict) else '?'}' "
                f"dataset, not '{scenario}'; use another --out"
            )
        if old.get("fingerprint") != plan.fingerprint:
            changed = sorted(
                k for k in set(config) | set(old.get("config") or {}) if (old.get("config") or {}).get(k) != config.get(k)
            )
            raise ConfigError(
                f"{out_dir} holds a dataset made with a different config (changed: "
                f"{', '.join(changed) or 'fingerprint'}); use a new --out or the same options to resume"
            )
        return
    atomic_write_json(job, {"scenario": scenario, "fingerprint": plan.fingerprint, "config": config})


def open_manifest(out_dir: Path, scenario: str, plan: JobPlan, shard_size: int | None) -> JobManifest:
    """Write the manifest on a fresh job; on resume verify it matches and return the stored one."""
    path = farm_dir(out_dir) / MANIFEST
    if not path.exists():
        size = shard_size or default_shard_size(plan.n_samples)
        if size < 1:
            raise ConfigError(f"shard_size must be >= 1, got {size}")
        manifest = JobManifest(scenario, plan.fingerprint, plan.n_samples, size, plan.description)
        _write_atomic(path, json.dumps(asdict(manifest), indent=2, sort_keys=True) + "\n")
        return manifest
    stored = _read(path)
    _verify(path, stored, scenario, plan)
    if shard_size and shard_size != stored.shard_size:
        log.warning(
            "%s: keeping the recorded shard size %d (asked %d) so the journal stays valid", path, stored.shard_size, shard_size
        )
    return stored


@contextmanager
def job_lock(out_dir: Path) -> Iterator[None]:
    """Refuse a second job on the same output dir while one runs (released even by kill -9)."""
    fdir = farm_dir(out_dir)
    fdir.mkdir(parents=True, exist_ok=True)
    with open(fdir / LOCK, "a+") as f:
        try:
            fcntl.flock(f.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            f.seek(0)
            raise ConfigError(
                f"{out_dir}: another farm job is running on this output dir "
                f"(pid {f.read().strip() or '?'}); wait for it or use another --out"
            ) from None
        f.seek(0)
        f.truncate()
        f.write(f"{os.getpid()}\n")
        f.flush()
        wait_for_old_workers(out_dir)
        yield


WORKERS_LOCK = "workers.lock"
OLD_WORKERS_WAIT_S = 20.0  # > the workers' SIGTERM watchdog (worker.STOP_WATCHDOG_S = 5 s)


def hold_worker_lock(out_dir: Path):
    """A local worker holds a shared lock on ``.farm/workers.lock`` for its whole life.

    Why: the job lock dies with the job's process, but its workers may still be finishing a
    sample for a few seconds after a ``kill -9`` of the parent (they get SIGTERM through the
    parent-death signal and stop within ``STOP_WATCHDOG_S``). A resumed run waits for these
    shared locks to go (:func:`wait_for_old_workers`) before it writes anything.
    Returns the open file (keep a reference; closing it releases the lock)."""
    fdir = farm_dir(out_dir)
    fdir.mkdir(parents=True, exist_ok=True)
    f = open(fdir / WORKERS_LOCK, "a+")
    fcntl.flock(f.fileno(), fcntl.LOCK_SH)
    return f


def wait_for_old_workers(out_dir: Path, timeout_s: float = OLD_WORKERS_WAIT_S) -> None:
    """Block until no worker of an earlier run holds ``workers.lock`` (ConfigError after
    ``timeout_s``)."""
    import time

    path = farm_dir(out_dir) / WORKERS_LOCK
    deadline = time.monotonic() + timeout_s
    with open(path, "a+") as f:
        warned = False
        while True:
            try:
                fcntl.flock(f.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
                fcntl.flock(f.fileno(), fcntl.LOCK_UN)
                return
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise ConfigError(
                        f"{out_dir}: workers of an earlier run are still writing after "
                        f"{timeout_s:.0f} s; stop them (see `sceneforge farm status`) and retry"
                    ) from None
                if not warned:
                    log.warning("%s: waiting for the workers of an earlier run to stop", out_dir)
                    warned = True
                time.sleep(0.2)


def _verify(path: Path, stored: JobManifest, scenario: str, plan: JobPlan) -> None:
    if stored.scenario != scenario:
        raise ConfigError(f"{path}: output dir holds a '{stored.scenario}' job, not '{scenario}'; use another --out")
    if stored.fingerprint != plan.fingerprint or stored.n_samples != plan.n_samples:
        raise ConfigError(
            f"{path}: output dir holds a job with a different config (fingerprint "
            f"{stored.fingerprint[:12]}, n={stored.n_samples}; now {plan.fingerprint[:12]}, "
            f"n={plan.n_samples}); use another --out or the original config"
        )


def _read(path: Path) -> JobManifest:
    try:
        data = json.loads(path.read_text())
        return JobManifest(**data)
    except (OSError, ValueError, TypeError) as e:
        raise ConfigError(f"{path}: unreadable job manifest ({e})") from e


def _write_atomic(path: Path, text: str) -> None:
    with atomic_path(path) as tmp:
        with open(tmp, "w") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
