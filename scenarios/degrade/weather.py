"""Meteorological degradations: haze (Koschmieder's law on the scene's depth) and water
droplets on the lens (small refracting lenses, out of focus)."""

from __future__ import annotations


import cv2
import numpy as np

from sceneforge.scenarios.degrade.color import to_linear, to_srgb8
from sceneforge.scenarios.degrade.optics import clean_depth

KOSCHMIEDER = 3.912  # ln(1/0.02): visibility V is where contrast falls to 2 %, so beta = 3.912 / V


def transmission(depth: np.ndarray, visibility_m: float) -> np.ndarray:
    """``t = exp(−β d)`` with ``β = 3.912 / V`` and ray depth ``d`` (cm → m). Sky (inf) → 0."""
    beta = KOSCHMIEDER / float(visibility_m)
    return np.exp(-beta * clean_depth(depth) / 100.0).astype(np.float32)


def airlight(img: np.ndarray, depth: np.ndarray, default: float = 0.8) -> np.ndarray:
    """Linear RGB of the horizon sky: the median of sky pixels (depth inf) in the bottom half of
    the sky region, so haze takes the colour of this scene's own sky; grey ``default`` if no sky."""
    lin = to_linear(img)
    sky = ~np.isfinite(np.asarray(depth)) | (np.asarray(depth) <= 0)
    if sky.sum() < 16:
        return np.full(3, default, dtype=np.float32)
    rows = np.where(sky.any(axis=1))[0]
    low = sky & (np.arange(sky.shape[0])[:, None] >= rows[len(rows) // 2])
    return np.median(lin[low], axis=0).astype(np.float32)


def haze(img: np.ndarray, depth: np.ndarray, visibility_m: float, air: np.ndarray | None = None) -> np.ndarray:
    """Koschmieder: ``I = J·t + A·(1 − t)`` in linear light (homogeneous scattering medium)."""
    lin = to_linear(img)
    a = airlight(img, depth) if air is None else np.asarray(air, dtype=np.float32)
    t = transmission(depth, visibility_m)[..., None]
    return to_srgb8(lin * t + a[None, None, :] * (1 - t))


def droplets(
    img: np.ndarray, rng: np.random.Generator, count: int, radius_frac: tuple[float, float], blur_frac: float = 0.01
) -> tuple[np.ndarray, list[dict]]:
    """Water drops on the front element. A drop is a small plano-convex lens sitting far nearer
    than the focus distance, so (1) it is out of focus: the scene seen through it is blurred, and
    (2) it refracts: it shows a minified, point-inverted view of the scene around it (a real image
    of the scene behind the lens element); its rim is darker (total internal reflection) and it
    carries a small specular highlight. Drops are placed from ``rng``; returns the image and the
    drops' parameters (centre px, radius px) for the record."""
    h, w = img.shape[:2]
    lin = to_linear(img)
    soft = cv2.GaussianBlur(lin, (0, 0), max(blur_frac * w, 0.5))
    out = lin.copy()
    yy, xx = np.mgrid[:h, :w].astype(np.float32) + 0.5
    drops = []
    for _ in range(int(count)):
        r = float(rng.uniform(*radius_frac)) * w
        cx, cy = float(rng.uniform(0, w)), float(rng.uniform(0, h))
        aspect = float(rng.uniform(0.8, 1.2))
        dx, dy = (xx - cx) / r, (yy - cy) / (r * aspect)
        rho = np.sqrt(dx * dx + dy * dy)
        inside = rho < 1.0
        if not inside.any():
            continue
        mag = 2.5  # the drop sees a patch 2.5× its size, inverted through its centre
        sx = np.clip(cx - dx * r * mag, 0, w - 1).astype(np.float32)
        sy = np.clip(cy - dy * r * aspect * mag, 0, h - 1).astype(np.float32)
        seen = cv2.remap(soft, sx - 0.5, sy - 0.5, cv2.INTER_LINEAR, borderMode=cv2.BORDER_REPLICATE)
        shade = (1.0 - 0.45 * np.clip(rho, 0, 1) ** 4)[..., None] * 1.05
        spec = 0.35 * np.exp(-(((dx + 0.35) ** 2 + (dy + 0.4) ** 2) / 0.02))[..., None]
        alpha = np.clip((1.0 - rho) * r / 1.5, 0, 1)[..., None]  # ~1.5 px anti-aliased rim
        out = out * (1 - alpha) + alpha * (seen * shade + spec)
        drops.append({"centre_px": [round(cx, 3), round(cy, 3)], "radius_px": round(r, 3), "aspect": round(aspect, 4)})
    return to_srgb8(out), drops
