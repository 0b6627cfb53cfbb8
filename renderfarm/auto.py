"""``--workers auto``: how many render workers are fastest on this machine, right now.

A worker is one scenario process plus one render server (single-threaded llvmpipe), and
together they keep ``CORES_PER_WORKER`` CPU cores busy (measured 2026-11-25, city ego: 38 CPU-ms
of server and 25 of client — its lookahead and writer threads run beside the main one — per
49 ms of wall time; it was ~1.0 before the lookahead). Workers beyond the cores that are
actually free only time-slice against each other and against everyone else's jobs: on a 2-core
box with a load average of 8, two workers were slower than one; on the idle 2-core box two
workers now make fewer labelled images/s than one inline server with two rasteriser threads
(city 18.1 vs 21.5, bridge 24.3 vs 29.7, docs/renderfarm.md). So ``auto`` = the free cores
(usable CPUs minus the load average, + 0.25) divided by ``CORES_PER_WORKER``, rounded down, at
least 1, capped by memory (~400 MB per worker: server + client) and by the number of samples. Inline (1) is the
answer on small or busy machines; more workers pay
off on an idle machine with several cores, or with ``--servers``/Ray where the renderers run
elsewhere (then the count is the number of servers, not this).

Example::

    resolve_workers("auto", n_samples=5000)   # -> e.g. 1 on a loaded laptop, 14 on an idle 16-core box
"""

from __future__ import annotations

import os
from pathlib import Path

from sceneforge.core.errors import ConfigError

WORKER_MEMORY_BYTES = 400 * 2**20  # server (~235 MB RSS measured) + scenario process
CORES_PER_WORKER = 1.3  # what one worker keeps busy (see the module docstring)
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


def free_cpus(cpus: float | None = None, load: float | None = None) -> float:
    """Usable ``cpus`` minus the 1-minute ``load`` average (each measured here when not given),
    + 0.25 (a core 3/4 free counts): what :func:`free_cores` and :func:`auto_workers` divide up."""
    cpus = usable_cpus() if cpus is None else float(cpus)
    load = os.getloadavg()[0] if load is None else float(load)
    return cpus - load + 0.25


def free_cores(cpus: float | None = None, load: float | None = None) -> int:
    """:func:`free_cpus` rounded down, at least 1: 1.9 free cores -> 2, 1.5 -> 1."""
    return int(max(1.0, free_cpus(cpus, load)))


def auto_workers(n_samples: int, cpus: float | None = None, load: float | None = None, memory: int | None = -1) -> int:
    """Worker count for ``n_samples`` given usable ``cpus``, the 1-minute ``load`` average and
    available ``memory`` in bytes (each measured here when not given; memory None = unknown)."""
    memory = available_memory() if memory == -1 else memory
    workers = int(max(1.0, free_cpus(cpus, load) / CORES_PER_WORKER))
    if memory is not None:
        workers = min(workers, max(1, int(memory // WORKER_MEMORY_BYTES)))
    return max(1, min(workers, MAX_AUTO_WORKERS, max(1, int(n_samples))))


MAX_INLINE_THREADS = 4  # llvmpipe's rasteriser threads for a 224² frame stop paying beyond a few


def inline_threads(cpus: float | None = None, load: float | None = None) -> int:
    """llvmpipe threads for the one server of an inline job: the :func:`free_cores`, 1 to
    ``MAX_INLINE_THREADS``.

    Why: a single-threaded server left part of an idle 2-core machine unused (its client mostly
    waits for it); the server's rasteriser threads use it. Images are the same bytes at any thread count (llvmpipe
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
