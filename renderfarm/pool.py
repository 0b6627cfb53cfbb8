"""What the scheduler needs from a backend: slots that take work items and report outcomes.

Both backends (local processes, Ray actors) implement :class:`WorkerPool`; the retry, isolation
and journaling logic lives once, in :mod:`renderfarm.scheduler`.
"""

from __future__ import annotations

import logging
import time
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Callable

from sceneforge.scenarios.contract import Shard, ShardResult

log = logging.getLogger(__name__)

#: A slot whose worker died this many times in a row (no item finished in between) is retired.
MAX_CONSECUTIVE_DEATHS = 5
#: Default time budget per sample of a work item before its worker is killed (hang guard).
DEFAULT_SAMPLE_TIMEOUT_S = 600.0


#: Some (or all) of one shard's sample indices, sent to one worker: itself a Shard of the
#: contract (same id, a subset of its indices), so workers pass it to ``run`` unchanged.
WorkItem = Shard


@dataclass(frozen=True)
class Outcome:
    """What became of one submitted item."""

    slot: str
    item: WorkItem
    result: ShardResult | None  # None when the item raised or the worker died
    error: str = ""
    crashed: bool = False  # the worker process/actor died while holding the item


@dataclass
class SlotInfo:
    """Bookkeeping for one worker slot (shown by ``farm status`` while a job runs)."""

    name: str
    external: str | None = None
    state: str = "starting"  # starting | idle | busy | retired
    item: WorkItem | None = None
    pid: int | None = None
    server_pid: int | None = None
    address: str = ""
    items_done: int = 0
    deaths: int = 0
    note: str = ""
    node: str = ""  # Ray node id of the actor (servers are reaped only on ours)
    deadline: float = 0.0  # monotonic time by which the current item must finish
    timed_out: bool = False

    def describe(self) -> dict:
        return {
            "worker": self.name,
            "state": self.state,
            "pid": self.pid,
            "shard": self.item.shard_id if self.item else None,
            "server": self.address or self.external,
            "server_pid": self.server_pid,
            "items_done": self.items_done,
            "restarts": self.deaths,
            "note": self.note,
            "node": self.node,
        }


def outcome_from(slot: SlotInfo, item: WorkItem, payload: dict) -> Outcome:
    """Turn a worker's reply dict into an :class:`Outcome`."""
    if payload.get("ok"):
        res = dict(payload["result"])
        res["failed"] = {int(k): v for k, v in res.get("failed", {}).items()}
        return Outcome(slot.name, item, ShardResult(**res))
    return Outcome(slot.name, item, None, payload.get("error", "unknown error"))


class WorkerPool(ABC):
    """A set of named worker slots. All methods are called from the job's main thread."""

    slots: list[SlotInfo]
    #: Called as ``on_progress(slot, n)`` when a worker reports ``n`` more samples finished in its
    #: current item (backends that cannot report per sample simply never call it).
    on_progress: Callable[[str, int], None] = staticmethod(lambda slot, n: None)

    def idle(self) -> list[str]:
        return [s.name for s in self.slots if s.state == "idle"]

    def busy(self) -> int:
        return sum(s.state == "busy" for s in self.slots)

    def usable(self) -> int:
        return sum(s.state != "retired" for s in self.slots)

    def retired_notes(self) -> list[str]:
        return [f"{s.name}: {s.note}" for s in self.slots if s.state == "retired"]

    def start_clock(self, info: SlotInfo, item: WorkItem) -> None:
        """Arm the hang guard for ``item`` (``sample_timeout_s`` per sample, set by the job)."""
        budget = getattr(self, "sample_timeout_s", DEFAULT_SAMPLE_TIMEOUT_S)
        info.deadline = time.monotonic() + budget * max(1, len(item.indices))
        info.timed_out = False

    def overdue(self) -> list[SlotInfo]:
        """Busy slots past their deadline (each reported once)."""
        now = time.monotonic()
        late = [s for s in self.slots if s.state == "busy" and not s.timed_out and now > s.deadline]
        for s in late:
            s.timed_out = True
            log.error(
                "worker %s: shard %d ran past its time budget; killing the worker", s.name, s.item.shard_id if s.item else -1
            )
        return late

    def status(self) -> list[dict]:
        return [s.describe() for s in self.slots]

    def _slot(self, name: str) -> SlotInfo:
        return next(s for s in self.slots if s.name == name)

    @abstractmethod
    def submit(self, slot: str, item: WorkItem) -> None:
        """Hand ``item`` to the idle slot ``slot``."""

    @abstractmethod
    def wait(self, timeout: float) -> list[Outcome]:
        """Block up to ``timeout`` s; return finished items (and handle worker start/death)."""

    @abstractmethod
    def close(self) -> None:
        """Stop every worker and its server; safe to call twice and after a crash."""
