"""COCO run-length encoding of binary masks, written here rather than depending on pycocotools
(a C extension that does not install on this machine's Python without a compiler toolchain, for
the four functions we need). Output is byte-identical to pycocotools' ``mask.encode``: counts in
column-major (Fortran) order starting with a background run, compressed with COCO's
LEB128-like 6-bit ASCII scheme (``maskApi.c: rleToString``)."""

from __future__ import annotations

import numpy as np


def _runs(mask: np.ndarray) -> list[int]:
    flat = np.asarray(mask, dtype=bool).flatten(order="F")
    if flat.size == 0:
        return [0]
    change = np.flatnonzero(flat[1:] != flat[:-1]) + 1
    bounds = np.concatenate([[0], change, [flat.size]])
    counts = np.diff(bounds).tolist()
    return ([0] + counts) if flat[0] else counts


def counts_to_string(counts: list[int]) -> str:
    out = []
    for i, c in enumerate(counts):
        x = int(c) - (int(counts[i - 2]) if i > 2 else 0)
        more = True
        while more:
            ch = x & 0x1F
            x >>= 5
            more = (x != -1) if (ch & 0x10) else (x != 0)
            if more:
                ch |= 0x20
            out.append(chr(ch + 48))
    return "".join(out)


def string_to_counts(s: str) -> list[int]:
    counts: list[int] = []
    p = 0
    while p < len(s):
        x, k, more = 0, 0, True
        while more:
            c = ord(s[p]) - 48
            x |= (c & 0x1F) << (5 * k)
            more = bool(c & 0x20)
            p += 1
            k += 1
            if not more and (c & 0x10):
                x |= -1 << (5 * k)
        if len(counts) > 2:
            x += counts[-2]
        counts.append(x)
    return counts


def encode(mask: np.ndarray) -> dict:
    """``{"size": [h, w], "counts": str}`` for a 2-D boolean mask."""
    h, w = np.asarray(mask).shape[:2]
    return {"size": [int(h), int(w)], "counts": counts_to_string(_runs(mask))}


def decode(rle: dict) -> np.ndarray:
    h, w = rle["size"]
    counts = rle["counts"] if isinstance(rle["counts"], list) else string_to_counts(rle["counts"])
    flat = np.zeros(h * w, dtype=bool)
    pos, val = 0, False
    for c in counts:
        if val:
            flat[pos : pos + c] = True
        pos += c
        val = not val
    return flat.reshape((w, h)).T


def area(rle: dict) -> int:
    counts = rle["counts"] if isinstance(rle["counts"], list) else string_to_counts(rle["counts"])
    return int(sum(counts[1::2]))


def bbox(mask: np.ndarray) -> list[float] | None:
    """COCO box ``[x, y, width, height]`` (pixels) of a boolean mask, None if empty."""
    ys, xs = np.nonzero(mask)
    if not len(xs):
        return None
    return [float(xs.min()), float(ys.min()), float(xs.max() + 1 - xs.min()), float(ys.max() + 1 - ys.min())]
