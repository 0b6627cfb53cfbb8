"""The socket loop of the embedded render server (UnrealCV wire protocol).

Threads: one accepts connections, one per client reads frames and writes replies, and a single
*worker* runs every command that renders or changes something. The worker is the only thread that
edits the scene or touches the GL context (moderngl standalone contexts only work in the thread
that created them), so scene edits and renders from concurrent clients are serialised. A client's
requests reach the worker as they arrive (up to ``PIPELINE_DEPTH`` at once per connection), and
its replies go back in request order.

No head-of-line blocking (issue 39 item 5): a request the command table marks ``read`` (status,
object and camera queries) is answered on the connection thread, under ``ServerState.lock``,
when none of that client's earlier requests is still running. The worker lets go of the lock
while it draws, so a read waits for another client's edit (milliseconds), never for a frame; and
it sees every edit the same client was answered before it (its earlier requests are finished),
so per-client order holds.

Robustness: a frame with a bad magic or an oversized length cannot be resynchronised, so the
server answers one ``error ...`` frame and closes that connection; a well-framed request that is
not ``<id>:<utf-8 command>`` gets an ``error ...`` reply and the connection stays open; a client
vanishing mid-request only ends its own thread. Nothing a client sends stops the server.

Bounds (issue 39): a frame must arrive whole within ``frame_timeout`` (+1 s per MiB) of its first
byte, a connection with nothing in flight is closed after ``idle_timeout``, and when every client
slot is taken a new client evicts the connection stalled mid-frame the longest (slowloris: 64
sockets that send 5 bytes and hold no longer lock everyone out). Failing that (issue 48), it evicts
the connection *idle* the longest: nothing in flight, no frame started, for the longest time (64
sockets that read the greeting and send nothing, or one cheap query every 20 s, used to lock
newcomers out until ``--idle-timeout``). A connection with a request in flight is never evicted,
and a client that keeps working is never the longest idle while a parked one exists; only when
every slot has a request in flight is a newcomer told ``error too many clients``. Request bytes held (read, not yet
answered) are bounded per client (``client_buffer``) and in total (``total_buffer``): a client
over either bound gets one ``error`` line and is disconnected; the others are unaffected.

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
from concurrent.futures import TimeoutError as FutureTimeout

from sceneforge.core.errors import ProtocolError
from sceneforge.engine.protocol import DEFAULT_MAX_FRAME, HEADER, join_reply, parse_header, send_frame, split_request
from sceneforge.engine.server.commands.dispatch import READ, access_of, dispatch
from sceneforge.engine.server.state import ServerState

log = logging.getLogger(__name__)

_ID_RE = re.compile(rb"^(\d{1,18}):")
DEFAULT_MAX_CLIENTS = 64
DEFAULT_FRAME_TIMEOUT_S = 10.0  # a started frame must be whole within this (+ FRAME_S_PER_MIB per MiB)
FRAME_S_PER_MIB = 1.0
DEFAULT_IDLE_TIMEOUT_S = 600.0  # a connection with nothing in flight is closed after this (0: never)
DEFAULT_CLIENT_BUFFER = 128 * 2**20  # request bytes held per client (read, reply not yet sent)
DEFAULT_TOTAL_BUFFER = 512 * 2**20  # the same, all clients together
EVICT_WAIT_S = 5.0  # how long a new client waits for the slot of the connection it evicted
PIPELINE_DEPTH = 8  # a connection's requests with the worker at once (RenderServer._client_loop)
STOP_POLL_S = 1.0  # how often a waiting connection thread looks whether the server is stopping


class _Conn:
    """What the server tracks of one connection: since when its current frame is stalled (None
    between frames), since when it has been idle (nothing in flight, no frame started; None while
    busy) and the request bytes it holds."""

    __slots__ = ("sock", "partial_since", "idle_since", "held")

    def __init__(self, sock: socket.socket) -> None:
        self.sock, self.partial_since, self.idle_since, self.held = sock, None, time.monotonic(), 0


class _OverBuffer(Exception):
    """A request would take a client over its buffer bound, or the server over its total."""


class RenderServer:
    """Listens on ``host:port`` and serves UnrealCV requests against one :class:`ServerState`."""

    def __init__(
        self,
        state: ServerState,
        host: str = "127.0.0.1",
        port: int = 9000,
        max_frame: int = DEFAULT_MAX_FRAME,
        max_clients: int = DEFAULT_MAX_CLIENTS,
        frame_timeout: float = DEFAULT_FRAME_TIMEOUT_S,
        idle_timeout: float = DEFAULT_IDLE_TIMEOUT_S,
        client_buffer: int = DEFAULT_CLIENT_BUFFER,
        total_buffer: int = DEFAULT_TOTAL_BUFFER,
    ) -> None:
        self.state = state
        self.host, self.port = host, port
        self.max_frame = max_frame
        self.frame_timeout, self.idle_timeout = float(frame_timeout), float(idle_timeout)
        self.client_buffer, self.total_buffer = int(client_buffer), int(total_buffer)
        self._held = 0  # request bytes held by every client together (under _clients_lock)
        self._slots = threading.BoundedSemaphore(max_clients)
        self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="sceneforge-render")
        self._listener: socket.socket | None = None
        self._clients: dict[socket.socket, _Conn] = {}
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

    def shutdown(self, timeout: float = 5.0) -> bool:
        """Stop accepting, drop clients, stop a render in progress (a Cycles frame: its Blender
        worker is killed), release the renderer in its own thread. False when the renderer is
        still busy after ``timeout`` seconds (a long GL frame): the caller exits without it."""
        if self._stopping.is_set():
            return True
        self._stopping.set()  # from now on queued requests answer "shutting down" (_run)
        if self._listener is not None:
            _close(self._listener)
        with self._clients_lock:
            for conn in list(self._clients):
                _close(conn)
        self.state.interrupt()
        clean = True
        try:
            self._worker.submit(self.state.close).result(timeout=timeout)
        except FutureTimeout:
            log.warning("the renderer is still busy %.0f s after shutdown began; exiting without it", timeout)
            clean = False
        except Exception:  # shutting down anyway; a stuck renderer must not block exit
            log.exception("renderer did not close cleanly")
        self._worker.shutdown(wait=False, cancel_futures=True)
        return clean

    # --- connections -------------------------------------------------------------------------
    def _accept_loop(self) -> None:
        while not self._stopping.is_set():
            try:
                conn, addr = self._listener.accept()
            except OSError:
                break  # listener closed by shutdown()
            threading.Thread(
                target=self._serve_client, args=(conn, addr), daemon=True, name=f"sceneforge-client-{addr[1]}"
            ).start()

    def _serve_client(self, conn: socket.socket, addr) -> None:
        if not self._slots.acquire(blocking=False):
            if not (self._evict_stalled() and self._slots.acquire(timeout=EVICT_WAIT_S)):
                _send_quietly(conn, b"error too many clients")
                _close(conn)
                return
        info = _Conn(conn)
        with self._clients_lock:
            self._clients[conn] = info
        try:
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            send_frame(conn, f"connected to sceneforge on port {self.port}".encode())
            self._client_loop(info)
        except OSError as e:
            log.debug("client %s went away: %s", addr, e)
        finally:
            with self._clients_lock:
                self._clients.pop(conn, None)
                self._held -= info.held
                info.held = 0
            _close(conn)
            self._slots.release()

    def _evict_stalled(self) -> bool:
        """Every slot is taken: close the connection whose frame has been stalled the longest (a
        well-behaved client sends a frame at once; slowloris sends 5 bytes and holds), else the
        one idle the longest (nothing in flight: a parked socket, or one that sends a cheap query
        now and then; issue 48). False when every connection has a request in flight (the
        newcomer is refused)."""
        now = time.monotonic()
        with self._clients_lock:
            stalled = [c for c in self._clients.values() if c.partial_since is not None]
            idle = [c for c in self._clients.values() if c.partial_since is None and c.idle_since is not None]
            if stalled:
                victim = min(stalled, key=lambda c: c.partial_since)
                why = f"stalled mid-frame for {now - victim.partial_since:.1f} s"
            elif idle:
                victim = min(idle, key=lambda c: c.idle_since)
                why = f"idle for {now - victim.idle_since:.1f} s (the longest)"
            else:
                return False
            victim.partial_since = victim.idle_since = None  # not chosen twice
        log.warning("client cap reached: closing a connection %s to admit a new one", why)
        try:  # its own thread sees EOF, answers nothing more, closes it and frees the slot
            victim.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        return True

    def _hold(self, info: _Conn, n: int) -> None:
        """Count ``n`` request bytes as held by ``info``; _OverBuffer when a bound would be passed."""
        with self._clients_lock:
            if info.held + n > self.client_buffer:
                raise _OverBuffer(
                    f"error this client holds {info.held + n} bytes of unanswered requests; "
                    f"at most {self.client_buffer} (read replies before sending more); closing"
                )
            if self._held + n > self.total_buffer:
                raise _OverBuffer(
                    f"error the server holds {self._held + n} bytes of unanswered requests; "
                    f"at most {self.total_buffer} from all clients; closing this connection"
                )
            info.held += n
            self._held += n

    def _release(self, info: _Conn, n: int) -> None:
        with self._clients_lock:
            info.held -= n
            self._held -= n

    def _client_loop(self, info: _Conn) -> None:
        """Read requests, run them on the worker, send the replies in request order.

        Up to ``PIPELINE_DEPTH`` of this connection's requests are with the worker at once: a
        client that queues its next request before reading a reply (the sampler does) has it
        waiting when the worker finishes the current one, instead of the worker idling through a
        hand-off (reply sent, next frame read, submitted: ~0.15 ms a request). The depth is small so
        that one client cannot crowd out the others' requests on the shared worker. A client that
        stops reading its replies blocks only its own connection thread. A connection with
        nothing in flight for ``idle_timeout`` seconds is closed."""
        conn = info.sock
        pending: deque[tuple[tuple[int, Future] | bytes, int]] = deque()  # (request, bytes held)
        wake_r, wake_w = socket.socketpair()
        wake_r.setblocking(False)
        wake_w.setblocking(False)
        events = selectors.DefaultSelector()
        last_active = time.monotonic()
        try:
            events.register(wake_r, selectors.EVENT_READ)
            events.register(conn, selectors.EVENT_READ)
            watching = True

            def ring(_fut: Future) -> None:
                try:
                    wake_w.send(b"\0")
                except OSError:  # full (a wake-up is already pending) or closed
                    pass

            while not self._stopping.is_set():
                while pending and (isinstance(pending[0][0], bytes) or pending[0][0][1].done()):
                    item, held = pending.popleft()
                    reply = self._reply(item)
                    if not pending:  # nothing in flight: evictable at the cap (set before the client can act on the reply)
                        info.idle_since = time.monotonic()
                    send_frame(conn, reply)
                    self._release(info, held)
                    last_active = time.monotonic()
                room = len(pending) < PIPELINE_DEPTH
                if room and not watching:
                    events.register(conn, selectors.EVENT_READ)
                elif watching and not room:  # full: the next request waits in the socket
                    events.unregister(conn)
                watching = room
                ready = events.select(timeout=STOP_POLL_S)  # (a socket closed under us is not reported)
                if not ready and not pending and self.idle_timeout > 0 and time.monotonic() - last_active > self.idle_timeout:
                    log.info("closing a connection idle for %.0f s (--idle-timeout)", self.idle_timeout)
                    return
                for key, _ in ready:
                    if key.fileobj is wake_r:
                        _drain(wake_r)
                        continue
                    try:
                        got = self._next_request(info, pending)
                    except _OverBuffer as e:
                        log.warning("closing a connection over its request buffer: %s", e)
                        for item, _ in pending:
                            if not isinstance(item, bytes):
                                item[1].cancel()
                        conn.settimeout(5.0)  # a client that does not read must not hold us
                        _send_quietly(conn, str(e).encode())
                        return
                    if got is None:
                        return
                    payload, held = got
                    del got
                    running = any(not isinstance(it, bytes) and not it[1].done() for it, _ in pending)
                    item = self._submit(payload, ring, read_now=not running)
                    del payload  # the worker keeps the decoded command only
                    if isinstance(item, bytes):  # answered at once: the request is not kept
                        self._release(info, held)
                        held = 0
                    pending.append((item, held))
                    last_active = time.monotonic()
                    info.idle_since = None
        except ValueError:  # the selector refused the socket: closed under us by shutdown()
            if conn.fileno() != -1:
                raise
        finally:
            for item, _ in pending:  # connection gone: nobody reads these replies
                if not isinstance(item, bytes):
                    item[1].cancel()
            events.close()
            wake_r.close()
            wake_w.close()

    def _next_request(self, info: _Conn, pending: deque) -> tuple[bytes, int] | None:
        """The next request's payload and the bytes now held for it, or None when the connection
        ends: at EOF (the replies of the requests in flight are sent first: a client that
        half-closes still gets them) or at a malformed or stalled frame (those replies, then its
        error). _OverBuffer when the request would pass a buffer bound."""
        conn = info.sock
        try:
            got = self._read_frame(info)
        except ProtocolError as e:
            log.warning("closing connection after a malformed frame: %s", e)
            self._flush(info, pending)
            _send_quietly(conn, f"error {e}".encode())
            return None
        if got is None:
            self._flush(info, pending)
        return got

    def _read_frame(self, info: _Conn) -> tuple[bytes, int] | None:
        """One frame (the socket is readable): whole within ``frame_timeout`` + 1 s per MiB of its
        first byte, else ProtocolError; its payload's bytes are held (:meth:`_hold`) before they
        are read."""
        conn = info.sock
        first = conn.recv(HEADER.size)
        if not first:
            return None
        start = time.monotonic()
        info.partial_since, info.idle_since = start, None
        deadline = start + self.frame_timeout
        header = first + (
            _recv_until(conn, HEADER.size - len(first), deadline, self.frame_timeout) if len(first) < HEADER.size else b""
        )
        n = parse_header(header, self.max_frame)
        self._hold(info, n)
        try:
            payload = _recv_until(conn, n, deadline + FRAME_S_PER_MIB * n / 2**20, self.frame_timeout)
        except BaseException:
            self._release(info, n)
            raise
        info.partial_since = None
        return payload, n

    # --- requests ----------------------------------------------------------------------------
    def _submit(self, payload: bytes, done, read_now: bool = False) -> "tuple[int, Future] | bytes":
        """Queue a request's command on the worker: (request id, future), or the reply itself when
        the request is refused without running anything or, with ``read_now`` (none of the
        client's earlier requests is still running), is a ``read`` answered here and now.
        ``done(future)`` is called when a queued command ends."""
        m = _ID_RE.match(payload)
        if not m:
            return b"error request is not of the form '<id>:<command>'"
        try:
            request_id, command = split_request(payload)
        except ProtocolError as e:
            return join_reply(int(m.group(1)), f"error {e}")
        if self._stopping.is_set():
            return join_reply(request_id, "error server is shutting down")
        if read_now and access_of(command) == READ:
            with self.state.locked():
                return join_reply(request_id, dispatch(self.state, command))
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

    def _flush(self, info: _Conn, pending: deque) -> None:
        """Send the replies of the requests in flight, in order (before closing the connection)."""
        try:
            while pending:
                item, held = pending.popleft()
                send_frame(info.sock, self._reply(item))
                self._release(info, held)
        except OSError:
            pass

    def _run(self, command: str) -> str | bytes:
        """One command on the worker thread, its wall time added to ``state.busy_s``."""
        if self._stopping.is_set():  # no render (nor a fresh Blender worker) during shutdown
            return "error server is shutting down"
        t = time.perf_counter()
        try:
            with self.state.locked():
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


def _recv_until(sock: socket.socket, n: int, deadline: float, frame_timeout: float) -> bytes:
    """Exactly ``n`` bytes by ``deadline`` (time.monotonic); ProtocolError at EOF or when late."""
    buf = bytearray()
    try:
        while len(buf) < n:
            left = deadline - time.monotonic()
            if left <= 0:
                raise socket.timeout
            sock.settimeout(min(left, STOP_POLL_S * 5))
            chunk = sock.recv(min(n - len(buf), 1 << 20))
            if not chunk:
                raise ProtocolError(f"connection closed after {len(buf)} of {n} bytes")
            buf += chunk
    except socket.timeout:
        raise ProtocolError(
            f"frame not complete within {frame_timeout:g} s (+{FRAME_S_PER_MIB:g} s per MiB) "
            f"of its first byte (--frame-timeout): {len(buf)} of {n} bytes"
        ) from None
    finally:
        try:
            sock.settimeout(None)
        except OSError:
            pass
    return bytes(buf)


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
