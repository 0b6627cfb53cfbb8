"""Dispatch work items to a pool, retry and isolate failures, journal finished shards.

Failure policy (why it ends): every failed attempt counts against each sample it covered. An item
of several samples that raises or kills its worker is split into single-sample items, so one bad
sample cannot sink its neighbours; a single sample that fails ``max_attempts`` times is marked
failed with its last error and the job moves on. A shard is journaled once all its samples are
complete or failed, in one SQLite transaction: the journal only ever says "done" for finished work.
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections import defaultdict, deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from sceneforge.core.atomic import atomic_write_text
from sceneforge.core.errors import SceneforgeError, ConnectionFailed
from sceneforge.scenarios.contract import Shard, ShardResult
from sceneforge.renderfarm.journal import Journal
from sceneforge.renderfarm.pool import Outcome, WorkerPool, WorkItem

log = logging.getLogger(__name__)

WAIT_S = 0.5


@dataclass
class _ShardState:
    shard: Shard
    done: set[int] = field(default_factory=set)
    skipped: set[int] = field(default_factory=set)
    failed: dict[int, str] = field(default_factory=dict)
    rejections: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    seconds: float = 0.0

    def absorb(self, res: ShardResult, item: WorkItem) -> None:
        self.done.update(i for i in res.done if i in item.indices)
        self.skipped.update(i for i in res.skipped if i in item.indices and i not in self.done)
        for rule, count in res.rejections.items():
            self.rejections[rule] += int(count)
        self.seconds += float(res.seconds)

    def complete(self) -> set[int]:
        return self.done | self.skipped

    def finished(self) -> bool:
        return len(self.complete()) + len(self.failed) >= len(self.shard.indices)

    def result(self) -> ShardResult:
        return ShardResult(
            self.shard.shard_id,
            sorted(self.done),
            sorted(self.skipped - self.done),
            dict(sorted(self.failed.items())),
            dict(sorted(self.rejections.items())),
            round(self.seconds, 6),
        )


class Scheduler:
    """Runs the given shards on a pool until each is done or has failed samples."""

    def __init__(
        self,
        shards: list[Shard],
        journal: Journal,
        *,
        max_attempts: int = 3,
        events: logging.Logger | None = None,
        on_samples: Callable[[int], None] = lambda n: None,
        status_path: Path | None = None,
        on_shard: Callable[[], None] | None = None,
    ):
        self.journal = journal
        self.max_attempts = max(1, int(max_attempts))
        self.events = events or log
        self.on_samples = on_samples
        self.status_path = status_path
        self.on_shard = on_shard  # after each journaled shard (e.g. publish to a bucket)
        self._shards = {s.shard_id: s for s in shards}
        # Why lazy: a 100,000-item plan held ~77 MB of empty per-shard state in the driver; only
        # shards with work in flight have state, dropped once journaled. benchmarks/farm_scaling.py
        self.state: dict[int, _ShardState] = {}
        self.queue = deque(shards)
        self.attempts: dict[int, int] = defaultdict(int)
        self.finished: list[ShardResult] = []
        self._journaled: set[int] = set()
        self.ticks: dict[str, int] = defaultdict(int)  # slot -> samples reported by its item so far
        self._status_written = float("-inf")

    def run(self, pool: WorkerPool) -> list[ShardResult]:
        """Block until every shard is journaled; raises ConnectionFailed if no worker is left."""
        pool.on_progress = self._tick
        while self.queue or pool.busy():
            for slot in pool.idle():
                if not self.queue:
                    break
                pool.submit(slot, self.queue.popleft())
            for outcome in pool.wait(WAIT_S):
                self._handle(outcome)
            self._write_status(pool)
            if pool.usable() == 0 and (self.queue or pool.busy()):
                raise ConnectionFailed("no render worker could run: " + "; ".join(pool.retired_notes()))
        return self.finished

    def _tick(self, slot: str, n: int) -> None:
        """Per-sample progress inside a running item; settled when the item's outcome arrives."""
        self.ticks[slot] += n
        self.on_samples(n)

    def _handle(self, outcome: Outcome) -> None:
        _stop_on_full_disk(outcome)
        if outcome.item.shard_id in self._journaled:
            return  # a duplicate report for a shard already journaled
        st = self.state.get(outcome.item.shard_id) or self.state.setdefault(
            outcome.item.shard_id, _ShardState(self._shards[outcome.item.shard_id])
        )
        before = len(st.complete()) + len(st.failed) + self.ticks.pop(outcome.slot, 0)
        if outcome.result is not None:
            st.absorb(outcome.result, outcome.item)
            failures = {i: e for i, e in outcome.result.failed.items() if i in outcome.item.indices}
            for index, error in sorted(failures.items()):
                self._retry(st, (index,), error, outcome.slot)
            reported = set(outcome.result.done) | set(outcome.result.skipped) | set(failures)
            self._requeue_unreported(st, outcome, progressed=bool(reported & set(outcome.item.indices)))
        else:
            self.events.warning(
                "item failed",
                extra={
                    "event": "item_failed",
                    "worker": outcome.slot,
                    "shard": st.shard.shard_id,
                    "indices": list(outcome.item.indices),
                    "error": outcome.error,
                    "crashed": outcome.crashed,
                },
            )
            self._retry(st, outcome.item.indices, outcome.error, outcome.slot)
        self.on_samples(len(st.complete()) + len(st.failed) - before)
        if st.finished() and st.shard.shard_id not in self._journaled:
            self._finish(st, outcome.slot)

    def _requeue_unreported(self, st: _ShardState, outcome: Outcome, progressed: bool) -> None:
        """Samples the scenario left out (it may stop a shard early, e.g. after a failure) go back
        in the queue without costing an attempt, as long as the item made progress."""
        missing = tuple(
            i for i in outcome.item.indices if i not in st.complete() and i not in st.failed and i not in outcome.result.failed
        )
        if not missing:
            return
        if progressed:
            self.queue.append(WorkItem(st.shard.shard_id, missing))
        else:
            self._retry(st, missing, "scenario reported none of these samples", outcome.slot)

    def _retry(self, st: _ShardState, indices: tuple[int, ...], error: str, slot: str) -> None:
        todo = [i for i in indices if i not in st.complete() and i not in st.failed]
        for i in todo:
            self.attempts[i] += 1
        if len(todo) > 1:  # isolate: one bad sample must not sink its neighbours
            self.queue.extend(WorkItem(st.shard.shard_id, (i,)) for i in todo)
            return
        for i in todo:
            if self.attempts[i] >= self.max_attempts:
                st.failed[i] = error
                self.events.error(
                    "sample failed",
                    extra={
                        "event": "sample_failed",
                        "sample": i,
                        "shard": st.shard.shard_id,
                        "attempts": self.attempts[i],
                        "error": error,
                        "worker": slot,
                    },
                )
            else:
                self.queue.append(WorkItem(st.shard.shard_id, (i,)))

    def _finish(self, st: _ShardState, slot: str) -> None:
        result = st.result()
        self._journaled.add(result.shard_id)
        del self.state[result.shard_id]
        self.journal.finish_shard(result, dict(self.attempts), slot)
        self.finished.append(result)
        self.events.info(
            "shard finished",
            extra={
                "event": "shard_done",
                "shard": result.shard_id,
                "worker": slot,
                "done": len(result.done),
                "skipped": len(result.skipped),
                "failed": len(result.failed),
                "seconds": result.seconds,
            },
        )
        if self.on_shard is not None:
            self.on_shard()

    def _write_status(self, pool: WorkerPool) -> None:
        """Per-worker status for ``farm status`` while the job runs (atomic replace)."""
        now = time.monotonic()
        if self.status_path is None or now - self._status_written < WAIT_S:
            return
        self._status_written = now
        atomic_write_text(self.status_path, json.dumps({"pid": os.getpid(), "workers": pool.status()}, indent=1))


FULL_DISK = ("No space left on device", "Disk quota exceeded", "database or disk is full")


def _stop_on_full_disk(outcome: Outcome) -> None:
    """A full disk fails every later sample too: stop the job with one line instead of retrying
    each sample ``max_attempts`` times (issue 13: 371 lines of output, the cause buried)."""
    errors = [outcome.error or ""] + list((outcome.result.failed if outcome.result else {}).values())
    for error in errors:
        if any(marker in str(error) for marker in FULL_DISK):
            raise SceneforgeError(f"the output disk is full: {' '.join(str(error).split())[:300]}")
