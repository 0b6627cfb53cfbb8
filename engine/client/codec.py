"""Decoding a render server's replies for :class:`engine.client.RenderClient`: addresses,
colours, vectors, images (as the render-kind table says: engine/render_kinds.py) and pixel counts;
and the camera's JSON. Pure functions: the client's modules all use them, they use none of them.
"""

from __future__ import annotations

import io
import re

import numpy as np

from sceneforge.core.errors import ConnectionFailed, ProtocolError
from sceneforge.core.types import PixelCount
from sceneforge.engine import render_kinds
from sceneforge.engine.protocol import compact_json
from sceneforge.engine.world import Camera

_COLOR_RE = re.compile(r"R=(\d+),G=(\d+),B=(\d+)")


def parse_address(address: "str | tuple[str, int]") -> tuple[str, int]:
    """``"host:port"`` or ``(host, port)`` → ``(host, port)``."""
    if isinstance(address, tuple):
        return str(address[0]), int(address[1])
    host, sep, port = str(address).rpartition(":")
    if not sep or not port.isdigit():
        raise ConnectionFailed(f"server address must be HOST:PORT, got {address!r}")
    return host or "127.0.0.1", int(port)


def parse_color(text: str) -> tuple[int, int, int]:
    m = _COLOR_RE.search(text)
    if not m:
        raise ProtocolError(f"cannot parse a colour from {text[:60]!r}")
    return tuple(int(g) for g in m.groups())  # type: ignore[return-value]


def parse_vec(text: str, what: str) -> tuple[float, ...]:
    try:
        return tuple(float(v) for v in text.split())
    except ValueError:
        raise ProtocolError(f"cannot parse {what} from {text[:60]!r}") from None


def decode_image(data: bytes, kind: str) -> np.ndarray:
    """PNG/BMP/NPY bytes → array in the backend's conventions (RGB uint8, float32 cm, normals)."""
    if data[:6] == b"\x93NUMPY":
        return np.load(io.BytesIO(data), allow_pickle=False)
    import cv2  # lazy: OpenCV is only needed for a stock (UE) server's png replies

    img = cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_UNCHANGED)
    if img is None:
        raise ProtocolError(f"{kind}: reply is neither NPY nor a decodable image")
    rgb = np.ascontiguousarray(img[..., 2::-1])
    unit = render_kinds.get(kind).as_image == "unit_vector"  # normals: [0, 255] → [-1, 1]
    return (rgb.astype(np.float32) / 127.5 - 1.0) if unit else rgb


def pixel_counts(raw, what: str) -> dict[str, PixelCount]:
    """``{name: PixelCount}`` from the server's JSON counts ``{name: {"visible", "unoccluded",
    "bbox"}}`` (``/sceneforge/visibility``, ``render_if_visible``'s meta); ProtocolError when
    malformed."""
    try:
        return {
            n: PixelCount(int(v["visible"]), int(v["unoccluded"]), tuple(map(int, v["bbox"])) if v["bbox"] else None)
            for n, v in raw.items()
        }
    except (KeyError, TypeError, ValueError, AttributeError) as e:
        raise ProtocolError(f"{what} reply: bad counts ({e})") from None


def camera_json(camera: Camera) -> str:
    return compact_json(
        {
            "location": list(camera.location),
            "rotation": list(camera.rotation.as_tuple()),
            "fov": camera.fov_deg,
            "size": [camera.width, camera.height],
        }
    )
