"""UnrealCV wire framing, shared by our server and our client wrapper.

A frame is ``magic (uint32 LE, 0x9E2B83C1) | length (uint32 LE) | payload``. Requests are
``b"{id}:{command}"``; replies ``b"{id}:{payload}"`` where the payload may be binary (PNG/NPY).
On connect the server sends one unsolicited frame starting with ``b"connected"``.

These are pure functions on bytes/sockets so they can be tested without a server. Every failure
raises :class:`~core.errors.ProtocolError` (never returns ``None``).
"""

from __future__ import annotations

import re
import socket
import struct

from sceneforge.core.errors import ProtocolError

MAGIC = 0x9E2B83C1
HEADER = struct.Struct("<II")
DEFAULT_MAX_FRAME = 64 * 1024 * 1024  # 64 MiB: a 4K float32 depth map fits, a hostile length does not

_REQUEST_RE = re.compile(rb"^(\d{1,18}):(.*)$", re.DOTALL)


def frame(payload: bytes) -> bytes:
    """Wrap ``payload`` in an UnrealCV frame."""
    if not isinstance(payload, (bytes, bytearray, memoryview)):
        raise ProtocolError(f"frame payload must be bytes, got {type(payload).__name__}")
    return HEADER.pack(MAGIC, len(payload)) + bytes(payload)


def parse_header(header: bytes, max_frame: int = DEFAULT_MAX_FRAME) -> int:
    """Validate an 8-byte header and return the payload length."""
    if len(header) != HEADER.size:
        raise ProtocolError(f"truncated header: {len(header)} of {HEADER.size} bytes")
    magic, length = HEADER.unpack(header)
    if magic != MAGIC:
        raise ProtocolError(f"bad magic 0x{magic:08X} (expected 0x{MAGIC:08X})")
    if length > max_frame:
        raise ProtocolError(f"frame of {length} bytes exceeds the {max_frame}-byte limit")
    return length


def unframe(data: bytes, max_frame: int = DEFAULT_MAX_FRAME) -> tuple[bytes, bytes]:
    """Split one complete frame off ``data``; returns ``(payload, rest)``."""
    length = parse_header(bytes(data[: HEADER.size]), max_frame)
    end = HEADER.size + length
    if len(data) < end:
        raise ProtocolError(f"truncated payload: {len(data) - HEADER.size} of {length} bytes")
    return bytes(data[HEADER.size : end]), bytes(data[end:])


def recv_exact(sock: socket.socket, n: int) -> bytes:
    """Read exactly ``n`` bytes (looping over partial reads); EOF → ProtocolError."""
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(min(n - len(buf), 1 << 20))
        if not chunk:
            raise ProtocolError(f"connection closed after {len(buf)} of {n} bytes")
        buf += chunk
    return bytes(buf)


def recv_frame(sock: socket.socket, max_frame: int = DEFAULT_MAX_FRAME) -> bytes:
    """Read one frame from a socket and return its payload."""
    length = parse_header(recv_exact(sock, HEADER.size), max_frame)
    return recv_exact(sock, length)


def send_frame(sock: socket.socket, payload: bytes) -> None:
    sock.sendall(frame(payload))


def split_request(payload: bytes) -> tuple[int, str]:
    """``b"12:vget /objects"`` → ``(12, "vget /objects")``. Commands must be UTF-8 text."""
    m = _REQUEST_RE.match(payload)
    if not m:
        raise ProtocolError("request is not of the form '<id>:<command>'")
    try:
        command = m.group(2).decode("utf-8")
    except UnicodeDecodeError as e:
        raise ProtocolError(f"request {m.group(1).decode()} is not valid UTF-8") from e
    return int(m.group(1)), command


def join_reply(request_id: int, body: bytes | str) -> bytes:
    """Reply payload echoing the request id."""
    if isinstance(body, str):
        body = body.encode("utf-8")
    return b"%d:%s" % (request_id, body)


def compact_json(value) -> str:
    """JSON without whitespace, so the whole blob is one ``[json]`` token on the wire."""
    import json

    return json.dumps(value, separators=(",", ":")).replace(" ", "\\u0020")


# --- array bundles (reply of ``vget /sceneforge/render``) -------------------------------------
# ``SFARR1\n`` + one line of JSON (name, dtype, shape, offset, nbytes per array) + raw C-order
# bytes. Chosen over NPZ because a zip archive costs ~1 ms to write and ~1 ms to read per 224²
# frame (CRC + member headers), a quarter of the socket overhead; here decoding is one
# ``np.frombuffer`` per array.
ARRAYS_MAGIC = b"SFARR1\n"


def pack_arrays(arrays: dict, meta: dict | None = None) -> bytes:
    """Serialise named numpy arrays (numeric dtypes only) into one bundle; ``meta``: a JSON
    object carried in the header (``/sceneforge/render_if_visible`` sends its pixel counts there)."""
    import json

    import numpy as np

    index, blobs, offset = [], [], 0
    for name, arr in arrays.items():
        a = np.ascontiguousarray(arr)
        if a.dtype.hasobject:
            raise ProtocolError(f"array {name!r}: object dtype cannot be sent")
        index.append({"name": name, "dtype": a.dtype.str, "shape": list(a.shape), "offset": offset, "nbytes": a.nbytes})
        blobs.append(a.tobytes())
        offset += a.nbytes
    head = {"arrays": index} if meta is None else {"arrays": index, "meta": meta}
    header = json.dumps(head, separators=(",", ":")).encode("utf-8")
    return ARRAYS_MAGIC + header + b"\n" + b"".join(blobs)


def unpack_arrays(data: bytes) -> dict:
    """Inverse of :func:`pack_arrays` (the arrays); every malformation raises :class:`ProtocolError`."""
    return unpack_bundle(data)[0]


def unpack_bundle(data: bytes) -> tuple[dict, dict]:
    """Inverse of :func:`pack_arrays`: (arrays, meta; ``{}`` when the header carries none)."""
    import json

    import numpy as np

    if not data.startswith(ARRAYS_MAGIC):
        raise ProtocolError("array bundle: bad magic (expected SFARR1)")
    end = data.find(b"\n", len(ARRAYS_MAGIC))
    if end < 0:
        raise ProtocolError("array bundle: truncated header")
    try:
        head = json.loads(data[len(ARRAYS_MAGIC) : end])
        index, meta = head["arrays"], head.get("meta", {})
    except (ValueError, KeyError, TypeError, AttributeError, RecursionError) as e:
        raise ProtocolError(f"array bundle: bad header ({e})") from e
    if not isinstance(index, list) or not isinstance(meta, dict):
        raise ProtocolError("array bundle: bad header (arrays must be a list, meta an object)")
    payload = memoryview(data)[end + 1 :]
    out = {}
    for entry in index:
        try:
            dtype, shape = np.dtype(entry["dtype"]), tuple(int(s) for s in entry["shape"])
            start, nbytes = int(entry["offset"]), int(entry["nbytes"])
        except (KeyError, TypeError, ValueError) as e:
            raise ProtocolError(f"array bundle: bad entry {entry!r}") from e
        count = int(np.prod(shape)) if shape else 1
        if dtype.hasobject or start < 0 or count * dtype.itemsize != nbytes or start + nbytes > len(payload):
            raise ProtocolError(f"array bundle: entry {entry.get('name')!r} does not fit the payload")
        out[entry["name"]] = np.frombuffer(payload, dtype, count, start).reshape(shape).copy()
    return out, meta
