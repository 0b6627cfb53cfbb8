"""SpaceDG's nine image degradations as deterministic functions of (clean image, depth, level, seed).

Severity levels 1–5 map to physical parameters in :data:`LEVELS` (documented in
docs/degradations.md). Labels never change; only lens distortion moves pixels, and it returns the
warped instance mask and a box mapper so 2-D annotations stay consistent with the image.

Example::

    from sceneforge.scenarios.degrade import degrade
    out = degrade("haze", 3, rgb, depth=depth_cm, fov_deg=53.13, seed=0)
    out.image, out.params            # uint8 (H, W, 3); what was drawn, for the table/record
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from sceneforge.core.errors import ConfigError

TYPES = ("defocus", "motion_blur", "haze", "water_drops", "low_light", "over_exposure", "jpeg", "low_resolution", "distortion")
NEEDS_DEPTH = ("defocus", "motion_blur", "haze")

# Severity 1..5 → physical parameter(s). Chosen so level 1 is barely visible and level 5 is
# SpaceDG's strongest; see docs/degradations.md for the reasoning behind each scale.
LEVELS: dict[str, tuple] = {
    "defocus": (0.004, 0.008, 0.015, 0.025, 0.04),  # CoC at infinity, fraction of width
    "motion_blur": (1 / 60, 1 / 30, 1 / 15, 1 / 8, 1 / 4),  # exposure s at 3 m/s and 8 deg/s
    "haze": (1000.0, 500.0, 250.0, 120.0, 60.0),  # meteorological visibility, m
    "water_drops": (3, 6, 10, 16, 24),  # number of drops
    "low_light": (1 / 8, 1 / 16, 1 / 32, 1 / 64, 1 / 128),  # fraction of the scene's light
    "over_exposure": (0.5, 1.0, 1.5, 2.0, 2.5),  # +EV stops
    "jpeg": (40, 25, 15, 10, 5),  # libjpeg quality
    "low_resolution": (2, 3, 4, 6, 8),  # downsampling factor
    "distortion": (-0.05, -0.1, -0.15, -0.22, -0.3),  # Brown–Conrady k1 (barrel), r=1 at the corner
}
CAMERA_SPEED_CM_S = 300.0
PAN_DEG_S = 8.0


@dataclass
class Degraded:
    image: np.ndarray
    params: dict
    mask: np.ndarray | None = None  # warped mask (distortion only)
    box: Callable[[list | None], list | None] = field(default=lambda b: b)  # 2-D box mapper


def rng_for(seed: int, kind: str, level: int, key: str = "") -> np.random.Generator:
    """Independent generator per (seed, degradation, level, sample key): same on every machine."""
    h = hashlib.sha256(f"{kind}\x1f{level}\x1f{key}".encode()).digest()
    words = tuple(int.from_bytes(h[i : i + 4], "little") for i in range(0, 16, 4))
    return np.random.default_rng(np.random.SeedSequence(entropy=int(seed), spawn_key=words))


def check(kind: str, level: int) -> None:
    if kind not in TYPES:
        raise ConfigError(f"unknown degradation {kind!r}; choose from {', '.join(TYPES)}")
    if int(level) != level or not 1 <= int(level) <= 5:
        raise ConfigError(f"degradation level must be an integer 1..5, got {level!r}")


def check_depth(depth: np.ndarray) -> None:
    """Ray depth in cm: no NaN and nothing negative (``+inf`` marks the sky). Why: NaN or negative
    depths passed silently and gave wrong haze, blur and motion without a word."""
    bad_nan, bad_neg = int(np.isnan(depth).sum()), int((depth < 0).sum())
    if bad_nan or bad_neg:
        raise ConfigError(
            f"depth has {bad_nan} NaN and {bad_neg} negative value(s); ray depth in cm must be >= 0 (+inf for the sky)"
        )


def focus_distance(depth: np.ndarray) -> float:
    """Where the camera focuses: the median depth of the central 20 % of the frame (autofocus's
    usual centre-weighted metering), ignoring sky; 10 m if the centre is all sky."""
    h, w = depth.shape
    c = np.asarray(depth)[int(h * 0.4) : int(np.ceil(h * 0.6)), int(w * 0.4) : int(np.ceil(w * 0.6))]
    c = c[np.isfinite(c) & (c > 0)]
    return float(np.median(c)) if c.size else 1000.0


def degrade(
    kind: str,
    level: int,
    image: np.ndarray,
    *,
    depth: np.ndarray | None = None,
    mask: np.ndarray | None = None,
    fov_deg: float = 53.13,
    seed: int = 0,
    key: str = "",
    focus_cm: float | None = None,
) -> Degraded:
    """Apply one degradation at one level. ``depth``: ray depth in cm (needed by
    :data:`NEEDS_DEPTH`); ``mask``: instance mask (warped along by distortion); ``key`` makes
    random draws differ between samples (use the image's path)."""
    from sceneforge.scenarios.degrade import optics, sensor, weather  # OpenCV: only when degrading

    check(kind, level)
    img = np.ascontiguousarray(np.asarray(image, dtype=np.uint8)[..., :3])
    if kind in NEEDS_DEPTH:
        if depth is None:
            raise ConfigError(f"degradation {kind!r} needs the depth map (make the dataset with --depth)")
        depth = np.asarray(depth, dtype=np.float64)
        if depth.shape != img.shape[:2]:
            raise ConfigError(f"depth shape {depth.shape} does not match image {img.shape[:2]}")
        check_depth(depth)
    if not (isinstance(fov_deg, (int, float)) and 0 < fov_deg < 180):
        raise ConfigError(f"fov_deg must be in (0, 180) degrees, got {fov_deg!r}")
    value = LEVELS[kind][int(level) - 1]
    rng = rng_for(seed, kind, int(level), key)
    h, w = img.shape[:2]
    f = optics.focal_px(w, fov_deg)
    if kind == "defocus":
        s = float(focus_cm) if focus_cm else focus_distance(depth)
        aperture = value * w * s / f  # c(∞) = A f_px / s
        return Degraded(
            optics.defocus(img, depth, fov_deg, s, aperture), {"focus_cm": s, "aperture_cm": aperture, "coc_inf_px": value * w}
        )
    if kind == "motion_blur":
        ang = rng.uniform(0, 2 * np.pi)
        dist = CAMERA_SPEED_CM_S * value
        t = (float(rng.uniform(-0.2, 0.2)) * dist, float(np.cos(ang)) * dist, float(np.sin(ang)) * dist)
        yaw, pitch = PAN_DEG_S * value * float(rng.choice([-1, 1])), PAN_DEG_S * value * float(rng.uniform(-0.3, 0.3))
        return Degraded(
            optics.motion_blur(img, depth, fov_deg, t, yaw, pitch),
            {"exposure_s": value, "translation_cm": list(t), "yaw_deg": yaw, "pitch_deg": pitch, "subframes": 15},
        )
    if kind == "haze":
        air = weather.airlight(img, depth)
        return Degraded(weather.haze(img, depth, value, air), {"visibility_m": value, "airlight": air.tolist()})
    if kind == "water_drops":
        lo, hi = 0.02 + 0.004 * level, 0.04 + 0.01 * level
        out, drops = weather.droplets(img, rng, value, (lo, hi))
        return Degraded(out, {"count": value, "drops": drops})
    if kind == "low_light":
        return Degraded(sensor.low_light(img, rng, value), {"light_fraction": value, "full_well_e": 4000.0, "read_noise_e": 3.0})
    if kind == "over_exposure":
        return Degraded(sensor.over_exposure(img, value), {"ev": value})
    if kind == "jpeg":
        return Degraded(sensor.jpeg(img, value), {"quality": value})
    if kind == "low_resolution":
        return Degraded(sensor.low_resolution(img, value), {"factor": value})
    lens = optics.LensDistortion(w, h, value, 0.0)
    return Degraded(
        lens.image(img),
        {"k1": value, "k2": 0.0, "normalisation": "half-diagonal", "zoom": 1 / lens.g1},
        mask=None if mask is None else lens.mask(mask),
        box=lens.box,
    )
