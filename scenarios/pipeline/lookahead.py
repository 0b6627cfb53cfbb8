"""Client-side work for the next samples, done while the render server works on this one.

A labelled image costs the render server a few frames and costs the client (Python) the
sampling of its scene: placing a city's clutter is ~40 ms per scene group, about as much as the
server spends on the sample. Done in line, each waits for the other. :class:`Lookahead` runs a
pure function of the sample index (``Session.start``: the sample's look, its scene group and its
first candidate view) for the next few samples on one background thread, in index order, while
the main thread talks to the server. The main thread spends most of its time blocked on the
socket (which releases the GIL), so the two mostly run at once.

Bytes never depend on timing: the function is pure (a function of the config and the index),
the thread runs the calls in submission order, and the main thread waits for the result of a
sample it needs rather than racing it. :class:`OnceCache` is the thread-safe, bounded cache
both threads build scene groups through: a group is built once, by whichever thread asks first;
the other waits for it.

Example::

    with Lookahead(session.start, depth=2) as ahead:
        for k, key in enumerate(keys):
            ahead.want(keys[k + 1:k + 3])
            first_steps = ahead.take(key)        # None: was never asked for
"""

from __future__ import annotations

import sys
import threading
from collections import OrderedDict
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from typing import Callable, Hashable, Iterable

from sceneforge.scenarios.pipeline.thread_priority import helper_nice, lower_this_thread

# While the lookahead thread runs Python, the main thread (woken by a server reply) waits for
# the GIL for up to the interpreter's switch interval (5 ms by default): about one visibility
# call. ``responsive`` lowers it for the duration of a run.
SWITCH_INTERVAL_S = 0.0005


class OnceCache:
    """``get(key, build)``: ``build()`` once per key however many threads ask (the others wait
    for its result; an error reaches every asker and is not kept). Keeps the ``size`` most
    recently used keys (a pure cache: evicting only costs a rebuild)."""

    def __init__(self, size: int = 16):
        self.size = int(size)
        self._lock = threading.Lock()
        self._items: OrderedDict[Hashable, Future] = OrderedDict()

    def get(self, key: Hashable, build: Callable[[], object]):
        with self._lock:
            fut = self._items.get(key)
            mine = fut is None
            if mine:
                fut = self._items[key] = Future()
            self._items.move_to_end(key)
            while len(self._items) > self.size:
                old = next(iter(self._items))
                if not self._items[old].done():  # being built: the asker holds it, keep it
                    break
                del self._items[old]
        if mine:
            try:
                fut.set_result(build())
            except BaseException as e:
                with self._lock:
                    if self._items.get(key) is fut:
                        del self._items[key]
                fut.set_exception(e)
        return fut.result()

    def __contains__(self, key: Hashable) -> bool:
        with self._lock:
            fut = self._items.get(key)
        return fut is not None and fut.done() and fut.exception() is None

    def clear(self) -> None:
        with self._lock:
            self._items.clear()


class Lookahead:
    """Runs ``fn(*args)`` for wanted keys on one background thread, in the order they were
    first wanted; :meth:`take` hands a key's result (or re-raises its error) to the caller."""

    def __init__(self, fn: Callable, *, name: str = "sceneforge-lookahead"):
        self._fn, self._name = fn, name
        self._pool: ThreadPoolExecutor | None = None
        self._futures: dict[Hashable, Future] = {}

    def want(self, items: Iterable[tuple[Hashable, tuple]]) -> None:
        """Queue ``fn(*args)`` for each ``(key, args)`` not queued yet."""
        for key, args in items:
            if key in self._futures:
                continue
            if self._pool is None:
                # a helper thread: it gives way to the render server (thread_priority.py)
                self._pool = ThreadPoolExecutor(
                    max_workers=1, thread_name_prefix=self._name, initializer=lower_this_thread, initargs=(helper_nice(),)
                )
            self._futures[key] = self._pool.submit(self._fn, *args)

    def take(self, key: Hashable, default=None):
        """The result for ``key`` (waiting for it), or ``default`` when it was never wanted."""
        fut = self._futures.pop(key, None)
        return default if fut is None else fut.result()

    def peek(self, key: Hashable):
        """The result for ``key`` if it is ready (not removed), else None; never waits."""
        fut = self._futures.get(key)
        if fut is None or not fut.done() or fut.exception() is not None:
            return None
        return fut.result()

    def close(self) -> None:
        """Drop what was not taken (queued calls are cancelled, a running one is waited for)."""
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None
        self._futures.clear()

    def __enter__(self) -> "Lookahead":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


@contextmanager
def responsive(interval_s: float = SWITCH_INTERVAL_S):
    """Lower the interpreter's thread switch interval while a lookahead runs (restored after)."""
    old = sys.getswitchinterval()
    sys.setswitchinterval(min(old, interval_s))
    try:
        yield
    finally:
        sys.setswitchinterval(old)
