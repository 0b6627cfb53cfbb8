"""Repair the sun of HDRIs damaged by lossy EXR compression.

Why: the @pmndrs/assets HDRIs are stored with DWAB compression (8×8 DCT blocks). Around a sun
pixel of 10⁴ the block rings: neighbouring values swing to −1,000 and the channels disagree
(pm_park's sun decodes as (0, 0, 11 800): a saturated blue square; pm_sunset's as
(801, 104, 0.07)). Negative values are clipped at decode, which leaves black holes next to it.
In a render whose camera sees the sun that showed as a blue or black square in the sky.

What: :func:`repair_hot_spots` finds each hot spot (pixels far brighter than the image, with 2
pixels around them), and only where the spot is damaged — a hot pixel with a channel clipped to
~0 (below ``CLIPPED`` × its brightest: no sun or lamp is that pure a colour) or a pixel clipped
to black in a lit sky — replaces the spot
by the colour of the sky just around it plus a small Gaussian disc holding the spot's energy
above that sky (the sum of its pixels' channel means), at the spot's energy centroid, tinted as
its intact hot pixels (neutral when none is intact).
Clean suns and lamps are returned unchanged; the result is a pure function of the array
(deterministic).
"""

from __future__ import annotations

import numpy as np
from scipy import ndimage

HOT_OVER_MEDIAN = 100.0  # a hot pixel: brightest channel > this × the image's median brightness...
HOT_MIN = 50.0  # ...and above this absolute radiance
CLIPPED = 1e-3  # a hot pixel with a channel below this × its brightest one was clipped from < 0
HOLE_SKY = 1.0  # a black pixel in a spot counts as clipped only in a sky at least this bright
SIGMA_PX = 0.8  # the replacement disc's Gaussian radius


def repair_hot_spots(rgb: np.ndarray) -> np.ndarray:
    """``rgb`` (H, W, 3) linear, ≥ 0 → the same array, or a repaired copy when a sun is damaged."""
    a = np.asarray(rgb, np.float32)
    bright = a.max(axis=-1)
    hot = bright > max(HOT_MIN, HOT_OVER_MEDIAN * float(np.median(bright)))
    if not hot.any():
        return rgb
    out = None
    labels, n = ndimage.label(ndimage.binary_dilation(hot, iterations=2))
    for k in range(1, n + 1):
        spot = labels == k
        ring = ndimage.binary_dilation(spot, iterations=2) & ~spot
        sky = np.median(a[ring], axis=0) if ring.any() else np.zeros(3, np.float32)
        px = a[spot]
        hot_px = a[spot & hot]
        bad = hot_px.min(axis=-1) < CLIPPED * hot_px.max(axis=-1)
        holes = (px.max(axis=-1) <= 0.0).any() and float(sky.max()) > HOLE_SKY  # clipped to 0 in a lit sky
        if not (bad.any() or holes):
            continue  # a clean sun (or lamp): keep it as shot
        good = hot_px[~bad]  # the spot's colour from its intact hot pixels
        tint = good.sum(axis=0) / good.sum() * 3.0 if len(good) and good.sum() > 0 else np.ones(3, np.float32)
        if out is None:
            out = a.copy()
        ys, xs = np.nonzero(spot)
        energy = np.maximum(px.mean(axis=-1) - float(sky.mean()), 0.0)
        total = float(energy.sum())
        cy, cx = (
            (float((ys * energy).sum() / total), float((xs * energy).sum() / total))
            if total > 0
            else (float(ys.mean()), float(xs.mean()))
        )
        disc = np.exp(-((ys - cy) ** 2 + (xs - cx) ** 2) / (2 * SIGMA_PX**2))
        disc *= total / max(float(disc.sum()), 1e-9)
        out[ys, xs] = sky[None, :] + disc[:, None] * tint[None, :]
    return rgb if out is None else out
