"""Screens of camera candidates: necessary conditions of the projection rules, checked before them.

``screen_aimed_cameras`` projects every footprint-prism corner for a whole batch of candidate
cameras at once (``scene.sample_view`` draws 32+ at a time); only candidates it passes go through
the rules one by one (``sampling.projection_rules``). ``RASTER_SLACK_PX`` is the pixel every size
screen must leave to the rasteriser (the prism, ``conditioned.max_useful_distance``, the
silhouette bound of ``scenarios/sampling/silhouette.py``).
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np

# A projected extent of E px covers at most floor(E) + 1 pixel centres, so a mask box of
# ``min_px`` pixels needs E >= min_px - 1: the geometric screens (small_projection, too_far, the
# camera region) reject only below that. Comparing E with min_px itself rejected views whose mask
# just passes (measured: 19 of 59 views of a box-shaped building with E in [11, 12) render a
# 12-px mask box; tests/scenarios/test_sampling.py).
RASTER_SLACK_PX = 1.0


def screen_aimed_cameras(
    eyes: np.ndarray,
    aim: Sequence[float],
    fov_deg: float,
    size: int,
    prisms: Sequence[np.ndarray],
    margin_px: float,
    min_px: float,
    near_cm: float = 10.0,
    slack_px: float = 1e-6,
) -> list[str | None]:
    """Per eye (n, 3) of a square camera aimed at ``aim`` ((3,), or (n, 3): one per eye): ``"small_projection"`` or
    ``"in_frame"`` when it certainly fails that rule of :func:`projection_rules` (checked with a
    ``slack_px`` tolerance, so rounding never fails a camera the rules keep), else None. One
    vectorised projection of every prism corner for every eye."""
    eyes = np.asarray(eyes, float).reshape(-1, 3)
    aim = np.asarray(aim, float)
    d = (aim.reshape(-1, 3) if aim.ndim == 2 else aim[None, :]) - eyes  # one aim, or one per eye
    yaw, pitch = np.arctan2(d[:, 1], d[:, 0]), np.arctan2(d[:, 2], np.hypot(d[:, 0], d[:, 1]))
    sp, cp, sy, cy = np.sin(pitch), np.cos(pitch), np.sin(yaw), np.cos(yaw)
    fwd = np.stack([cp * cy, cp * sy, sp], axis=1)
    right = np.stack([-sy, cy, np.zeros_like(sy)], axis=1)
    up = np.stack([-sp * cy, -sp * sy, cp], axis=1)
    pts = np.vstack(prisms)
    rel = pts[None, :, :] - eyes[:, None, :]  # (n, N, 3)
    depth = np.einsum("npk,nk->np", rel, fwd)
    focal = (size / 2.0) / math.tan(math.radians(fov_deg) / 2.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        u = size / 2.0 + focal * np.einsum("npk,nk->np", rel, right) / depth
        v = size / 2.0 - focal * np.einsum("npk,nk->np", rel, up) / depth
    out: list[str | None] = [None] * len(eyes)
    ends = np.cumsum([0] + [len(p) for p in prisms])
    small = np.zeros(len(eyes), bool)
    for a, b in zip(ends[:-1], ends[1:]):
        ext = np.maximum(u[:, a:b].max(axis=1) - u[:, a:b].min(axis=1), v[:, a:b].max(axis=1) - v[:, a:b].min(axis=1))
        small |= ext < min_px - RASTER_SLACK_PX - slack_px  # NaN (behind the eye) compares False: kept
    lo, hi = margin_px - slack_px, size - margin_px + slack_px
    outside = np.any(depth <= near_cm - slack_px, axis=1) | np.any((u < lo) | (u > hi) | (v < lo) | (v > hi), axis=1)
    for k in np.flatnonzero(small | outside):
        out[k] = "small_projection" if small[k] else "in_frame"
    return out
