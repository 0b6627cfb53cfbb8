"""Ray backend: one actor per worker, each owning a render server on its node.

Mapping onto a cluster: ``ray.init(address="auto")`` joins the cluster; each actor reserves one
CPU, starts ``sceneforge serve`` on *its* node (or binds to an external UnrealCV address) and runs
shards with the same :class:`~renderfarm.worker.WorkerCore` as a local worker. Images never go
through Ray's object store: the scenario writes them straight into ``out_dir``, which must be a
filesystem every node mounts at the same path (NFS, Lustre, a FUSE bucket). Only tiny outcome
dicts travel back; the journal stays with the driver (one writer).

A dead actor (node lost, process killed) surfaces as ``RayActorError`` on its pending call; the
item counts as crashed and a fresh actor takes the slot, exactly as with local processes.
"""

from __future__ import annotations

import logging
import socket
from pathlib import Path

from sceneforge.core.errors import ConnectionFailed

from sceneforge.renderfarm.jsonlog import attach_json_log
from sceneforge.renderfarm.local import WorkerSpec
from sceneforge.renderfarm.pool import MAX_CONSECUTIVE_DEATHS, Outcome, SlotInfo, WorkerPool, WorkItem, outcome_from
from sceneforge.renderfarm.procs import is_our_server, send_signal
from sceneforge.renderfarm.worker import WorkerCore

log = logging.getLogger(__name__)
# How long --ray-address host:port may take to accept a TCP connection before the job gives up.
# Why: ray.init on an address where nothing listens printed a dozen warnings and retried for
# minutes (> 165 s); a head node that is up accepts at once. docs/renderfarm.md.
RAY_CONNECT_TIMEOUT_S = 10.0
# How long the head node's GCS may refuse connections before the job stops with one line. Why: a
# driver whose head node died or restarted sat in ray.wait until Ray's own reconnect timeout (60 s)
# then died with a C++ fatal log; finished shards are journaled, so the job can stop at once and
# the same command resumes against the restarted head. docs/renderfarm.md, "Ray backend".
HEAD_LOST_S = 5.0
HEAD_PROBE_EVERY_S = 1.0


class FarmActor:
    """Ray actor body (wrapped with ``ray.remote`` at pool start, so ray stays an optional import)."""

    def __init__(self, spec: WorkerSpec, server_dir: str, external: str | None):
        if spec.log_path:  # warnings land in the job's log (out_dir is on a shared filesystem)
            attach_json_log(Path(spec.log_path), level=logging.WARNING)
        self.core = WorkerCore(spec.scenario, spec.config, spec.out_dir, server_dir, external)

    def prepare(self) -> dict:
        import ray

        return {**self.core.prepare(), "node": ray.get_runtime_context().get_node_id()}

    def execute(self, shard_id: int, indices: tuple[int, ...]) -> dict:
        return self.core.execute(shard_id, indices)

    def shutdown(self) -> None:
        self.core.close()


def ray_init_message(address: str | None, error: BaseException, reachable: bool = False) -> str:
    """One line for a failed ``ray.init``: what failed, and the token-auth hint (clusters started
    with ``ray start`` in current Ray may require a token, read from ``$RAY_AUTH_TOKEN``,
    ``$RAY_AUTH_TOKEN_PATH`` or ``~/.ray/auth_token``; see docs/renderfarm.md)."""
    first = " ".join(str(error).split())[:300] or type(error).__name__
    hint = ""
    # Ray 2.60 with a wrong or missing token: only "ConnectionError: Failed to connect to Ray cluster"
    # reaches Python (InvalidAuthToken is in its C++ log); the head accepted our TCP connect, though.
    refused = reachable and isinstance(error, ConnectionError)
    if refused or any(w in first.lower() for w in ("auth", "token", "unauthenticated", "permission")):
        hint = (
            "; the cluster uses token authentication: set RAY_AUTH_MODE=token and RAY_AUTH_TOKEN "
            "(or RAY_AUTH_TOKEN_PATH / ~/.ray/auth_token) to the head node's token"
        )
    return f"--ray-address {address or '(local)'}: cannot connect to the Ray cluster ({type(error).__name__}: {first}){hint}"


def _explicit(address: str | None) -> bool:
    """An address :func:`check_reachable` probed (so the head accepted a TCP connection)."""
    return bool(address) and address not in ("auto", "local") and ":" in address


def check_reachable(address: str | None, timeout_s: float = RAY_CONNECT_TIMEOUT_S) -> None:
    """ConnectionFailed in one line when nothing accepts a TCP connection at ``host:port`` (also
    ``ray://host:port``) within ``timeout_s``; ``auto``, ``local`` and no address are Ray's to find."""
    if not address or address in ("auto", "local"):
        return
    host, sep, port = address.split("://", 1)[-1].rpartition(":")
    if not sep or not port.isdigit():
        return  # not host:port: Ray parses it and says what is wrong
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=timeout_s).close()
    except (OSError, OverflowError, ValueError) as e:
        reason = getattr(e, "strerror", None) or str(e) or type(e).__name__
        raise ConnectionFailed(
            f"--ray-address {address}: nothing accepts connections at {host}:{port} "
            f"({reason}; waited at most {timeout_s:g} s); is the Ray head node running "
            "(`ray start --head`)?"
        ) from None


class RayPool(WorkerPool):
    """``n`` Ray actors (or one per external server address)."""

    def __init__(
        self,
        spec: WorkerSpec,
        n_workers: int | None,
        servers: list[str] | None,
        ray_address: str | None,
        max_workers: int | None = None,
    ):
        import ray

        self._ray = ray
        self._owns_ray = not ray.is_initialized()
        if self._owns_ray:
            check_reachable(ray_address)
            try:
                ray.init(address=ray_address, include_dashboard=False, log_to_driver=False, ignore_reinit_error=True)
            except Exception as e:  # noqa: BLE001 - Ray raises many types; the user needs one line
                raise ConnectionFailed(ray_init_message(ray_address, e, reachable=_explicit(ray_address))) from None
        self._actor_cls = ray.remote(num_cpus=1, max_restarts=0)(FarmActor)
        self._node = ray.get_runtime_context().get_node_id()
        self._head = HeadWatch(ray.get_runtime_context().gcs_address)
        self.spec = spec
        n = n_workers or max(1, min(int(ray.cluster_resources().get("CPU", 1)), max_workers or 1 << 30))
        addresses = servers if servers else [None] * n
        self.slots = [SlotInfo(f"r{k}", external=a) for k, a in enumerate(addresses)]
        self._actors: dict[str, object] = {}
        self._pending: dict[object, tuple[str, str]] = {}  # ObjectRef -> (slot, "prepare"|"execute")
        for slot in self.slots:
            self._spawn(slot)

    def _spawn(self, slot: SlotInfo) -> None:
        server_dir = f"{self.spec.server_root}/{slot.name}"
        actor = self._actor_cls.remote(self.spec, server_dir, slot.external)
        self._actors[slot.name] = actor
        self._pending[actor.prepare.remote()] = (slot.name, "prepare")
        slot.state, slot.item = "starting", None

    def submit(self, slot: str, item: WorkItem) -> None:
        info = self._slot(slot)
        self.start_clock(info, item)
        ref = self._actors[slot].execute.remote(item.shard_id, item.indices)
        self._pending[ref] = (slot, "execute")
        info.state, info.item = "busy", item

    def wait(self, timeout: float) -> list[Outcome]:
        self._head.check()
        for slot in self.overdue():  # hung: kill the actor; its pending call then fails
            self._ray.kill(self._actors[slot.name], no_restart=True)
        if not self._pending:
            return []
        ready, _ = self._ray.wait(list(self._pending), num_returns=1, timeout=timeout)
        outcomes = []
        for ref in ready:
            name, kind = self._pending.pop(ref)
            outcomes += self._on_ready(self._slot(name), kind, ref)
        return outcomes

    def _on_ready(self, slot: SlotInfo, kind: str, ref) -> list[Outcome]:
        try:
            payload = self._ray.get(ref)
        except self._ray.exceptions.RayActorError as e:
            why = "timed out (actor killed)" if slot.timed_out else f"worker actor died ({type(e).__name__})"
            return self._on_death(slot, why)
        except self._ray.exceptions.RayTaskError as e:  # prepare() raised: no server, bad scenario
            self._retire(slot, str(e).strip().splitlines()[-1][:300])
            return []
        if kind == "prepare":
            slot.state, slot.server_pid, slot.address = "idle", payload["server_pid"], payload["address"]
            slot.pid, slot.node = payload["pid"], payload["node"]
            return []
        item, slot.item, slot.state = slot.item, None, "idle"
        slot.items_done, slot.deaths = slot.items_done + 1, 0
        return [outcome_from(slot, item, payload)]

    def _on_death(self, slot: SlotInfo, error: str) -> list[Outcome]:
        log.warning("ray worker %s: %s", slot.name, error)
        if slot.node == self._node and slot.server_pid and is_our_server(slot.server_pid):
            send_signal(slot.server_pid)  # the dead actor's server, when it ran on this node
        slot.server_pid = None
        item = slot.item
        out = [Outcome(slot.name, item, None, error, crashed=True)] if item else []
        slot.deaths += 1
        if slot.deaths >= MAX_CONSECUTIVE_DEATHS:
            self._retire(slot, f"actor died {slot.deaths} times in a row")
        else:
            self._spawn(slot)
        return out

    def _retire(self, slot: SlotInfo, note: str) -> None:
        log.error("ray worker %s retired: %s", slot.name, note)
        slot.state, slot.note, slot.item = "retired", note, None
        self._kill(slot.name)

    def _kill(self, name: str) -> None:
        actor = self._actors.pop(name, None)
        if actor is not None:
            self._ray.kill(actor, no_restart=True)

    def close(self) -> None:
        """Ask every started actor to stop its server, then kill the actors (and Ray, if we started
        it). Actors still waiting for a node (a lost node's replacement with no CPU left) are just
        killed: asking them would wait out the whole timeout. With the head node gone nothing is
        asked of Ray (every call would block on the lost GCS)."""
        if self._head.lost or not self._head.answers():
            for slot in self.slots:
                slot.state = "retired"
            return
        ray = self._ray
        started = {s.name for s in self.slots if s.state in ("idle", "busy")}
        refs = [a.shutdown.remote() for n, a in self._actors.items() if n in started]
        try:
            ray.wait(refs, num_returns=len(refs), timeout=15)
        except Exception as e:  # a dead actor must not block the others' shutdown
            log.warning("ray shutdown: %s", e)
        for name in list(self._actors):
            self._kill(name)
        for slot in self.slots:
            slot.state = "retired"
        if self._owns_ray:
            ray.shutdown()


class HeadWatch:
    """Notices a lost head node: its GCS port refusing TCP connections for ``HEAD_LOST_S``.

    Ray itself only gives up after its GCS reconnect timeout and then kills the driver process
    with a C++ fatal log, so the journal's user would see no reason. A TCP connect every
    ``HEAD_PROBE_EVERY_S`` costs nothing beside ``ray.wait``.
    """

    def __init__(self, gcs_address: str | None, lost_after_s: float = HEAD_LOST_S):
        self.address = gcs_address or ""
        self.lost_after_s = lost_after_s
        self.lost = False
        self._last_probe = 0.0
        self._down_since: float | None = None

    def answers(self) -> bool:
        return not self.address or _accepts(self.address)

    def check(self) -> None:
        """ConnectionFailed (one line) once the head has refused connections long enough."""
        import time

        now = time.monotonic()
        if not self.address or now - self._last_probe < HEAD_PROBE_EVERY_S:
            return
        self._last_probe = now
        if _accepts(self.address):
            self._down_since = None
            return
        self._down_since = self._down_since or now
        if now - self._down_since >= self.lost_after_s:
            self.lost = True
            raise ConnectionFailed(
                f"the Ray head node at {self.address} stopped answering for {self.lost_after_s:g} s "
                "(restarted or lost); finished shards are in the journal: re-run the same command "
                "to resume once the cluster is up"
            )


def _accepts(address: str, timeout_s: float = 2.0) -> bool:
    host, _, port = address.rpartition(":")
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=timeout_s).close()
        return True
    except (OSError, ValueError):
        return False
