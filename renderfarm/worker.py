"""What runs inside one worker (a local process or a Ray actor): scenario + server + one shard.

The same :func:`execute` serves both backends, so a shard behaves identically whichever runs it.
Outcomes are plain dicts (picklable, tiny): images never travel back to the parent; the scenario
writes them straight into the output directory.
"""

from __future__ import annotations

import ctypes
import faulthandler
import inspect
import logging
import os
import signal
import threading
import time
import traceback
from dataclasses import asdict
from pathlib import Path

from sceneforge.scenarios.contract import Scenario, Shard, ShardResult, get_scenario
from sceneforge.renderfarm.jsonlog import attach_json_log
from sceneforge.renderfarm.manifest import hold_worker_lock
from sceneforge.renderfarm.servers import ServerSlot

log = logging.getLogger(__name__)

# One renderer thread per worker unless the user's environment says otherwise, so N workers on
# N cores do not oversubscribe (llvmpipe would otherwise start one thread per core in every server).
THREAD_ENV = ("LP_NUM_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


def limit_threads() -> None:
    for name in THREAD_ENV:
        os.environ.setdefault(name, "1")


def one_line(exc: BaseException, limit: int = 500) -> str:
    """``TypeName: first line of the message`` (errors land in the journal and the summary)."""
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {text}"[:limit]


class WorkerCore:
    """Scenario + server slot of one worker; :meth:`execute` runs one work item. The scenario is
    built once per worker (its config parsed once), then serves every item the worker runs."""

    def __init__(self, scenario: str, config: dict, out_dir: str, server_dir: str, external: str | None):
        limit_threads()
        self.scenario: Scenario = get_scenario(scenario)(config)
        self.out_dir = Path(out_dir)
        self.needs_server = bool(self.scenario.NEEDS_SERVER)
        self.takes_progress = "progress" in inspect.signature(self.scenario.run).parameters
        spec = self.scenario.server_spec() if self.needs_server else None
        self.slot = ServerSlot(Path(server_dir), external=external, spec=spec)

    def prepare(self) -> dict:
        """Start (or reach) the server before the first item; raises if that is impossible."""
        address = self.slot.ensure() if self.needs_server else ""
        return {"pid": os.getpid(), "server_pid": self.slot.pid, "address": address}

    def execute(self, shard_id: int, indices: tuple[int, ...], progress=None) -> dict:
        """Run the scenario on one item; never raises (the error is part of the outcome).

        ``progress(n)`` is handed to scenarios whose ``run`` takes a ``progress`` keyword (called
        after each finished sample), so the job's bar moves per sample, not per shard."""
        t0 = time.perf_counter()
        extra = {"progress": progress} if progress is not None and self.takes_progress else {}
        try:
            server = self.slot.ensure() if self.needs_server else ""
            result = self.scenario.run(Shard(shard_id, tuple(indices)), self.out_dir, server=server, **extra)
            if not isinstance(result, ShardResult):
                raise TypeError(f"run() returned {type(result).__name__}, not ShardResult")
            out = {"ok": True, "result": asdict(result)}
        except Exception as e:
            log.warning(
                "shard %d %s failed: %s", shard_id, list(indices)[:4], one_line(e), extra={"traceback": traceback.format_exc()}
            )
            out = {"ok": False, "error": one_line(e)}
        out.update(server_pid=self.slot.pid, seconds=time.perf_counter() - t0)
        return out

    def close(self) -> None:
        self.slot.close()


def _die_with_parent() -> None:
    """Linux: get SIGTERM when the parent dies (even by ``kill -9``), so no worker is orphaned."""
    try:
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


_STOPPING = threading.Event()
STOP_WATCHDOG_S = 5.0  # after SIGTERM, a worker still running by then kills its group and exits


def _raise_exit(signum, _frame) -> None:
    """SIGTERM: leave now. The flag makes the worker quit even if library code between here and
    the scenario catches the SystemExit and turns it into an ordinary error (or retries a
    connection for a while); the watchdog bounds the time in any case."""
    if not _STOPPING.is_set():
        _STOPPING.set()
        watchdog = threading.Timer(STOP_WATCHDOG_S, _hard_exit, args=(128 + signum,))
        watchdog.daemon = True
        watchdog.start()
    raise SystemExit(128 + signum)


def _hard_exit(code: int) -> None:
    """Last resort: SIGKILL this worker's process group (its server and itself)."""
    if os.getpgrp() == os.getpid():
        os.killpg(os.getpgrp(), signal.SIGKILL)
    os._exit(code)


def worker_main(
    conn, scenario: str, config: dict, out_dir: str, server_dir: str, external: str | None, log_path: str | None
) -> None:
    """Entry point of a local worker process: serve ``("run", shard_id, indices)`` until stop.

    The worker runs in its own process group and ignores SIGINT: Ctrl-C goes to the parent,
    which stops workers in order (so servers are shut down, not killed mid-write).
    """
    os.setpgrp()
    _die_with_parent()
    faulthandler.register(signal.SIGUSR1, all_threads=True)  # `kill -USR1 PID`: dump stacks
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, _raise_exit)
    if log_path:
        attach_json_log(Path(log_path), level=logging.WARNING)
    core = None
    lock = hold_worker_lock(Path(out_dir))  # a resumed run waits for it (kill -9 of the parent)
    try:
        core = WorkerCore(scenario, config, out_dir, server_dir, external)
        conn.send(("ready", core.prepare()))
        _serve(conn, core)
    except (EOFError, BrokenPipeError, KeyboardInterrupt, SystemExit):
        pass
    except Exception as e:
        _send_quietly(conn, ("fatal", one_line(e)))
    finally:
        if core is not None:
            core.close()
        _kill_stragglers()
        lock.close()


def _kill_stragglers() -> None:
    """SIGTERM whatever is left in this worker's process group (e.g. a server caught mid-start
    when the stop came), sparing the worker itself, so nothing outlives it."""
    if os.getpgrp() != os.getpid():  # never signal a group we do not lead (the job's own)
        return
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    try:
        os.killpg(os.getpgrp(), signal.SIGTERM)
    except OSError:
        pass


def _serve(conn, core: WorkerCore) -> None:
    while True:
        msg = conn.recv()
        if msg[0] == "stop":
            return
        _, shard_id, indices = msg
        outcome = core.execute(shard_id, indices, progress=lambda n=1: conn.send(("progress", n)))
        if _STOPPING.is_set():
            return
        conn.send(("done", outcome))


def _send_quietly(conn, msg) -> None:
    try:
        conn.send(msg)
    except (OSError, EOFError):
        pass
