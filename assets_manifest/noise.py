"""Tileable noise textures (generated, CC0): the albedo and normal map of a surface without its
photo (:mod:`assets_manifest.looks`) and the grain, fur and facades of the procedural pack
(:mod:`assets_manifest.procedural.pbr`). Periodic, so they tile without seams; seeded, so
deterministic.
"""

from __future__ import annotations

import numpy as np


def tileable_noise(size: int, scale: float, seed: int, beta: float = 1.8) -> np.ndarray:
    """Periodic fractal noise in [0, 1] (FFT of 1/f^beta spectrum: tiles without seams)."""
    rng = np.random.default_rng(seed)
    fx = np.fft.fftfreq(size)[None, :]
    fy = np.fft.fftfreq(size)[:, None]
    f = np.sqrt(fx**2 + fy**2) * size / max(scale, 1e-3)
    amp = 1.0 / np.maximum(f, 1.0) ** beta
    amp[0, 0] = 0
    spec = amp * np.exp(2j * np.pi * rng.random((size, size)))
    n = np.real(np.fft.ifft2(spec))
    n = (n - n.min()) / max(float(np.ptp(n)), 1e-9)
    return n


def normal_from_height(h: np.ndarray, strength: float = 2.0) -> np.ndarray:
    """Tangent-space normal map (OpenGL +Y up, uint8) from a periodic height field."""
    dx = (np.roll(h, -1, axis=1) - np.roll(h, 1, axis=1)) * strength * h.shape[1] / 64
    dy = (np.roll(h, 1, axis=0) - np.roll(h, -1, axis=0)) * strength * h.shape[0] / 64
    n = np.stack([-dx, -dy, np.ones_like(h)], -1)
    n /= np.linalg.norm(n, axis=-1, keepdims=True)
    return ((n * 0.5 + 0.5) * 255).round().astype(np.uint8)
