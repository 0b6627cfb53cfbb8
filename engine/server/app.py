"""The socket loop of the embedded render server (UnrealCV wire protocol).

Threads: one accepts connections, one per client reads frames and writes replies, and a single
*worker* runs every command. The worker is the only thread that touches the scene or the GL
context (moderngl standalone contexts only work in the thread that created them), so scene edits
and renders from concurrent clients are serialised without locks in the handlers. A client's
requests reach the worker as they arrive (up to ``PIPELINE_DEPTH`` at once per connection), and
its replies go back in request order.

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
import selectors
import socket
import threading
import time
from collections import deque
from concurrent.futures import CancelledError, Future, ThreadPoolExecutor

from sceneforge.core.errors import ProtocolError
from sceneforge.engine.protocol import DEFAULT_MAX_FRAME, HEADER, join_reply, parse_header, recv_exact, send_frame, split_request
from sceneforge.engine.server.commands.table import dispatch
from sceneforge.engine.server.state import ServerState

log = logging.getLogger(__name__)

_ID_RE = re.compile(rb"^(\d{1,18}):")
DEFAULT_MAX_CLIENTS = 64
PIPELINE_DEPTH = 8   # a connection's requests with the worker at once (RenderServer._client_loop)
STOP_POLL_S = 1.0    # how often a waiting connection thread looks whether the server is stopping


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
        """Read requests, run them on the worker, send the replies in request order.

        Up to ``PIPELINE_DEPTH`` of this connection's requests are with the worker at once: a
        client that queues its next request before reading a reply (the sampler does) has it
        waiting when the worker finishes the current one, instead of the worker idling through a
        hand-off (reply sent, next frame read, submitted: ~0.15 ms a request). The depth is small so
        that one client cannot crowd out the others' requests on the shared worker. A client that
        stops reading its replies blocks only its own connection thread."""
        pending: deque[tuple[int, Future] | bytes] = deque()
        wake_r, wake_w = socket.socketpair()
        wake_r.setblocking(False)
        wake_w.setblocking(False)
        events = selectors.DefaultSelector()
        try:
            events.register(wake_r, selectors.EVENT_READ)
            events.register(conn, selectors.EVENT_READ)
            watching = True

            def ring(_fut: Future) -> None:
                try:
                    wake_w.send(b"\0")
                except OSError:   # full (a wake-up is already pending) or closed
                    pass

            while not self._stopping.is_set():
                while pending and (isinstance(pending[0], bytes) or pending[0][1].done()):
                    send_frame(conn, self._reply(pending.popleft()))
                room = len(pending) < PIPELINE_DEPTH
                if room and not watching:
                    events.register(conn, selectors.EVENT_READ)
                elif watching and not room:   # full: the next request waits in the socket
                    events.unregister(conn)
                watching = room
                for key, _ in events.select(timeout=STOP_POLL_S):   # (a socket closed under us is not reported)
                    if key.fileobj is wake_r:
                        _drain(wake_r)
                        continue
                    payload = self._next_request(conn, pending)
                    if payload is None:
                        return
                    pending.append(self._submit(payload, ring))
        except ValueError:   # the selector refused the socket: closed under us by shutdown()
            if conn.fileno() != -1:
                raise
        finally:
            for item in pending:   # connection gone: nobody reads these replies
                if not isinstance(item, bytes):
                    item[1].cancel()
            events.close()
            wake_r.close()
            wake_w.close()

    def _next_request(self, conn: socket.socket, pending: deque) -> bytes | None:
        """The next request's payload, or None when the connection ends: at EOF (the replies of
        the requests in flight are sent first: a client that half-closes still gets them) or at
        a malformed frame (those replies, then its error)."""
        try:
            payload = self._read_frame(conn)
        except ProtocolError as e:
            log.warning("closing connection after a malformed frame: %s", e)
            self._flush(conn, pending)
            _send_quietly(conn, f"error {e}".encode())
            return None
        if payload is None:
            self._flush(conn, pending)
        return payload

    def _read_frame(self, conn: socket.socket) -> bytes | None:
        first = conn.recv(HEADER.size)
        if not first:
            return None
        header = first + (recv_exact(conn, HEADER.size - len(first)) if len(first) < HEADER.size else b"")
        return recv_exact(conn, parse_header(header, self.max_frame))

    # --- requests ----------------------------------------------------------------------------
    def _submit(self, payload: bytes, done) -> "tuple[int, Future] | bytes":
        """Queue a request's command on the worker: (request id, future), or the reply itself when
        the request is refused without running anything. ``done(future)`` is called when it ends."""
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
            fut = self._worker.submit(self._run, command)
        except RuntimeError:  # executor shut down
            return join_reply(request_id, "error server is shutting down")
        fut.add_done_callback(done)
        return request_id, fut

    @staticmethod
    def _reply(item: "tuple[int, Future] | bytes") -> bytes:
        """The reply payload of a :meth:`_submit` result (waits for its command)."""
        if isinstance(item, bytes):
            return item
        request_id, fut = item
        try:
            reply = fut.result()
        except (RuntimeError, CancelledError):  # request dropped at shutdown
            reply = "error server is shutting down"
        return join_reply(request_id, reply)

    def _flush(self, conn: socket.socket, pending: deque) -> None:
        """Send the replies of the requests in flight, in order (before closing the connection)."""
        try:
            while pending:
                send_frame(conn, self._reply(pending.popleft()))
        except OSError:
            pass

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


def _drain(sock: socket.socket) -> None:
    """Read the wake-up bytes waiting on ``sock`` (a non-blocking socket)."""
    try:
        while sock.recv(4096):
            pass
    except (BlockingIOError, InterruptedError):
        pass


def _send_quietly(conn: socket.socket, payload: bytes) -> None:
    try:
        send_frame(conn, payload)
    except OSError:
        pass
