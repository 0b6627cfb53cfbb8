"""UnrealCV framing on raw bytes and socket pairs (no server)."""

from __future__ import annotations

import socket
import struct
import threading

import pytest

from sceneforge.core.errors import ProtocolError
from sceneforge.engine.protocol import (
    MAGIC,
    frame,
    join_reply,
    parse_header,
    recv_exact,
    recv_frame,
    send_frame,
    split_request,
    unframe,
)


def test_frame_layout_matches_unrealcv_client():
    """Same bytes as the official client's SocketMessage: magic, uint32 LE length, payload."""
    import unrealcv

    a, b = socket.socketpair()
    try:
        assert unrealcv.SocketMessage.WrapAndSendPayload(a, b"0:vget /objects")
        wire = b.recv(100)
    finally:
        a.close(), b.close()
    assert wire == frame(b"0:vget /objects")
    assert wire[:8] == struct.pack("<II", 0x9E2B83C1, 15)


@pytest.mark.parametrize("payload", [b"", b"0:vget /unrealcv/status", bytes(range(256)) * 40])
def test_frame_unframe_roundtrip(payload):
    data = frame(payload) + b"tail"
    body, rest = unframe(data)
    assert body == payload and rest == b"tail"


def test_two_frames_back_to_back():
    body1, rest = unframe(frame(b"1:a") + frame(b"2:b"))
    body2, rest = unframe(rest)
    assert (body1, body2, rest) == (b"1:a", b"2:b", b"")


def test_bad_magic():
    with pytest.raises(ProtocolError, match="bad magic 0xDEADBEEF"):
        unframe(struct.pack("<II", 0xDEADBEEF, 3) + b"abc")


def test_huge_length_rejected_before_reading_payload():
    with pytest.raises(ProtocolError, match="exceeds"):
        parse_header(struct.pack("<II", MAGIC, 0xFFFFFFFF))
    with pytest.raises(ProtocolError, match="exceeds the 10-byte limit"):
        parse_header(struct.pack("<II", MAGIC, 11), max_frame=10)
    assert parse_header(struct.pack("<II", MAGIC, 10), max_frame=10) == 10


def test_truncated_header_and_payload():
    with pytest.raises(ProtocolError, match="truncated header"):
        unframe(frame(b"abc")[:5])
    with pytest.raises(ProtocolError, match="truncated payload: 2 of 3"):
        unframe(frame(b"abc")[:-1])


def test_frame_rejects_non_bytes():
    with pytest.raises(ProtocolError):
        frame("text")  # type: ignore[arg-type]


def _dribble(sock: socket.socket, data: bytes) -> None:
    for i in range(len(data)):
        sock.send(data[i : i + 1])


def test_partial_reads_are_reassembled():
    """A frame arriving one byte per send() is still read whole."""
    a, b = socket.socketpair()
    payload = b"7:" + bytes(range(256)) * 4
    t = threading.Thread(target=_dribble, args=(a, frame(payload)))
    t.start()
    try:
        assert recv_frame(b) == payload
    finally:
        t.join(), a.close(), b.close()


def test_eof_mid_frame_raises():
    a, b = socket.socketpair()
    a.sendall(frame(b"0:hello")[:-3])
    a.close()
    try:
        with pytest.raises(ProtocolError, match="connection closed after"):
            recv_frame(b)
    finally:
        b.close()


def test_recv_exact_zero_and_send_frame():
    a, b = socket.socketpair()
    try:
        assert recv_exact(b, 0) == b""
        send_frame(a, b"x")
        assert recv_frame(b) == b"x"
    finally:
        a.close(), b.close()


def test_split_request_and_join_reply():
    assert split_request(b"12:vget /objects") == (12, "vget /objects")
    assert split_request(b"0:a:b\nc") == (0, "a:b\nc")
    assert join_reply(12, "ok") == b"12:ok"
    assert join_reply(3, b"\x89PNG") == b"3:\x89PNG"


@pytest.mark.parametrize("payload", [b"vget /objects", b":vget", b"-1:x", b"1x:y", b""])
def test_split_request_rejects_missing_id(payload):
    with pytest.raises(ProtocolError, match="<id>:<command>"):
        split_request(payload)


def test_split_request_rejects_non_utf8():
    with pytest.raises(ProtocolError, match="request 5 is not valid UTF-8"):
        split_request(b"5:vget /\xff\xfe")


# --- array bundles (vget /sceneforge/render) ------------------------------------------------------
def test_array_bundle_roundtrip_keeps_dtype_shape_and_values():
    import numpy as np

    from sceneforge.engine.protocol import pack_arrays, unpack_arrays

    rng = np.random.default_rng(0)
    arrays = {
        "lit": rng.integers(0, 255, (5, 7, 3), dtype=np.uint8),
        "depth": rng.random((5, 7), dtype=np.float32) * 1e4,
        "instance_id": rng.integers(0, 9, (5, 7)).astype(np.int32),
        "empty": np.zeros((0, 3), np.float64),
    }
    out = unpack_arrays(pack_arrays(arrays))
    assert list(out) == list(arrays)
    for k, a in arrays.items():
        assert out[k].dtype == a.dtype and out[k].shape == a.shape and np.array_equal(out[k], a)
        assert out[k].flags.writeable


def test_array_bundle_carries_meta():
    import numpy as np

    from sceneforge.engine.protocol import pack_arrays, unpack_arrays, unpack_bundle

    meta = {"visibility": {"a": {"visible": 3, "unoccluded": 4, "bbox": [0, 0, 1, 1]}}, "failure": None}
    arrays, got = unpack_bundle(pack_arrays({"depth": np.ones((2, 3), np.float32)}, meta=meta))
    assert got == meta and arrays["depth"].shape == (2, 3)
    assert unpack_bundle(pack_arrays({}, meta={"failure": "occluded"})) == ({}, {"failure": "occluded"})
    assert unpack_bundle(pack_arrays({}))[1] == {}  # older bundles: no meta
    assert list(unpack_arrays(pack_arrays({"x": np.zeros(2)}, meta={"k": 1}))) == ["x"]


@pytest.mark.parametrize(
    "mutate",
    [
        lambda b: b"PK\x03\x04" + b[6:],  # not our magic
        lambda b: b[:10],  # header cut off
        lambda b: b[: len(b) - 1],  # payload one byte short
        lambda b: b.replace(b'"offset":0', b'"offset":-4', 1),  # offset outside
        lambda b: b.replace(b'"nbytes":24', b'"nbytes":25', 1),  # nbytes lies about shape
        lambda b: b.replace(b'"dtype":"<f4"', b'"dtype":"|O"', 1),  # object dtype
        lambda b: b.replace(b'{"arrays"', b'{"arrayz"', 1),  # bad header JSON
        lambda b: b.replace(b'{"arrays":[', b'{"meta":7,"arrays":[', 1),  # meta not an object
        lambda b: b.replace(b'{"arrays":[', b'{"arrays":7,"x":[', 1),  # arrays not a list
    ],
)
def test_malformed_array_bundles_raise_protocol_error(mutate):
    import numpy as np

    from sceneforge.engine.protocol import pack_arrays, unpack_arrays

    good = pack_arrays({"depth": np.ones((2, 3), np.float32)})
    with pytest.raises(ProtocolError):
        unpack_arrays(mutate(good))
