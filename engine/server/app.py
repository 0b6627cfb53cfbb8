"""The socket loop of the embedded render server (UnrealCV wire protocol).

Threads: one accepts connections, one per client reads frames and writes replies, and a single
*worker* runs every command. The worker is the only thread that touches the scene or the GL
context (moderngl standalone contexts only work in the thread that created them), so scene edits
and renders from concurrent clients are serialised without locks in the handlers.

Robustness: a frame with a bad magic or an oversized length cannot be resynchronised, so the
server answers one ``error ...`` frame and closes that connection; a well-framed request that is
not ``<id>:<utf-8 command>`` gets an ``error ...`` reply and the connection stays open; a client
vanishing mid-request only ends its own thread. Nothing a client sends stops the server.

>>> srv = RenderServer(ServerState(AssetCatalog(None)), port=0)    # doctest: +SKIP
>>> host, port = srv.start(); ...; srv.shutdown()                      # doctest: +SKIP
"""
from __future__ import annotations

import logging
import re
import socket
import threading
import time
from concurrent.futures import CancelledError, ThreadPoolExecutor

from core.errors import ProtocolError
from engine.protocol import DEFAULT_MAX_FRAME, HEADER, join_reply, parse_header, recv_exact, send_frame, split_request
from engine.server.commands.table import dispatch
from engine.server.state import ServerState

log = logging.getLogger(__name__)

_ID_RE = re.compile(rb"^(\d{1,18}):")
DEFAULT_MAX_CLIENTS = 64


class RenderServer:
    """Listens on ``host:port`` and serves UnrealCV requests against one :class:`ServerState`."""

    def __init__(self, state: ServerState, host: str = "127.0.0.1", port: int = 9000,
                 max_frame: int = DEFAULT_MAX_FRAME, max_clients: int = DEFAULT_MAX_CLIENTS) -> None:
        self.state = state
        self.host, self.port = host, port
        self.max_frame = max_frame
        self._slots = threading.BoundedSemaphore(max_clients)
        self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="sceneforge-render")
        self._listener: socket.socket | None = None
        self._clients: set[socket.socket] = set()
        self._clients_lock = threading.Lock()
        self._stopping = threading.Event()

    # --- lifecycle ---------------------------------------------------------------------------
    def start(self) -> tuple[str, int]:
        """Bind, listen and start accepting; returns the bound (host, port)."""
        sock = socket.socket(socket.AF_INET6 if ":" in self.host else socket.AF_INET, socket.SOCK_STREAM)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind((self.host, self.port))
            sock.listen(socket.SOMAXCONN)  # a burst of clients must not overflow the queue
        except OSError:
            sock.close()
            raise
        self._listener = sock
        self.port = sock.getsockname()[1]
        self.state.port = self.port
        threading.Thread(target=self._accept_loop, name="sceneforge-accept", daemon=True).start()
        return self.host, self.port

    def shutdown(self, timeout: float = 10.0) -> None:
        """Stop accepting, drop clients, release the renderer in its own thread."""
        if self._stopping.is_set():
            return
        self._stopping.set()
        if self._listener is not None:
            _close(self._listener)
        with self._clients_lock:
            for conn in list(self._clients):
                _close(conn)
        try:
            self._worker.submit(self.state.close).result(timeout=timeout)
        except Exception:  # shutting down anyway; a stuck renderer must not block exit
            log.exception("renderer did not close cleanly")
        self._worker.shutdown(wait=False, cancel_futures=True)

    # --- connections -------------------------------------------------------------------------
    def _accept_loop(self) -> None:
        while not self._stopping.is_set():
            try:
                conn, addr = self._listener.accept()
            except OSError:
                break  # listener closed by shutdown()
            threading.Thread(target=self._serve_client, args=(conn, addr), daemon=True,
                             name=f"sceneforge-client-{addr[1]}").start()

    def _serve_client(self, conn: socket.socket, addr) -> None:
        if not self._slots.acquire(blocking=False):
            _send_quietly(conn, b"error too many clients")
            _close(conn)
            return
        with self._clients_lock:
            self._clients.add(conn)
        try:
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            send_frame(conn, f"connected to sceneforge on port {self.port}".encode())
            self._client_loop(conn)
        except OSError as e:
            log.debug("client %s went away: %s", addr, e)
        finally:
            with self._clients_lock:
                self._clients.discard(conn)
            _close(conn)
            self._slots.release()

    def _client_loop(self, conn: socket.socket) -> None:
        while not self._stopping.is_set():
            try:
                payload = self._read_frame(conn)
            except ProtocolError as e:
                log.warning("closing connection after a malformed frame: %s", e)
                _send_quietly(conn, f"error {e}".encode())
                return
            if payload is None:
                return  # clean EOF between frames
            send_frame(conn, self.handle(payload))

    def _read_frame(self, conn: socket.socket) -> bytes | None:
        first = conn.recv(HEADER.size)
        if not first:
            return None
        header = first + (recv_exact(conn, HEADER.size - len(first)) if len(first) < HEADER.size else b"")
        return recv_exact(conn, parse_header(header, self.max_frame))

    # --- requests ----------------------------------------------------------------------------
    def handle(self, payload: bytes) -> bytes:
        """One request payload → one reply payload; the command itself runs on the worker thread."""
        m = _ID_RE.match(payload)
        if not m:
            return b"error request is not of the form '<id>:<command>'"
        try:
            request_id, command = split_request(payload)
        except ProtocolError as e:
            return join_reply(int(m.group(1)), f"error {e}")
        if self._stopping.is_set():
            return join_reply(request_id, "error server is shutting down")
        try:
            reply = self._worker.submit(self._run, command).result()
        except (RuntimeError, CancelledError):  # executor shut down / request dropped at shutdown
            reply = "error server is shutting down"
        return join_reply(request_id, reply)


    def _run(self, command: str) -> str | bytes:
        """One command on the worker thread, its wall time added to ``state.busy_s``."""
        t = time.perf_counter()
        try:
            return dispatch(self.state, command)
        finally:
            self.state.busy_s += time.perf_counter() - t


def _close(sock: socket.socket) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    try:
        sock.close()
    except OSError:
        pass


def _send_quietly(conn: socket.socket, payload: bytes) -> None:
    try:
        send_frame(conn, payload)
    except OSError:
        pass
