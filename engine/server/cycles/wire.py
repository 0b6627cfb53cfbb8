"""Message framing between the server and its Blender worker (stdlib + numpy only).

This file is imported by both ends: by ``engine.server.cycles.client`` in our process and, as a
plain module next to the script, by ``worker.py`` inside the isolated Blender environment (which
has numpy 1.x and never sees our packages). So it must not import anything of ours.

A message is ``u64 length`` + a JSON header + the raw bytes of the arrays the header lists::

    {"op": "...", ..., "arrays": [{"key": "vertices", "dtype": "<f4", "shape": [N, 3]}, ...]}

Arrays go as raw little-endian bytes (no pickle: the two ends run different numpy majors).
"""

from __future__ import annotations

import json
import os
import struct

import numpy as np

_LEN = struct.Struct("<Q")
MAX_HEADER = 64 << 20


def encode(header: dict, arrays: dict | None = None) -> bytes:
    """One message: the JSON ``header`` plus ``arrays`` (name → ndarray), returned as bytes."""
    arrays = arrays or {}
    index, blobs = [], []
    for key, a in arrays.items():
        a = np.ascontiguousarray(a)
        a = a.astype(a.dtype.newbyteorder("<")) if a.dtype.byteorder == ">" else a
        index.append({"key": key, "dtype": a.dtype.str, "shape": list(a.shape)})
        blobs.append(a.tobytes())
    head = json.dumps(dict(header, arrays=index), separators=(",", ":")).encode()
    body = _LEN.pack(len(head)) + head + b"".join(blobs)
    return _LEN.pack(len(body)) + body


def decode(body: bytes) -> tuple[dict, dict]:
    """Inverse of :func:`encode` (without the leading total length)."""
    (hlen,) = _LEN.unpack_from(body, 0)
    if hlen > MAX_HEADER:
        raise ValueError(f"message header of {hlen} bytes is too large")
    header = json.loads(body[8 : 8 + hlen])
    off, arrays = 8 + hlen, {}
    for item in header.pop("arrays", []):
        dt = np.dtype(item["dtype"])
        n = int(np.prod(item["shape"], dtype=np.int64)) * dt.itemsize
        arrays[item["key"]] = np.frombuffer(body, dtype=dt, count=n // dt.itemsize if dt.itemsize else 0, offset=off).reshape(
            item["shape"]
        )
        off += n
    return header, arrays


def write_message(fd: int, header: dict, arrays: dict | None = None) -> None:
    data = memoryview(encode(header, arrays))
    while data:
        n = os.write(fd, data)
        data = data[n:]


def read_exact(fd: int, n: int) -> bytes:
    """``n`` bytes from ``fd``; EOFError if the other end closed first."""
    chunks, got = [], 0
    while got < n:
        chunk = os.read(fd, min(n - got, 1 << 20))
        if not chunk:
            raise EOFError("pipe closed")
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


def read_message(fd: int) -> tuple[dict, dict]:
    (n,) = _LEN.unpack(read_exact(fd, 8))
    return decode(read_exact(fd, n))
