"""Image-based light for the PBR look, on the CPU in numpy (no GL calls: unit-testable).

An *environment* is an equirectangular radiance image (row 0 = zenith, u grows with UE yaw, so
turning right in the world moves right in the image, as in a panorama viewed from inside). From
it we derive, once per content key:

* 9 spherical-harmonic coefficients of the cosine-convolved irradiance (diffuse ambient: 9 MADs
  per pixel in the shader);
* a small stack of prefiltered radiance maps at increasing roughness (specular ambient: one
  trilinear lookup in a 3D texture, the third coordinate is roughness);
* a background image for the sky pass.

The environment is normalised so that the mean radiance of its upper hemisphere is 1; the
renderer multiplies by ``Sky.ambient × Sky.intensity × Sun.intensity``, so every HDRI and the
procedural sky mean the same thing by ``ambient`` (sky light relative to sun light). Very bright
texels (an HDRI's own sun) are clamped before filtering: the directional sun is lit and shadowed
separately and must not be counted twice.

Everything is a pure function of its inputs (no randomness), and caches are keyed by content,
so frames never depend on render history.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

SPEC_W, SPEC_H = 64, 32  # prefiltered maps (per roughness layer)
SPEC_ROUGHNESS = (0.0, 0.25, 0.5, 0.75, 1.0)  # layer k <-> roughness k / (layers - 1)
SRC_W, SRC_H = 128, 64  # the environment is filtered at this resolution
BG_W, BG_H = 512, 256  # background (HDRI skies)
CLAMP_MEAN = 12.0  # texels brighter than this × the mean are clamped (the sun)
SUN_W, SUN_H = 256, 128  # resolution the HDRI's own sun is searched at
SUN_PEAK = 20.0  # a clear sun: its texel ≥ this × the upper sky's mean radiance
SUN_MAX_SR = 0.02  # ... and compact: texels above half its peak span < 0.02 sr (~9°)
SUN_CONE_DEG = 10.0  # its direction: radiance-weighted mean within this of the peak


def srgb_to_linear(c) -> np.ndarray:
    c = np.asarray(c, dtype=np.float64) / 255.0
    return np.where(c <= 0.04045, c / 12.92, ((c + 0.055) / 1.055) ** 2.4)


def directions(w: int, h: int) -> tuple[np.ndarray, np.ndarray]:
    """Unit directions (h, w, 3) at texel centres in UE axes, and each texel's solid angle (h, w)."""
    u = (np.arange(w) + 0.5) / w
    v = (np.arange(h) + 0.5) / h
    yaw = (u - 0.5) * 2 * math.pi
    theta = v * math.pi  # from the zenith
    st, ct = np.sin(theta)[:, None], np.cos(theta)[:, None]
    d = np.stack([st * np.cos(yaw)[None, :], st * np.sin(yaw)[None, :], ct * np.ones((1, w))], axis=-1)
    solid = (2 * math.pi / w) * (math.pi / h) * np.broadcast_to(st, (h, w))
    return d, np.ascontiguousarray(solid)


def procedural_sky(zenith, horizon, w: int = SRC_W, h: int = SRC_H) -> np.ndarray:
    """The gradient sky as linear radiance (same formula as the sky shader's): horizon → zenith
    by sqrt(elevation); black below the horizon (the renderer adds the ground's bounce light,
    which depends on the sun, separately: the sky's filtering then stays constant per environment)."""
    d, _ = directions(w, h)
    t = np.sqrt(np.clip(d[..., 2], 0.0, 1.0))[..., None]
    zen, hor = srgb_to_linear(zenith), srgb_to_linear(horizon)
    return ((hor * (1 - t) + zen * t) * (d[..., 2:3] >= 0)).astype(np.float32)


def resample(img: np.ndarray, w: int, h: int) -> np.ndarray:
    """Box-filter an equirect image down to (h, w) (integer factors where possible, else nearest)."""
    img = np.asarray(img, dtype=np.float32)
    H, W = img.shape[:2]
    if H % h == 0 and W % w == 0:
        return img.reshape(h, H // h, w, W // w, -1).mean(axis=(1, 3))
    ys = ((np.arange(h) + 0.5) * H / h).astype(int)
    xs = ((np.arange(w) + 0.5) * W / w).astype(int)
    return img[ys][:, xs]


def upper_mean(img: np.ndarray) -> float:
    """Solid-angle-weighted mean luminance of the upper hemisphere."""
    h, w = img.shape[:2]
    d, solid = directions(w, h)
    up = d[..., 2] > 0
    lum = img[..., :3] @ np.array([0.2126, 0.7152, 0.0722], dtype=np.float32)
    return float((lum * solid)[up].sum() / max(solid[up].sum(), 1e-9))


SH_CONST = (0.282095, 0.488603, 1.092548, 0.315392, 0.546274)
SH_BAND = (math.pi, 2 * math.pi / 3, math.pi / 4)  # cosine-lobe convolution per band


def sh_basis(d: np.ndarray) -> np.ndarray:
    x, y, z = d[..., 0], d[..., 1], d[..., 2]
    c = SH_CONST
    return np.stack(
        [
            np.full_like(x, c[0]),
            c[1] * y,
            c[1] * z,
            c[1] * x,
            c[2] * x * y,
            c[2] * y * z,
            c[3] * (3 * z * z - 1),
            c[2] * x * z,
            c[4] * (x * x - y * y),
        ],
        axis=-1,
    )


def sh_irradiance(img: np.ndarray) -> np.ndarray:
    """(9, 3) coefficients such that ``sum_k c_k Y_k(n)`` = irradiance(n) / π (so the shader's
    diffuse term is simply ``albedo × that``)."""
    h, w = img.shape[:2]
    d, solid = directions(w, h)
    basis = sh_basis(d).reshape(-1, 9)
    coeffs = basis.T @ (img[..., :3].reshape(-1, 3) * solid.reshape(-1, 1))
    band = np.array([SH_BAND[0]] + [SH_BAND[1]] * 3 + [SH_BAND[2]] * 5)[:, None]
    return (coeffs * band / math.pi).astype(np.float32)


@lru_cache(maxsize=1)
def lower_hemisphere_sh() -> np.ndarray:
    """SH (as :func:`sh_irradiance`) of radiance 1 from every direction below the horizon: the
    renderer adds ``ground_bounce × this`` to the procedural sky's coefficients."""
    d, _ = directions(SRC_W, SRC_H)
    img = np.repeat((d[..., 2] < 0).astype(np.float32)[..., None], 3, axis=-1)
    return sh_irradiance(img)


def prefilter(img: np.ndarray) -> np.ndarray:
    """(layers, SPEC_H, SPEC_W, 3) radiance convolved with a GGX-like lobe per roughness.

    Brute force over the source texels with a normalised Phong lobe of the Blinn-equivalent
    exponent (2/α² − 2, α = roughness²); layer 0 is the source itself, box-filtered.
    """
    src = resample(img[..., :3], SPEC_W, SPEC_H)  # filtered at the output resolution (fast)
    src_d, solid = directions(SPEC_W, SPEC_H)
    src_d = src_d.reshape(-1, 3)
    rad = (src.reshape(-1, 3) * solid.reshape(-1, 1)).astype(np.float32)
    sw = solid.reshape(-1).astype(np.float32)
    cos = (src_d @ src_d.T).astype(np.float32)  # (out, src)
    with np.errstate(divide="ignore"):
        log_cos = np.log(np.clip(cos, 0.0, 1.0))
    layers = [resample(img[..., :3], SPEC_W, SPEC_H)]
    for r in SPEC_ROUGHNESS[1:]:
        a = max(r * r, 0.02)
        p = max(2.0 / (a * a) - 2.0, 1.0) / 4.0  # /4: reflected-lobe width vs half-vector lobe
        wgt = np.exp(np.maximum(np.float32(p) * log_cos, np.float32(-60.0)))  # no denormals (slow)
        num = wgt @ rad
        den = wgt @ sw
        layers.append((num / np.maximum(den, 1e-12)[:, None]).reshape(SPEC_H, SPEC_W, 3))
    return np.stack(layers).astype(np.float32)


def hdri_sun(img: np.ndarray) -> tuple[float, float] | None:
    """``(yaw_deg, elevation_deg)`` of the HDRI's own sun in the image's frame (yaw as
    :func:`directions`: u = yaw / 360° + 1/2), or None when it has no clear sun.

    A clear sun is a small, very bright spot: the brightest texel at or above the horizon is at
    least ``SUN_PEAK`` × the upper sky's mean and the texels above half of it cover less than
    ``SUN_MAX_SR``. Overcast skies (no such peak), clipped LDR-like HDRIs (a wide plateau at the
    clip value) and night skies give None. Pure function of the image.
    """
    img = np.nan_to_num(np.asarray(img, dtype=np.float32)[..., :3], nan=0.0, posinf=0.0, neginf=0.0)
    small = resample(np.maximum(img, 0.0), SUN_W, SUN_H)
    d, solid = directions(SUN_W, SUN_H)
    lum = small @ np.array([0.2126, 0.7152, 0.0722], dtype=np.float32)
    lum = np.where(d[..., 2] >= -0.02, lum, 0.0)
    mean = upper_mean(small)
    k = int(np.argmax(lum))
    peak = float(lum.flat[k])
    if mean <= 0.0 or peak < SUN_PEAK * mean:
        return None
    if float(solid[lum >= 0.5 * peak].sum()) > SUN_MAX_SR:
        return None
    near = (d.reshape(-1, 3) @ d.reshape(-1, 3)[k]) >= math.cos(math.radians(SUN_CONE_DEG))
    w = (lum * solid).reshape(-1) * near
    v = (d.reshape(-1, 3) * w[:, None]).sum(axis=0)
    return (
        math.degrees(math.atan2(v[1], v[0])),
        math.degrees(math.asin(float(np.clip(v[2] / max(np.linalg.norm(v), 1e-12), -1.0, 1.0)))),
    )


def sky_rotation_deg(sky, sun, hdri_sun_yaw: float | None) -> float:
    """The HDRI rotation a renderer applies (degrees about Z, UE yaw): with ``sky.align_sun`` and
    an HDRI whose own sun was found (:func:`hdri_sun`), the HDRI is turned so that its sun lies at
    the analytic ``Sun``'s yaw (shadows then fall away from the sun seen in the sky);
    ``sky.rotation_deg`` otherwise. A feature at image yaw ψ appears at world yaw ψ + rotation.
    Shared by the GL and Cycles backends."""
    if getattr(sky, "align_sun", False) and hdri_sun_yaw is not None:
        return float(sun.yaw) - float(hdri_sun_yaw)
    return float(sky.rotation_deg)


@dataclass(frozen=True, eq=False)
class EnvLight:
    """What the shaders need from one environment (normalised: upper-hemisphere mean = 1)."""

    sh: np.ndarray  # (9, 3) float32
    spec: np.ndarray  # (layers, SPEC_H, SPEC_W, 3) float32
    background: np.ndarray | None  # (BG_H, BG_W, 3) float32 for HDRIs; None = procedural sky
    horizon: np.ndarray  # (3,) mean radiance near the horizon (fog colour default)
    scale: float  # the normalisation applied to the source radiance
    sun: tuple[float, float] | None = None  # the HDRI's own sun (yaw, elevation) in degrees, or None


def _horizon(img: np.ndarray) -> np.ndarray:
    h = img.shape[0]
    band = img[int(h * 0.40) : int(h * 0.5)]
    return band.reshape(-1, 3).mean(axis=0).astype(np.float32)


def from_image(img: np.ndarray, background: bool) -> EnvLight:
    """Normalise, clamp the sun out, filter. ``img`` is any-size linear equirect (H, W, 3)."""
    img = np.nan_to_num(np.asarray(img, dtype=np.float32)[..., :3], nan=0.0, posinf=0.0, neginf=0.0)
    img = np.maximum(img, 0.0)
    bg = resample(img, BG_W, BG_H) if background else None
    small = resample(img, SRC_W, SRC_H)
    scale = 1.0 / max(upper_mean(small), 1e-6)
    clamped = np.minimum(small * scale, CLAMP_MEAN)
    # normalise what remains after the sun is clamped out (else a sunny HDRI lights too dimly)
    renorm = 1.0 / max(upper_mean(clamped), 1e-6)
    clamped, scale = clamped * renorm, scale * renorm
    return EnvLight(
        sh_irradiance(clamped),
        prefilter(clamped),
        None if bg is None else (bg * scale).astype(np.float32),
        _horizon(clamped),
        scale,
        hdri_sun(img) if background else None,
    )


@lru_cache(maxsize=16)
def procedural(zenith: tuple, horizon: tuple) -> EnvLight:
    """The gradient sky's light (cached by its two colours: constant per environment)."""
    return from_image(procedural_sky(zenith, horizon), background=False)
