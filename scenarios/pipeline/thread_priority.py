"""The client's helper threads give way to the render server when the CPU is short.

A scenario runs two helper threads beside its main thread: the writer (``background.py``:
encoding and writing finished samples) and the lookahead (``lookahead.py``: sampling the next
samples). Neither is on the critical path as long as it keeps up on average: the writer has a
queue, and the lookahead works ahead of the main thread. The render server's frame is on it.
Rendering and sampling share the CPU, and an embedded server runs on the same machine. On a
2-core machine a helper that preempts the server's rasteriser thread lengthens the frame it
interrupts.

So each helper thread lowers its own scheduling priority on start. On Linux a thread has its own
nice value (``setpriority(PRIO_PROCESS, tid)``), so the main thread, which feeds the server its
requests, keeps the process's priority. Measured on the 2-core machine, 11 alternated pairs of
``python benchmarks/generate.py --task ego --env city`` (2026-11-26): labelled images per raw
render about +0.02 with the helpers 10 nice levels lower (0.44-0.57 either way on that noisy
machine; the sign right in 8 of 11 pairs). Lowering the main thread as well gained nothing.

Only the priority changes: what a thread computes, and in which order, does not. So bytes do not
depend on it (the determinism tests run with it). ``SCENEFORGE_HELPER_NICE`` sets how many
levels lower (0 turns it off; default :data:`HELPER_NICE`).
"""

from __future__ import annotations

import logging
import os
import sys
import threading

from sceneforge.core.errors import ConfigError

log = logging.getLogger(__name__)

HELPER_NICE = 10  # nice levels below the process's priority for helper threads
MAX_NICE = 19  # the lowest priority Linux has
ENV = "SCENEFORGE_HELPER_NICE"


def helper_nice() -> int:
    """How many nice levels helper threads go down: ``SCENEFORGE_HELPER_NICE`` or the default.
    A value that is not an integer in [0, 19] is a ConfigError naming it. Read by the thread
    that creates a helper (a helper thread that raised would leave its queue unserved)."""
    raw = os.environ.get(ENV)
    if raw is None or raw.strip() == "":
        return HELPER_NICE
    try:
        value = int(raw)
    except ValueError:
        value = -1
    if not 0 <= value <= MAX_NICE:
        raise ConfigError(f"{ENV}={raw!r}: expected an integer from 0 (off) to {MAX_NICE}")
    return value


def lower_this_thread(levels: int) -> int | None:
    """Lower the calling thread's priority by ``levels`` nice levels (:func:`helper_nice`, read by
    the thread that started this one), never below the lowest. Returns the thread's new nice
    value, or None where nothing changed: ``levels`` 0, or a system without per-thread nice values (only Linux has
    them; elsewhere the
    call would change the whole process, the render loop included). Going down needs no
    privilege, so this cannot fail for want of one; any other OS error is logged, not raised: a
    helper that runs at the normal priority is slower, not wrong."""
    levels = int(levels)
    if levels <= 0 or not sys.platform.startswith("linux"):
        return None
    tid = threading.get_native_id()
    try:
        now = os.getpriority(os.PRIO_PROCESS, tid)
        new = min(MAX_NICE, now + levels)
        if new != now:
            os.setpriority(os.PRIO_PROCESS, tid, new)
        return new
    except OSError as e:
        log.debug("could not lower helper thread %s's priority: %s", threading.current_thread().name, e)
        return None
