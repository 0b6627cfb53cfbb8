"""Small-sample statistics shared by the reports and the layout baselines (no other imports of
ours, so both can use it without importing each other)."""

from __future__ import annotations

import numpy as np

Z95 = 1.959963984540054  # scipy.stats.norm.ppf(0.975)
MIN_TEST = 30  # below this many test images no report at all unless asked (--min-test N); docs/probing.md


def wilson_ci(p: float, n: int, z: float = Z95) -> tuple[float, float]:
    """95% Wilson score interval of an accuracy ``p`` measured on ``n`` test images.

    Unlike the normal approximation or a bootstrap of the observed accuracy, it never collapses
    to a point at p = 0 or 1 (1 image, right: [0.21, 1]) and keeps close to 95% coverage down to
    a handful of images. ``p`` may be a seed-mean (a fraction of a count): the seeds share the
    same test images, so ``n`` is the number of images, not images × seeds. No images: [0, 1].
    """
    n = int(n)
    if n <= 0:
        return 0.0, 1.0
    p = min(max(float(p), 0.0), 1.0)
    z2 = z * z
    denom = 1.0 + z2 / n
    centre = (p + z2 / (2 * n)) / denom
    half = z * np.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / denom
    return float(max(0.0, centre - half)), float(min(1.0, centre + half))
