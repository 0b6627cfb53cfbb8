"""Byte formats of UnrealCV image replies, written to match the UE plugin where it has one.

* **BMP** exactly as the plugin's ``FImageUtil::ConvertToBmp``: a 14-byte file header and a
  40-byte info header (``biHeight = -H``: top-down, ``biBitCount = 32``, ``BI_RGB``,
  ``bfOffBits = 54``, ``bfSize = 54 + W*H*4``, 1024 pixels/m), then the pixel bytes serialised
  as a UE ``TArray<uint8>`` through ``FBufferArchive <<``, which writes the array's int32 element
  count (``W*H*4``) before the data. Pixels are UE ``FColor``s: B, G, R, A. So a reply is
  ``58 + W*H*4`` bytes and gym-unrealcv's ``img[-H*W*4:].reshape(H, W, 4)`` reads it; a standard
  decoder starting at ``bfOffBits`` sees the count as the first pixel, as it does with UE.
* **PNG**: 8-bit RGBA (the plugin's ``ERGBFormat::BGRA`` source compressed as RGBA).
* **NPY**: ``np.save`` bytes.
* **EXR** (depth only; the plugin's ``depth test.exr`` of older versions): single channel ``Y``
  float32, scanline, uncompressed, written here (OpenCV wheels ship without OpenEXR) and read back
  with the OpenEXR bindings in the tests.
* **Depth PNG**: 16-bit single channel, depth in whole centimetres, 0 = nothing hit (sky) and
  clipped at 65535 (655 m): a lossy preview, ``npy``/``exr`` keep floats.
"""

from __future__ import annotations

import io
import struct

import numpy as np

from sceneforge.core.errors import CommandError

BMP_HEADER_BYTES = 54


def bmp_bytes(rgb: np.ndarray) -> bytes:
    """The plugin's BMP of an (H, W, 3) uint8 RGB image (alpha 255)."""
    h, w = rgb.shape[:2]
    bgra = np.empty((h, w, 4), np.uint8)
    bgra[..., 0], bgra[..., 1], bgra[..., 2], bgra[..., 3] = rgb[..., 2], rgb[..., 1], rgb[..., 0], 255
    n = w * h * 4
    file_header = struct.pack("<2sIHHI", b"BM", BMP_HEADER_BYTES + n, 0, 0, BMP_HEADER_BYTES)
    info_header = struct.pack("<IiiHHIIiiII", 40, w, -h, 1, 32, 0, 0, 1024, 1024, 0, 0)
    return file_header + info_header + struct.pack("<i", n) + bgra.tobytes()


def png_rgba_bytes(rgb: np.ndarray) -> bytes:
    import cv2  # lazy: keeps `sceneforge serve` start-up fast

    alpha = np.full(rgb.shape[:2] + (1,), 255, np.uint8)
    ok, data = cv2.imencode(".png", np.concatenate([rgb[..., ::-1], alpha], axis=2))
    if not ok:
        raise CommandError("could not encode png")
    return data.tobytes()


def depth_png_bytes(depth_cm: np.ndarray) -> bytes:
    import cv2

    d = np.where(np.isfinite(depth_cm), depth_cm, 0.0)
    ok, data = cv2.imencode(".png", np.clip(np.rint(d), 0, 65535).astype(np.uint16))
    if not ok:
        raise CommandError("could not encode depth png")
    return data.tobytes()


def npy_bytes(array: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.save(buf, array, allow_pickle=False)
    return buf.getvalue()


def _attr(name: str, kind: str, value: bytes) -> bytes:
    return name.encode() + b"\0" + kind.encode() + b"\0" + struct.pack("<i", len(value)) + value


def exr_bytes(image: np.ndarray) -> bytes:
    """Uncompressed scanline OpenEXR of an (H, W) float image: one FLOAT channel ``Y``."""
    data = np.ascontiguousarray(image, dtype="<f4")
    h, w = data.shape
    chlist = b"Y\0" + struct.pack("<iB3xii", 2, 0, 1, 1) + b"\0"  # FLOAT, not linear, 1x1 sampling
    box = struct.pack("<iiii", 0, 0, w - 1, h - 1)
    header = (
        struct.pack("<ii", 20000630, 2)
        + _attr("channels", "chlist", chlist)
        + _attr("compression", "compression", b"\0")
        + _attr("dataWindow", "box2i", box)
        + _attr("displayWindow", "box2i", box)
        + _attr("lineOrder", "lineOrder", b"\0")
        + _attr("pixelAspectRatio", "float", struct.pack("<f", 1.0))
        + _attr("screenWindowCenter", "v2f", struct.pack("<ff", 0.0, 0.0))
        + _attr("screenWindowWidth", "float", struct.pack("<f", 1.0))
        + b"\0"
    )
    line_bytes = 4 * w
    first = len(header) + 8 * h
    offsets = struct.pack(f"<{h}Q", *(first + y * (8 + line_bytes) for y in range(h)))
    lines = b"".join(struct.pack("<ii", y, line_bytes) + data[y].tobytes() for y in range(h))
    return header + offsets + lines


def flow_rgb(flow: np.ndarray) -> np.ndarray:
    """Colour-code (H, W, 2) flow in pixels: hue = direction, value = magnitude / max magnitude
    (the usual flow visualisation; saturation 1). Zero flow is black."""
    import cv2

    mag = np.hypot(flow[..., 0], flow[..., 1])
    ang = (np.degrees(np.arctan2(flow[..., 1], flow[..., 0])) % 360.0) / 2.0
    peak = float(mag.max()) if mag.size else 0.0
    hsv = np.stack([ang, np.full_like(ang, 255.0), 255.0 * mag / peak if peak > 0 else np.zeros_like(mag)], axis=-1)
    return cv2.cvtColor(np.clip(np.rint(hsv), 0, 255).astype(np.uint8), cv2.COLOR_HSV2RGB)
