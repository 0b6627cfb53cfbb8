"""Raw-socket behaviour of a real ``sceneforge serve`` subprocess: malformed frames, pipelined
requests (several sent before any reply is read), clients that leave mid-request. The server
must answer what it can, close only the offending connection, and keep serving others."""

from __future__ import annotations

import socket
import struct

import pytest

from sceneforge.engine.protocol import MAGIC, frame, recv_frame
from wire_helpers import ask, greeted

pytestmark = pytest.mark.filterwarnings("error")


@pytest.fixture
def raw(server):
    """A raw socket past the greeting."""
    with greeted(server) as s:
        yield s


# --- malformed input on raw sockets ----------------------------------------------------------
def test_bad_magic_gets_error_then_disconnect(raw):
    raw.sendall(struct.pack("<II", 0x12345678, 4) + b"0:hi")
    assert recv_frame(raw).startswith(b"error bad magic")
    assert raw.recv(10) == b""  # closed by the server


def test_huge_length_gets_error_then_disconnect(raw):
    raw.sendall(struct.pack("<II", MAGIC, 0xFFFFFFF0))
    assert b"exceeds" in recv_frame(raw)
    assert raw.recv(10) == b""


def test_request_without_id_or_non_utf8_keeps_connection(raw):
    assert ask(raw, b"vget /objects").startswith(b"error request is not of the form")
    assert ask(raw, b"9:vget /\xff\xfe").startswith(b"9:error request 9 is not valid UTF-8")
    assert ask(raw, b"10:").startswith(b"10:error No handler found")
    assert ask(raw, b"11:vget /unrealcv/status").startswith(b"11:Is Listening")


def test_client_vanishing_mid_frame_or_mid_request(server):
    s = socket.create_connection(("127.0.0.1", server.port))
    recv_frame(s)
    s.sendall(struct.pack("<II", MAGIC, 1000) + b"1:vget")  # truncated payload, then gone
    s.close()
    s = socket.create_connection(("127.0.0.1", server.port))
    recv_frame(s)
    s.sendall(frame(b"1:vget /sceneforge/assets"))  # gone before the reply
    s.close()
    with socket.create_connection(("127.0.0.1", server.port), timeout=30) as s2:
        recv_frame(s2)
        assert ask(s2, b"2:vget /unrealcv/status").startswith(b"2:Is Listening")
    assert server.alive()


def test_pipelined_requests_are_answered_in_order(raw):
    """Requests sent without waiting (sceneforge's client queues several, engine/wire.py) are
    each answered once, in order, with their ids: a malformed one in the middle gets its error in
    its place and the connection stays open."""
    n = 48
    batch = [frame(b"%d:vget /unrealcv/status" % i) for i in range(n)]
    batch.insert(n // 2, frame(b"no id here"))
    raw.sendall(b"".join(batch))
    replies = [recv_frame(raw) for _ in range(n + 1)]
    assert replies[n // 2].startswith(b"error request is not of the form")
    del replies[n // 2]
    assert [r.split(b":", 1)[0] for r in replies] == [b"%d" % i for i in range(n)]
    assert all(r.split(b":", 1)[1].startswith(b"Is Listening") for r in replies)
    assert ask(raw, b"99:vget /unrealcv/status").startswith(b"99:Is Listening")


def test_pipelined_replies_come_before_a_bad_frame_error_and_after_a_half_close(server):
    """A bad frame behind queued requests: their replies first, then the error, then the close.
    A client that half-closes after sending still gets every reply."""
    with socket.create_connection(("127.0.0.1", server.port), timeout=30) as s:
        recv_frame(s)
        s.sendall(
            frame(b"1:vget /sceneforge/assets") + frame(b"2:vget /unrealcv/status") + struct.pack("<II", 0x12345678, 4) + b"0:hi"
        )
        assert recv_frame(s).startswith(b"1:")
        assert recv_frame(s).startswith(b"2:Is Listening")
        assert recv_frame(s).startswith(b"error bad magic")
        assert s.recv(10) == b""
    with socket.create_connection(("127.0.0.1", server.port), timeout=30) as s:
        recv_frame(s)
        s.sendall(b"".join(frame(b"%d:vget /unrealcv/status" % i) for i in range(5)))
        s.shutdown(socket.SHUT_WR)
        assert [recv_frame(s)[:2] for _ in range(5)] == [b"%d:" % i for i in range(5)]
        assert s.recv(10) == b""


def test_client_vanishing_with_requests_in_flight(server):
    """A client that queues renders and leaves: the server drops their replies and serves the next."""
    s = socket.create_connection(("127.0.0.1", server.port))
    recv_frame(s)
    s.sendall(b"".join(frame(b"%d:vget /camera/0/lit png" % i) for i in range(40)))
    s.close()
    with socket.create_connection(("127.0.0.1", server.port), timeout=60) as s2:
        recv_frame(s2)
        assert ask(s2, b"2:vget /unrealcv/status").startswith(b"2:Is Listening")
    assert server.alive()


def test_a_connection_hands_its_next_requests_to_the_worker_while_one_runs():
    """In-process server whose worker is held busy: requests sent back to back all reach the
    worker without waiting for the previous reply (no hand-off idle between them), at most
    ``PIPELINE_DEPTH`` at once (the rest wait in the socket), and the replies come in order. A
    second client is still answered behind them. (A worker command: a ``read`` such as
    ``vget /objects`` would be answered on the connection thread, test_server_bounds.py.)"""
    import threading
    import time

    from sceneforge.engine.server import app as A
    from sceneforge.engine.server.catalog import AssetCatalog
    from sceneforge.engine.server.state import ServerState

    submitted: list[bytes] = []

    class Counting(A.RenderServer):
        def _submit(self, payload, done=None, read_now=False):
            submitted.append(payload)
            return super()._submit(payload, done, read_now)

    srv = Counting(ServerState(AssetCatalog(None)), port=0)
    _, port = srv.start()
    gate = threading.Event()
    try:
        srv._worker.submit(gate.wait, 30)  # the worker is busy until the gate opens
        n = A.PIPELINE_DEPTH + 3
        with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
            recv_frame(s)
            s.sendall(b"".join(frame(b"%d:vset /action/game/pause" % i) for i in range(n)))
            deadline = time.monotonic() + 10
            while len(submitted) < A.PIPELINE_DEPTH:
                assert time.monotonic() < deadline, submitted
                time.sleep(0.01)
            time.sleep(0.2)
            assert len(submitted) == A.PIPELINE_DEPTH  # the rest wait in the socket
            with socket.create_connection(("127.0.0.1", port), timeout=30) as other:
                recv_frame(other)
                other.sendall(frame(b"7:vget /unrealcv/status"))
                gate.set()
                assert recv_frame(other).startswith(b"7:Is Listening")
            assert [recv_frame(s) for _ in range(n)] == [b"%d:ok" % i for i in range(n)]
            assert len(submitted) == n + 1
    finally:
        gate.set()
        srv.shutdown()
