"""The render server a worker talks to: its own embedded server, or an external UnrealCV address.

Why the worker (not the job's parent) owns its server: the server then lives exactly as long as the
worker, on the same node (which is what makes the Ray backend work on a cluster), and a worker
that is told to stop takes its server down with it. The parent still learns each server's pid so
it can reap the server of a worker that was ``kill -9``-ed (see ``renderfarm.local``).

Health check = the stock UnrealCV handshake (greeting frame, ``vget /unrealcv/status``), so it
works against a real UE5 + UnrealCV server as well as ours; our own servers must also render a
frame (:func:`renders`), since a broken renderer does not stop the status command.
"""

from __future__ import annotations

import logging
import socket
from pathlib import Path

from sceneforge.core.errors import ConfigError, ConnectionFailed, ProtocolError
from sceneforge.engine.protocol import recv_frame, send_frame
from sceneforge.engine.server.launch import start_server
from sceneforge.scenarios.contract import ServerSpec

log = logging.getLogger(__name__)

SERVER_STOP_GRACE_S = 5.0  # SIGTERM → SIGKILL; below the farm's 10 s grace for whole workers


def parse_address(address: str) -> tuple[str, int]:
    """``"host:port"`` → ``(host, port)``; a bad address is a ConfigError naming it."""
    host, sep, port = str(address).strip().rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ConfigError(f"--servers: '{address}' is not HOST:PORT")
    return host, int(port)


def parse_server_list(spec: str | list[str] | None) -> list[str] | None:
    """``"a:1,b:2"`` or ``["a:1", "b:2"]`` → validated list (None stays None)."""
    if spec is None:
        return None
    items = spec.split(",") if isinstance(spec, str) else list(spec)
    items = [s.strip() for s in items if s.strip()]
    if not items:
        raise ConfigError("--servers: empty server list")
    for s in items:
        parse_address(s)
    return items


def ping(address: str, timeout: float = 10.0) -> bool:
    """True when an UnrealCV server answers ``vget /unrealcv/status`` at ``address``."""
    host, port = parse_address(address)
    try:
        with socket.create_connection((host, port), timeout=timeout) as sock:
            sock.settimeout(timeout)
            recv_frame(sock)  # the "connected to ..." greeting
            send_frame(sock, b"1:vget /unrealcv/status")
            return recv_frame(sock).startswith(b"1:")
    except (OSError, ProtocolError):
        return False


def renders(address: str, timeout: float = 30.0) -> bool:
    """True when our server answers the status *and* renders a frame: a server whose renderer is
    broken still answers ``vget /unrealcv/status`` (issue 13: every render failed until a restart
    while the status check passed). Renders camera 0's instance ids at its current size (cheap,
    changes nothing in the scene)."""
    host, port = parse_address(address)
    try:
        with socket.create_connection((host, port), timeout=timeout) as sock:
            sock.settimeout(timeout)
            recv_frame(sock)
            send_frame(sock, b"1:vget /unrealcv/status")
            if not recv_frame(sock).startswith(b"1:"):
                return False
            send_frame(sock, b"2:vget /sceneforge/render 0 instance_id")
            return recv_frame(sock).startswith(b"2:SFARR1")
    except (OSError, ProtocolError):
        return False


def check_serves(address: str, spec) -> None:
    """Refuse (one line) an external sceneforge server that lacks the job's packs, licence filter
    or renderer: it would render other assets than the sampler placed. A real UE5 + UnrealCV
    server has no ``/sceneforge/info`` and is trusted (its level defines the assets)."""
    from sceneforge.engine.client import RenderClient  # loads numpy: only to check an external server

    with RenderClient(address, timeout=10) as client:
        if not client.is_sceneforge:
            return
        info = client.info()
    problems = []
    missing = sorted(set(spec.assets) - set(info.get("packs") or ()))
    if missing:
        problems.append(f"asset packs {', '.join(missing)} (start it with --assets ...)")
    theirs = sorted(info.get("licenses") or []) or None
    if sorted(spec.licenses or []) != (theirs or []):
        problems.append(
            f"licences {','.join(spec.licenses) if spec.licenses else 'all'} "
            f"(it serves {','.join(theirs) if theirs else 'all'}; start it with --licenses ...)"
        )
    if str(info.get("renderer", "gl")).split(":")[0] != spec.renderer.split(":")[0]:
        problems.append(f"renderer {spec.renderer} (it runs {info.get('renderer')})")
    if problems:
        raise ConfigError(f"--servers {address}: this job needs " + "; ".join(problems))


def check_reachable(address: str, timeout: float = 5.0) -> None:
    """Fail fast, in one line, when a user-given server does not accept connections (the
    client would otherwise retry for its whole connect timeout)."""
    host, port = parse_address(address)
    try:
        socket.create_connection((host, port), timeout=timeout).close()
    except OSError as e:
        raise ConnectionFailed(f"--server {address}: cannot connect ({e.strerror or e})") from None


class ServerSlot:
    """One worker's server: started on demand, health-checked before work, restarted if dead."""

    def __init__(self, output_dir: Path, external: str | None = None, threads: int = 1, spec=None):
        self.output_dir = Path(output_dir)
        self.external = external
        self.threads = threads
        self.spec = spec or ServerSpec()
        self._checked = False
        self._handle = None
        self.restarts = 0

    @property
    def pid(self) -> int | None:
        return getattr(self._handle, "pid", None)

    def ensure(self) -> str:
        """Return a live server's address, (re)starting our own server when needed."""
        if self.external is not None:
            if not ping(self.external):
                raise ConnectionFailed(f"external server {self.external} does not answer")
            if not self._checked:
                check_serves(self.external, self.spec)
                self._checked = True
            return self.external
        if self._handle is not None and renders(self._handle.address):
            return self._handle.address
        if self._handle is not None:
            log.warning("render server %s (pid %s) is not answering; restarting it", self._handle.address, self.pid)
            self.restarts += 1
        self.close()
        self._handle = self._start()
        return self._handle.address

    def _start(self):
        self.output_dir.mkdir(parents=True, exist_ok=True)
        return start_server(
            port=0,
            output_dir=self.output_dir,
            threads=self.threads,
            assets=list(self.spec.assets),
            licenses=self.spec.licenses,
            renderer=self.spec.renderer,
        )

    def close(self) -> None:
        """Stop our server (never an external one)."""
        handle, self._handle = self._handle, None
        if handle is not None:
            try:
                handle.stop(grace=SERVER_STOP_GRACE_S)
            except Exception as e:  # a dead server must not stop the shutdown of the others
                log.warning("stopping render server pid %s: %s", getattr(handle, "pid", "?"), e)
