"""Raw UnrealCV-framed sockets for the server tests (engine/protocol.py framing)."""

from __future__ import annotations

import socket

from sceneforge.engine.protocol import frame, recv_frame


def ask(sock: socket.socket, payload: bytes) -> bytes:
    """Send one framed request and read one framed reply."""
    sock.sendall(frame(payload))
    return recv_frame(sock)


def greeted(server, timeout: float = 30.0) -> socket.socket:
    """A connection to ``server`` past its ``connected to sceneforge`` greeting (usable in ``with``)."""
    s = socket.create_connection(("127.0.0.1", server.port), timeout=timeout)
    greeting = recv_frame(s)
    assert greeting.startswith(b"connected to sceneforge"), greeting
    return s
