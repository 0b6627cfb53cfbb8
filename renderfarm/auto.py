"""``--workers auto``: how many render workers are fastest on this machine, right now.

A worker is one scenario process plus one render server (single-threaded llvmpipe), and
together they keep about one CPU core busy (measured: 102 % CPU for inline generation, the
server ~60 % of it). Workers beyond the cores that are actually free only time-slice against
each other and against everyone else's jobs: on a 2-core box with a load average of 8, two
workers were slower than one. So ``auto`` = the free cores (usable CPUs minus the load
average, rounded down unless within 0.25 of the next core, at least 1), capped by memory (~400 MB per worker: server + client) and
by the number of samples. Inline (1) is the answer on small or busy machines; more workers pay
off on an idle machine with several cores, or with ``--servers``/Ray where the renderers run
elsewhere (then the count is the number of servers, not this).

Example::

    resolve_workers("auto", n_samples=5000)   # -> e.g. 1 on a loaded laptop, 14 on an idle 16-core box
"""
from __future__ import annotations

import os
from pathlib import Path

from core.errors import ConfigError

WORKER_MEMORY_BYTES = 400 * 2**20   # server (~235 MB RSS measured) + scenario process
MAX_AUTO_WORKERS = 64


def usable_cpus() -> float:
    """CPUs this process may use: its affinity mask, further capped by a cgroup v2 CPU quota."""
    try:
        n = float(len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        n = float(os.cpu_count() or 1)
    try:
        quota, period = Path("/sys/fs/cgroup/cpu.max").read_text().split()[:2]
        if quota != "max":
            n = min(n, float(quota) / float(period))
    except (OSError, ValueError):
        pass
    return max(1.0, n)


def available_memory() -> int | None:
    """MemAvailable from /proc/meminfo in bytes, or None where there is no such file."""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def free_cores(cpus: float | None = None, load: float | None = None) -> int:
    """Usable ``cpus`` minus the 1-minute ``load`` average (each measured here when not given),
    rounded down unless within 0.25 of the next core, at least 1: 1.9 free cores -> 2, 1.5 -> 1."""
    cpus = usable_cpus() if cpus is None else float(cpus)
    load = os.getloadavg()[0] if load is None else float(load)
    return int(max(1.0, cpus - load + 0.25))


def auto_workers(n_samples: int, cpus: float | None = None, load: float | None = None,
                 memory: int | None = -1) -> int:
    """Worker count for ``n_samples`` given usable ``cpus``, the 1-minute ``load`` average and
    available ``memory`` in bytes (each measured here when not given; memory None = unknown)."""
    memory = available_memory() if memory == -1 else memory
    workers = free_cores(cpus, load)
    if memory is not None:
        workers = min(workers, max(1, int(memory // WORKER_MEMORY_BYTES)))
    return max(1, min(workers, MAX_AUTO_WORKERS, max(1, int(n_samples))))


MAX_INLINE_THREADS = 4   # llvmpipe's rasteriser threads for a 224² frame stop paying beyond a few


def inline_threads(cpus: float | None = None, load: float | None = None) -> int:
    """llvmpipe threads for the one server of an inline job: the :func:`free_cores` (as
    :func:`auto_workers` counts them), 1 to ``MAX_INLINE_THREADS``.

    Why: one worker (client + single-threaded server) keeps about one core busy, so an inline
    run on an idle 2-core machine left a core idle; the server's rasteriser threads use it (the
    client mostly waits for the server). Images are the same bytes at any thread count (llvmpipe
    bins triangles to tiles and each tile is shaded alike whichever thread takes it; tested).
    ``LP_NUM_THREADS`` in the environment still wins (GLBackend).
    """
    return min(MAX_INLINE_THREADS, free_cores(cpus, load))


def resolve_workers(value, n_samples: int) -> int:
    """``--workers`` value (an integer >= 1, or ``auto``) → the number of workers to start."""
    if isinstance(value, str) and value.strip().lower() == "auto":
        return auto_workers(n_samples)
    try:
        n = int(value)
    except (TypeError, ValueError):
        raise ConfigError(f"workers must be an integer >= 1 or 'auto', got {value!r}") from None
    if n < 1 or (isinstance(value, float) and value != n):
        raise ConfigError(f"workers must be an integer >= 1 or 'auto', got {value!r}")
    return n
