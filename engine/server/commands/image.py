"""Image commands: ``vget /camera/[id]/<kind> [format|filename]`` and ``vget /screenshot``.

Formats as the UnrealCV plugin (byte layouts in :mod:`engine.server.image_codecs`): ``png``
(RGBA), ``bmp`` (the plugin's 32-bit BGRA top-down BMP) and ``npy`` (``np.save`` bytes: uint8 RGB
images, float32 depth in cm, float32 (H, W, 2) flow in pixels). Depth also as ``exr`` (float32)
and ``png`` (16-bit cm). The commands, their formats and aliases (the plugin's ``seg``) are made
from the render-kind table (:mod:`engine.render_kinds`); the derived kinds (``optical_flow``: the
motion since this camera's previous image request; ``class_mask``: class segmentation) are
computed from rendered ones (:mod:`engine.server.derived`).
A file name ending in a format's extension writes the file into the server's output directory
(never outside it) and replies with its absolute path; no argument writes an auto-numbered file
there, as older plugins did. An unsupported format gets the plugin's ``Invalid filename type``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from sceneforge.core.atomic import atomic_write_bytes
from sceneforge.core.errors import CommandError
from sceneforge.engine import render_kinds
from sceneforge.engine.server import image_codecs as codecs
from sceneforge.engine.server.commands.table import RENDER, command, parse_int
from sceneforge.engine.server.derived import derive
from sceneforge.engine.server.optical_flow import snapshot
from sceneforge.engine.server.state import ServerState

FORMATS = ("png", "bmp", "npy", "exr")


def to_uint8(kind: str, array: np.ndarray) -> np.ndarray:
    """RGB uint8 view of a rendered array, as its row's ``as_image`` says (normals map [-1, 1]
    → [0, 255]; flow colour-coded)."""
    shown = render_kinds.get(kind).as_image
    if shown == "unit_vector":
        return np.clip(np.rint((array + 1.0) * 127.5), 0, 255).astype(np.uint8)
    if shown == "flow":
        return codecs.flow_rgb(array)
    return np.ascontiguousarray(array, dtype=np.uint8)


def encode(kind: str, array: np.ndarray, fmt: str) -> bytes:
    """Encode one rendered array in an UnrealCV format (one of its row's ``formats``)."""
    if fmt == "npy":
        return codecs.npy_bytes(array)
    if render_kinds.get(kind).as_image == "depth16":
        return codecs.exr_bytes(array) if fmt == "exr" else codecs.depth_png_bytes(array)
    rgb = to_uint8(kind, array)
    return codecs.png_rgba_bytes(rgb) if fmt == "png" else codecs.bmp_bytes(rgb)


def write_atomic(path: Path, data: bytes) -> None:
    """Write to a temp name then rename, so a reader never sees half a file."""
    atomic_write_bytes(path, data)


def _invalid(arg: str) -> CommandError:
    return CommandError(f"Invalid filename type, filename {arg}")


def _target(state: ServerState, kind: str, args: list[str]) -> tuple[str, str | None]:
    """(format, filename or None) for the optional argument."""
    allowed = render_kinds.get(kind).formats
    if not args:
        return allowed[0], state.auto_filename(kind, allowed[0])
    arg = args[0]
    if arg in FORMATS:
        if arg not in allowed:
            raise _invalid(arg)
        return arg, None
    ext = arg.rsplit(".", 1)[-1].lower() if "." in arg else ""
    if ext not in allowed:
        raise _invalid(arg)
    return ext, arg


def _exposed(state: ServerState, cam_id: int, lit: np.ndarray) -> np.ndarray:
    """Apply ``vset /camera/[id]/exposure_bias`` (EV) as a linear gain on the sRGB lit image."""
    ev = state.unrealcv.camera(cam_id).exposure_bias
    if ev == 0.0:
        return lit
    c = lit.astype(np.float64) / 255.0
    linear = np.where(c <= 0.04045, c / 12.92, ((c + 0.055) / 1.055) ** 2.4) * 2.0**ev
    srgb = np.where(linear <= 0.0031308, 12.92 * linear, 1.055 * np.power(np.clip(linear, 0, None), 1 / 2.4) - 0.055)
    return np.clip(np.rint(srgb * 255.0), 0, 255).astype(np.uint8)


def render_kind(state: ServerState, cam_id: int, kind: str) -> np.ndarray:
    """One stock image of camera ``cam_id``; records the frame for the next optical flow."""
    camera = state.camera(cam_id)
    settings = state.unrealcv.camera(cam_id)
    row = render_kinds.get(kind)
    if row.derived_from:
        out = derive(state, cam_id, kind, state.render(cam_id, row.derived_from))
    elif kind == "lit" and settings.lit_source == "normal":
        out = to_uint8("normal", state.render(cam_id, ("normal",))["normal"])
    elif kind == "lit":
        out = _exposed(state, cam_id, state.render(cam_id, ("lit",))["lit"])
    else:
        out = state.render(cam_id, (kind,))[kind]
    state.unrealcv.previous_frame[cam_id] = snapshot(state.scene, camera)
    return out


def image_reply(state: ServerState, cam: str, kind: str, args: list[str]) -> "str | bytes":
    fmt, filename = _target(state, kind, args)
    cam_id = parse_int(cam, "camera id")
    state.camera(cam_id)  # a bad id fails before anything else
    path = state.output_path(filename) if filename else None  # refuse bad paths before rendering
    data = encode(kind, render_kind(state, cam_id, kind), fmt)
    if path is None:
        return data
    write_atomic(path, data)
    return str(path)


def _register(name: str, kind: str) -> None:
    def handler(state: ServerState, args: list[str], id: str) -> "str | bytes":
        return image_reply(state, id, kind, args)

    handler.__name__ = f"get_{name}"
    formats = render_kinds.get(kind).formats
    handler.__doc__ = f"Get {kind.replace('_', ' ')} from camera [id] as {'/'.join(formats)} bytes or a file"
    command(f"vget /camera/[id]/{name}", f"vget /camera/[id]/{name} [format]", access=RENDER)(handler)


# one camera command per row of the render-kind table with formats, then the plugin's aliases
for _row in render_kinds.camera_kinds():
    _register(_row.name, _row.name)
for _row in render_kinds.camera_kinds():
    for _alias in _row.aliases:
        _register(_alias, _row.name)

_VIEWMODE_KIND = {
    "lit": "lit",
    "unlit": "lit",
    "base_color": "lit",
    "vertex_color": "lit",
    "no_transparency": "lit",
    "wireframe": "lit",
    "debug": "lit",
    "object_mask": "object_mask",
    "normal": "normal",
    "optical_flow": "optical_flow",
}


@command("vget /screenshot [filename]", access=RENDER)
def screenshot(state: ServerState, args: list[str]) -> "str | bytes":
    """Get a screenshot of the game viewport (camera 0 in the current view mode) as png/bmp bytes or a file"""
    mode = state.unrealcv.viewmode
    if mode == "depth":  # the viewport shows depth as colour; use 1/depth-normalised grey
        depth = state.render(0, ("depth",))["depth"]
        finite = np.isfinite(depth)
        grey = np.zeros(depth.shape, np.uint8)
        if finite.any():
            grey[finite] = np.clip(255.0 * depth[finite].min() / np.maximum(depth[finite], 1e-6), 0, 255).astype(np.uint8)
        rgb = np.repeat(grey[..., None], 3, axis=2)
    else:
        kind = _VIEWMODE_KIND.get(mode, "lit")
        rgb = to_uint8(kind, render_kind(state, 0, kind))
    arg = args[0]
    ext = arg.rsplit(".", 1)[-1].lower() if "." in arg else arg
    if ext not in ("png", "bmp"):
        raise _invalid(arg)
    data = codecs.png_rgba_bytes(rgb) if ext == "png" else codecs.bmp_bytes(rgb)
    if arg == ext:
        return data
    path = state.output_path(arg)
    write_atomic(path, data)
    return str(path)
