"""sRGB ↔ linear light (IEC 61966-2-1): photometric degradations act on linear radiance, not on
display values, because that is where light adds, noise is Poisson and sensors clip."""

from __future__ import annotations

import numpy as np


def to_linear(img: np.ndarray) -> np.ndarray:
    """uint8 (or [0,1] float) sRGB → float32 linear in [0, 1]."""
    x = np.asarray(img, dtype=np.float32)
    if np.asarray(img).dtype == np.uint8:
        x = x / 255.0
    return np.where(x <= 0.04045, x / 12.92, ((x + 0.055) / 1.055) ** 2.4).astype(np.float32)


def to_srgb8(lin: np.ndarray) -> np.ndarray:
    """float linear (clipped to [0, 1]) → uint8 sRGB, rounded to nearest."""
    x = np.clip(np.asarray(lin, dtype=np.float32), 0.0, 1.0)
    s = np.where(x <= 0.0031308, 12.92 * x, 1.055 * np.power(x, 1 / 2.4) - 0.055)
    return np.clip(np.rint(s * 255.0), 0, 255).astype(np.uint8)
