"""Image commands: ``vget /camera/[id]/<kind> [format|filename]``.

Formats as UnrealCV: ``png`` (RGBA, what the official decoder expects), ``bmp`` (BGR, the
official ``get_image`` default) and ``npy`` (``np.save`` bytes: uint8 images, float32 depth in cm).
``lit``/``object_mask``/``normal`` accept all three; ``depth``/``plane_depth`` only ``npy``.
A file name ending in one of those extensions writes the file into the server's output
directory (never outside it) and replies with its absolute path; no argument writes an
auto-numbered PNG/NPY there, as UE's plugin does.
"""
from __future__ import annotations

import io
import os
from pathlib import Path

import numpy as np

from core.atomic import atomic_write_bytes
from core.errors import CommandError
from engine.server.commands.table import command, parse_int
from engine.server.state import ServerState

IMAGE_KINDS = ("lit", "object_mask", "normal")
DEPTH_KINDS = ("depth", "plane_depth")
FORMATS = ("png", "bmp", "npy")


def to_uint8(kind: str, array: np.ndarray) -> np.ndarray:
    """RGB uint8 view of a rendered array (normals map [-1, 1] → [0, 255])."""
    if kind == "normal":
        return np.clip(np.rint((array + 1.0) * 127.5), 0, 255).astype(np.uint8)
    return np.ascontiguousarray(array, dtype=np.uint8)


def encode(kind: str, array: np.ndarray, fmt: str) -> bytes:
    """Encode one rendered array in an UnrealCV format."""
    if fmt == "npy":
        buf = io.BytesIO()
        np.save(buf, array, allow_pickle=False)
        return buf.getvalue()
    import cv2  # lazy: keeps `sceneforge serve` start-up fast

    rgb = to_uint8(kind, array)
    if fmt == "png":
        alpha = np.full(rgb.shape[:2] + (1,), 255, np.uint8)
        ok, data = cv2.imencode(".png", np.concatenate([rgb[..., ::-1], alpha], axis=2))
    else:
        ok, data = cv2.imencode(".bmp", np.ascontiguousarray(rgb[..., ::-1]))
    if not ok:
        raise CommandError(f"could not encode {kind} as {fmt}")
    return data.tobytes()


def write_atomic(path: Path, data: bytes) -> None:
    """Write to a temp name then rename, so a reader never sees half a file."""
    atomic_write_bytes(path, data)


def _target(state: ServerState, kind: str, args: list[str]) -> tuple[str, str | None]:
    """(format, filename or None) for the optional argument."""
    allowed = ("npy",) if kind in DEPTH_KINDS else FORMATS
    if not args:
        fmt = allowed[0]
        return fmt, state.auto_filename(kind, fmt)
    arg = args[0]
    if arg in FORMATS:
        if arg not in allowed:
            raise CommandError(f"{kind}: format {arg!r} not supported (use {', '.join(allowed)})")
        return arg, None
    ext = arg.rsplit(".", 1)[-1].lower() if "." in arg else ""
    if ext not in allowed:
        raise CommandError(f"{kind}: expected a format ({', '.join(allowed)}) or a file name ending in one")
    return ext, arg


def image_reply(state: ServerState, cam: str, kind: str, args: list[str]) -> "str | bytes":
    fmt, filename = _target(state, kind, args)
    cam_id = parse_int(cam, "camera id")
    path = state.output_path(filename) if filename else None  # refuse bad paths before rendering
    array = state.render(cam_id, (kind,))[kind]
    data = encode(kind, array, fmt)
    if path is None:
        return data
    write_atomic(path, data)
    return str(path)


def _register(kind: str) -> None:
    def handler(state: ServerState, args: list[str], id: str) -> "str | bytes":
        return image_reply(state, id, kind, args)

    handler.__name__ = f"get_{kind}"
    command(f"vget /camera/[id]/{kind}", f"vget /camera/[id]/{kind} [format]")(handler)


for _kind in IMAGE_KINDS + DEPTH_KINDS:
    _register(_kind)
