"""A reader for the uncompressed, scanline OpenEXR files our Blender worker writes (numpy only).

Blender writes the data passes (depth, object index) as a multilayer EXR with codec ``NONE`` and
32-bit floats; the ``bpy`` wheel ships no Python EXR reader, and this format is simple enough to
read directly: a header of attributes, a table of line offsets, then per scanline the channels
in alphabetical order, each a row of HALF/FLOAT/UINT values. Anything else is refused loudly.
"""

from __future__ import annotations

import struct

import numpy as np

_MAGIC = 20000630
_PIXEL_DTYPES = {0: np.dtype("<u4"), 1: np.dtype("<f2"), 2: np.dtype("<f4")}


def _cstr(buf: bytes, off: int) -> tuple[str, int]:
    end = buf.index(b"\0", off)
    return buf[off:end].decode("latin-1"), end + 1


def _channels(value: bytes) -> list[tuple[str, np.dtype]]:
    out, off = [], 0
    while value[off : off + 1] != b"\0":
        name, off = _cstr(value, off)
        (ptype,) = struct.unpack_from("<i", value, off)
        xs, ys = struct.unpack_from("<ii", value, off + 8)
        if (xs, ys) != (1, 1):
            raise ValueError(f"EXR channel {name}: subsampled channels are not supported")
        out.append((name, _PIXEL_DTYPES[ptype]))
        off += 16
    return out


def _header(data: bytes, off: int) -> tuple[dict, int]:
    attrs = {}
    while data[off : off + 1] != b"\0":
        name, off = _cstr(data, off)
        atype, off = _cstr(data, off)
        (size,) = struct.unpack_from("<i", data, off)
        attrs[name] = (atype, data[off + 4 : off + 4 + size])
        off += 4 + size
    return attrs, off + 1


def read_exr(data: bytes) -> dict[str, np.ndarray]:
    """Channel name → (H, W) array (row 0 = top), for uncompressed scanline EXR bytes
    (single-part, or multi-part as Blender 5 writes multilayer files)."""
    magic, version = struct.unpack_from("<ii", data, 0)
    if magic != _MAGIC:
        raise ValueError("not an OpenEXR file")
    if version & 0x200 or version & 0x800:
        raise ValueError("tiled or deep EXR files are not supported")
    multipart = bool(version & 0x1000)
    off, headers = 8, []
    while True:
        attrs, off = _header(data, off)
        headers.append(attrs)
        if not multipart or data[off : off + 1] == b"\0":
            break
    off += 1 if multipart else 0
    tables = []
    for attrs in headers:
        if attrs["compression"][1][0] != 0:
            raise ValueError(f"EXR compression {attrs['compression'][1][0]} is not supported (write codec NONE)")
        x0, y0, x1, y1 = struct.unpack("<iiii", attrs["dataWindow"][1])
        tables.append(np.frombuffer(data, dtype="<u8", count=y1 - y0 + 1, offset=off))
        off += 8 * (y1 - y0 + 1)
    out: dict[str, np.ndarray] = {}
    for part, (attrs, offsets) in enumerate(zip(headers, tables)):
        x0, y0, x1, y1 = struct.unpack("<iiii", attrs["dataWindow"][1])
        width, height = x1 - x0 + 1, y1 - y0 + 1
        channels = sorted(_channels(attrs["channels"][1]), key=lambda c: c[0])
        row_bytes = sum(dt.itemsize for _, dt in channels) * width
        line = np.dtype([(name, dt, (width,)) for name, dt in channels])
        rows = np.empty(height, dtype=line)
        skip = 4 if multipart else 0  # each multi-part chunk starts with its part number
        for o in offsets:  # each chunk: [i32 part], i32 y, i32 size, then the row
            y, size = struct.unpack_from("<ii", data, int(o) + skip)
            if size != row_bytes:
                raise ValueError(f"EXR part {part} scanline {y}: {size} bytes, expected {row_bytes}")
            rows[y - y0] = np.frombuffer(data, dtype=line, count=1, offset=int(o) + skip + 8)[0]
        for name, _ in channels:
            out[name] = np.ascontiguousarray(rows[name])
    return out
