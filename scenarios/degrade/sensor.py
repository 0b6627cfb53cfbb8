"""Photometric and digital degradations: low light (photon shot noise + read noise in linear
light, then the camera's gain and tone curve), over-exposure (clipping in linear light), JPEG,
low resolution."""

from __future__ import annotations

import cv2
import numpy as np

from sceneforge.scenarios.degrade.color import to_linear, to_srgb8


def low_light(
    img: np.ndarray, rng: np.random.Generator, light_fraction: float, full_well_e: float = 4000.0, read_noise_e: float = 3.0
) -> np.ndarray:
    """The scene lit by ``light_fraction`` of the original light, captured by a sensor whose
    white point collects ``full_well_e`` electrons at normal exposure, then brightened back by
    an auto-gain of ``1 / light_fraction`` (an ISO boost) and the sRGB tone curve.

    Electrons ``~ Poisson(L · light_fraction · full_well)`` plus Gaussian read noise σ =
    ``read_noise_e``: SNR falls as √light, so dark regions and dim scenes get noisier, as in a
    real sensor (not additive Gaussian noise in display space)."""
    lin = to_linear(img).astype(np.float64)
    electrons = rng.poisson(lin * light_fraction * full_well_e).astype(np.float64)
    electrons += rng.normal(0.0, read_noise_e, size=lin.shape)
    return to_srgb8(electrons / (light_fraction * full_well_e))


def over_exposure(img: np.ndarray, ev: float) -> np.ndarray:
    """``+ev`` stops of exposure: linear radiance × 2^ev, clipped at the sensor's white (1.0)."""
    return to_srgb8(to_linear(img) * (2.0**ev))


def jpeg(img: np.ndarray, quality: int) -> np.ndarray:
    """Encode/decode with libjpeg (OpenCV) at ``quality`` (4:2:0 chroma, OpenCV's default)."""
    ok, buf = cv2.imencode(".jpg", np.ascontiguousarray(img[..., ::-1]), [cv2.IMWRITE_JPEG_QUALITY, int(quality)])
    if not ok:
        raise RuntimeError("JPEG encoding failed")
    return cv2.imdecode(buf, cv2.IMREAD_COLOR)[..., ::-1].copy()


def low_resolution(img: np.ndarray, factor: float) -> np.ndarray:
    """Area-downsample by ``factor`` (a sensor with bigger pixels), then bicubic upsample to the
    original size, so pixel coordinates (boxes, masks) keep their meaning."""
    h, w = img.shape[:2]
    small = cv2.resize(img, (max(1, round(w / factor)), max(1, round(h / factor))), interpolation=cv2.INTER_AREA)
    return cv2.resize(small, (w, h), interpolation=cv2.INTER_CUBIC)
