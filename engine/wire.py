"""UnrealCV wire framing on one blocking socket: what :class:`engine.client.RenderClient` speaks.

The framing is engine/protocol.py's (``magic | length | b"{id}:{payload}"``, the official
``unrealcv.Client``'s), so UE5 + UnrealCV servers work unchanged; why we do not use the official
client is in engine/client/render_client.py's docstring.
"""

from __future__ import annotations

import socket
from collections import deque

from sceneforge.core.errors import ProtocolError
from sceneforge.engine.protocol import HEADER, MAGIC


class Wire:
    """UnrealCV framing (``magic | length | b"{id}:{payload}"``) on one blocking socket, without a
    receive thread: :meth:`send` writes a request and returns its id, :meth:`receive` reads the
    reply of one request. A server answers a connection's requests in order, so several may be
    in flight (pipelining); a caller may read them in any order (replies of earlier requests read
    on the way are kept for their own :meth:`receive`). Any socket failure, timeout, or reply whose
    id is not the next one expected closes the wire (its replies could no longer be matched) and
    raises ``OSError`` / :class:`ProtocolError`."""

    def __init__(self, sock: socket.socket, timeout: float):
        self.sock = sock
        self.sock.settimeout(timeout)
        self._next_id = 0
        self._waiting: deque[int] = deque()  # requests sent whose reply is still on the socket
        self._kept: dict[int, bytes] = {}  # replies read on the way to a later one
        self._unwanted: set[int] = set()  # requests whose reply nobody will read: dropped on arrival

    @classmethod
    def open(cls, host: str, port: int, timeout: float, connect_timeout: float) -> "Wire | None":
        """Connect and read the server's greeting (``connected ...``); None when refused or the
        greeting is anything else (a full server answers ``error too many clients``)."""
        try:
            sock = socket.create_connection((host, port), timeout=connect_timeout)
        except OSError:
            return None
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        wire = cls(sock, connect_timeout)
        try:
            greeting = wire._frame()
        except (OSError, ProtocolError):
            wire.close()
            return None
        if not greeting.startswith(b"connected"):
            wire.close()
            return None
        sock.settimeout(timeout)
        return wire

    def send(self, command: str) -> int:
        rid = self._next_id
        self._next_id += 1
        body = b"%d:%s" % (rid, command.encode("utf-8"))
        try:
            self.sock.sendall(HEADER.pack(MAGIC, len(body)) + body)
        except OSError:
            self.close()
            raise
        self._waiting.append(rid)
        return rid

    def receive(self, rid: int) -> bytes:
        """The reply body of request ``rid``: kept from an earlier read, or read from the socket
        (with the replies of the requests sent before it, kept for their own reads)."""
        if rid in self._kept:
            return self._kept.pop(rid)
        if rid not in self._waiting:
            raise ProtocolError(f"reply of request {rid} read twice or never requested (waiting: {list(self._waiting)[:4]})")
        while True:
            expected = self._waiting[0]
            try:
                payload = self._frame()
            except (OSError, ProtocolError):
                self.close()
                raise
            self._waiting.popleft()
            head, sep, _ = bytes(payload[:24]).partition(b":")
            if not sep or not head.isdigit() or int(head) != expected:
                self.close()
                raise ProtocolError(f"reply {bytes(payload[:24])!r} does not answer request {expected}")
            body = bytes(memoryview(payload)[len(head) + 1 :])
            if expected == rid:
                return body
            if expected in self._unwanted:
                self._unwanted.discard(expected)
            else:
                self._kept[expected] = body

    def discard(self, rid: int) -> None:
        """Nobody will read request ``rid``'s reply: drop it (now, or when it arrives)."""
        if self._kept.pop(rid, None) is None and rid in self._waiting:
            self._unwanted.add(rid)

    def _frame(self) -> bytearray:
        header = self._exact(HEADER.size)
        magic, length = HEADER.unpack(header)
        if magic != MAGIC:
            raise ProtocolError(f"bad magic 0x{magic:08X} (expected 0x{MAGIC:08X})")
        return self._exact(length)

    def _exact(self, n: int) -> bytearray:
        buf = bytearray(n)
        view, got = memoryview(buf), 0
        while got < n:
            k = self.sock.recv_into(view[got:], n - got)
            if not k:
                raise ConnectionError(f"connection closed after {got} of {n} bytes")
            got += k
        return buf

    @property
    def closed(self) -> bool:
        return self.sock is None

    def close(self) -> None:
        if self.sock is not None:
            try:
                self.sock.close()
            finally:
                self.sock = None
