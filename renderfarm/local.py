"""Local backend: N worker processes, each owning one render server, talking over pipes.

Why not ``multiprocessing.Pool`` / ``ProcessPoolExecutor``: a pool hangs or breaks as a whole when
one worker is ``kill -9``-ed. Here each worker has its own duplex pipe and the parent waits on
pipes and process sentinels together (``multiprocessing.connection.wait``), so a dead worker is
noticed at once, its item is reported as crashed, its orphaned server is reaped and a fresh worker
takes the slot. Workers are started with ``spawn`` (no inherited locks, threads or GL state).

Process tree and shutdown: every worker is the leader of its own process group and gets SIGTERM
if the parent dies (``PR_SET_PDEATHSIG``); on SIGTERM it stops its server and exits. ``close``
asks idle workers to stop, SIGTERMs busy ones, and SIGKILLs the group of any that linger.
"""

from __future__ import annotations

import logging
import multiprocessing as mp
import os
import signal
import sys
import time
from dataclasses import dataclass
from multiprocessing.connection import wait as mp_wait
from pathlib import Path

from sceneforge.core.errors import ConfigError
from sceneforge.renderfarm.pool import MAX_CONSECUTIVE_DEATHS, Outcome, SlotInfo, WorkerPool, WorkItem, outcome_from
from sceneforge.renderfarm.procs import is_our_server, kill_group, send_signal
from sceneforge.renderfarm.worker import worker_main

log = logging.getLogger(__name__)

STOP_GRACE_S = 10.0


@dataclass(frozen=True)
class WorkerSpec:
    """Everything a worker needs to build its :class:`~renderfarm.worker.WorkerCore`."""

    scenario: str
    config: dict
    out_dir: str
    server_root: str
    log_path: str | None = None


NO_MAIN_GUARD_EXIT = 87  # a worker's exit code: it re-ran the user's run_job call (no __main__ guard)
NO_MAIN_GUARD = (
    "run_job() was called again while a worker process imported your script: local workers "
    "start with multiprocessing 'spawn', which re-imports the main module; put the call under "
    '`if __name__ == "__main__":` (or use backend="inline")'
)


def refuse_in_spawn_bootstrap() -> None:
    """A worker re-importing an unguarded script reaches run_job again: say why in one line and
    exit that worker with :data:`NO_MAIN_GUARD_EXIT`, which the parent turns into one ConfigError
    (instead of five tracebacks, one per worker)."""
    import multiprocessing as mp

    if getattr(mp.current_process(), "_inheriting", False):
        sys.stderr.write(f"sceneforge worker: {NO_MAIN_GUARD}\n")
        sys.stderr.flush()
        os._exit(NO_MAIN_GUARD_EXIT)


class LocalPool(WorkerPool):
    """``n`` local worker processes (or one per external server address)."""

    def __init__(self, spec: WorkerSpec, n_workers: int, servers: list[str] | None = None):
        self.spec = spec
        self._ctx = mp.get_context("spawn")
        addresses = servers if servers else [None] * n_workers
        self.slots = [SlotInfo(f"w{k}", external=a) for k, a in enumerate(addresses)]
        self._procs: dict[str, mp.Process] = {}
        self._conns: dict[str, object] = {}
        for slot in self.slots:
            self._spawn(slot)

    def _spawn(self, slot: SlotInfo) -> None:
        parent_end, child_end = self._ctx.Pipe()
        server_dir = str(Path(self.spec.server_root) / slot.name)
        proc = self._ctx.Process(
            target=worker_main,
            name=f"sceneforge-farm-{slot.name}",
            daemon=True,
            args=(
                child_end,
                self.spec.scenario,
                self.spec.config,
                self.spec.out_dir,
                server_dir,
                slot.external,
                self.spec.log_path,
            ),
        )
        proc.start()
        child_end.close()
        self._procs[slot.name], self._conns[slot.name] = proc, parent_end
        slot.state, slot.pid, slot.item, slot.server_pid = "starting", proc.pid, None, None

    def submit(self, slot: str, item: WorkItem) -> None:
        info = self._slot(slot)
        info.state, info.item = "busy", item
        self.start_clock(info, item)
        try:
            self._conns[slot].send(("run", item.shard_id, item.indices))
        except OSError as e:  # died since the last wait: the sentinel reports it with this item
            log.warning("worker %s: cannot send work (%s)", slot, e)

    def wait(self, timeout: float) -> list[Outcome]:
        live = [s for s in self.slots if s.state != "retired"]
        waitables = [self._conns[s.name] for s in live] + [self._procs[s.name].sentinel for s in live]
        ready = set(mp_wait(waitables, timeout)) if waitables else set()
        outcomes: list[Outcome] = []
        for slot in live:
            if self._conns[slot.name] in ready:
                outcomes += self._drain(slot)
        for slot in live:
            if slot.state != "retired" and not self._procs[slot.name].is_alive():
                outcomes += self._on_death(slot)
        for slot in self.overdue():  # hung: kill it; the next wait reports the death
            kill_group(slot.pid)
        return outcomes

    def _drain(self, slot: SlotInfo) -> list[Outcome]:
        conn, out = self._conns[slot.name], []
        try:
            while conn.poll():
                out += self._on_message(slot, conn.recv())
        except (EOFError, OSError):
            pass  # the sentinel check reports the death
        return out

    def _on_message(self, slot: SlotInfo, msg: tuple) -> list[Outcome]:
        kind, payload = msg
        if kind == "ready":
            slot.state, slot.server_pid, slot.address = "idle", payload["server_pid"], payload["address"]
            return []
        if kind == "fatal":
            self._retire(slot, payload)
            return []
        if kind == "progress":
            self.on_progress(slot.name, int(payload))
            return []
        item, slot.item, slot.state = slot.item, None, "idle"
        slot.server_pid = payload.get("server_pid", slot.server_pid)
        slot.items_done += 1
        slot.deaths = 0
        return [outcome_from(slot, item, payload)]

    def _on_death(self, slot: SlotInfo) -> list[Outcome]:
        proc = self._procs[slot.name]
        proc.join(1.0)
        if proc.exitcode == NO_MAIN_GUARD_EXIT:
            raise ConfigError(NO_MAIN_GUARD)
        log.warning("worker %s (pid %s) died with exit code %s", slot.name, proc.pid, proc.exitcode)
        self._reap(slot)
        item, out = slot.item, []
        if item is not None:
            why = "timed out (worker killed)" if slot.timed_out else f"worker died (exit code {proc.exitcode})"
            out.append(Outcome(slot.name, item, None, why, crashed=True))
        slot.deaths += 1
        if slot.deaths >= MAX_CONSECUTIVE_DEATHS:
            self._retire(slot, f"worker died {slot.deaths} times in a row")
        else:
            self._spawn(slot)
        return out

    def _retire(self, slot: SlotInfo, note: str) -> None:
        log.error("worker %s retired: %s", slot.name, note)
        slot.state, slot.note = "retired", note
        self._procs[slot.name].join(STOP_GRACE_S)
        self._reap(slot)

    def _reap(self, slot: SlotInfo) -> None:
        """Kill what a dead worker may have left: its process group and its server."""
        kill_group(self._procs[slot.name].pid)
        if slot.server_pid and is_our_server(slot.server_pid):
            send_signal(slot.server_pid)
        slot.server_pid = None

    def _interrupt(self, slot: SlotInfo, proc) -> None:
        """SIGTERM a busy worker *and* its server. The worker's SystemExit can be swallowed if it
        lands inside a ``__del__`` or a C callback; a server that is going away makes the
        scenario's next request fail, so the worker still returns promptly and sees its stop flag."""
        proc.terminate()
        if slot.server_pid and is_our_server(slot.server_pid):
            send_signal(slot.server_pid, signal.SIGTERM)

    def close(self) -> None:
        for slot in self.slots:
            proc = self._procs[slot.name]
            if not proc.is_alive():
                continue
            log.info("stopping worker %s (%s)", slot.name, slot.state)
            if slot.state == "idle":
                _send(self._conns[slot.name], ("stop",))
            else:
                self._interrupt(slot, proc)
        deadline = time.monotonic() + STOP_GRACE_S  # one deadline for all: workers stop in parallel
        for slot in self.slots:
            proc = self._procs[slot.name]
            proc.join(max(0.0, deadline - time.monotonic()))
            if proc.is_alive():
                log.warning("worker %s did not stop in %.0f s; killing it", slot.name, STOP_GRACE_S)
            self._reap(slot)
            proc.join(1.0)
            self._conns[slot.name].close()
            slot.state = "retired" if slot.state != "retired" else slot.state


def _send(conn, msg) -> None:
    try:
        conn.send(msg)
    except (OSError, EOFError):
        pass
