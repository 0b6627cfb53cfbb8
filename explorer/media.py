"""Thumbnails and colour-mapped depth, made once per sample and kept beside the page.

The grid shows only thumbnails (``THUMB_PX`` square JPEGs, a few kB each), so a page of 48 loads
~0.2 MB whatever the dataset's size; a rebuild skips every file that is already newer than its
source. Depth maps (float32 cm, ``inf`` = sky) become PNGs because a browser cannot read ``.npy``.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

import numpy as np
from PIL import Image

THUMB_PX = 112


def _fresh(out: Path, src: Path) -> bool:
    """Already made from this source (kept on a rebuild)."""
    return out.is_file() and out.stat().st_mtime >= src.stat().st_mtime


#: errno values that mean the output side failed (full disk, quota, read-only), not a bad source.
DISK_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EROFS})


def _save(img: Image.Image, out: Path, **kw) -> None:
    tmp = out.with_name(f".{out.name}.{os.getpid()}.tmp")
    try:
        img.save(tmp, format=kw.pop("format"), **kw)
        os.replace(tmp, out)
    except BaseException:
        tmp.unlink(missing_ok=True)  # a full disk leaves no temp file behind
        raise


def thumbnail(src: Path, out: Path) -> bool:
    """``src`` image → ``THUMB_PX``-wide JPEG at ``out``; False where it was fresh already."""
    if _fresh(out, src):
        return False
    with Image.open(src) as im:
        im = im.convert("RGB")
        im.thumbnail((THUMB_PX, THUMB_PX), Image.Resampling.BILINEAR)
        _save(im, out, format="JPEG", quality=80)
    return True


def video_thumbnail(src: Path, out: Path) -> bool:
    """First frame of an mp4 → thumbnail (PyAV, a base dependency)."""
    if _fresh(out, src):
        return False
    import av

    with av.open(str(src)) as container:
        frame = next(container.decode(video=0)).to_image()
    frame.thumbnail((THUMB_PX, THUMB_PX), Image.Resampling.BILINEAR)
    _save(frame, out, format="JPEG", quality=80)
    return True


def turbo(x: np.ndarray) -> np.ndarray:
    """(…) values in [0, 1] → (…, 3) uint8 with matplotlib's ``turbo`` map (near = blue)."""
    from matplotlib import colormaps

    return (colormaps["turbo"](np.clip(x, 0, 1))[..., :3] * 255).astype(np.uint8)


def depth_png(src: Path, out: Path) -> bool:
    """Ray depth (cm) → PNG on a log scale between the 1st and 99th percentile; sky black."""
    if _fresh(out, src):
        return False
    depth = np.load(src).astype(np.float64)
    finite = np.isfinite(depth) & (depth > 0)
    rgb = np.zeros(depth.shape + (3,), np.uint8)
    if finite.any():
        logd = np.log(depth[finite])
        lo, hi = np.percentile(logd, [1, 99])
        rgb[finite] = turbo((logd - lo) / max(hi - lo, 1e-6))
    _save(Image.fromarray(rgb), out, format="PNG")
    return True
