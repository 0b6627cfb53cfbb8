"""Image preprocessing described by data, taken from each backbone's own config.

Why a dataclass instead of a timm/HF transform object: the exact preprocessing is part of the
feature-cache key (a different mean/std/size gives different features), so it must be a plain,
hashable record; and timm and HF describe the same steps differently (timm: input size + crop_pct,
HF: ``size`` {shortest_edge | height/width} + ``crop_size``). Both map onto resize → centre crop →
scale to [0, 1] → normalise.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass

import numpy as np

from sceneforge.core.errors import ConfigError
from PIL import Image

_RESAMPLE = {
    "nearest": Image.NEAREST,
    "bilinear": Image.BILINEAR,
    "bicubic": Image.BICUBIC,
    "lanczos": Image.LANCZOS,
    "box": Image.BOX,
    "hamming": Image.HAMMING,
}
# PIL resample enum values as stored in HF preprocessor_config.json ("resample": 3).
PIL_CODES = {0: "nearest", 1: "lanczos", 2: "bilinear", 3: "bicubic", 4: "box", 5: "hamming"}


@dataclass(frozen=True)
class Preprocess:
    """Resize (shorter side to ``resize_shorter`` or exactly to ``resize_hw``), then centre-crop.

    ``crop_hw`` (or ``resize_hw`` when there is no crop) is the model input size, (H, W) pixels.
    """

    mean: tuple[float, ...]
    std: tuple[float, ...]
    interpolation: str
    resize_shorter: int | None = None
    resize_hw: tuple[int, int] | None = None
    crop_hw: tuple[int, int] | None = None

    def __post_init__(self) -> None:
        if self.interpolation not in _RESAMPLE:
            raise ValueError(f"unknown interpolation {self.interpolation!r}")
        if self.crop_hw is None and self.resize_hw is None:
            raise ValueError("Preprocess needs crop_hw or resize_hw")

    @property
    def input_hw(self) -> tuple[int, int]:
        return tuple(self.crop_hw or self.resize_hw)  # type: ignore[arg-type]

    def key(self) -> str:
        """Stable text form, part of the feature-cache key."""
        return json.dumps(asdict(self), sort_keys=True)

    @classmethod
    def from_timm(cls, cfg: dict) -> "Preprocess":
        """From ``timm.data.resolve_data_config`` output (timm's eval transform, crop_mode centre)."""
        h, w = cfg["input_size"][1:]
        crop_pct = float(cfg.get("crop_pct") or 1.0)
        shorter = math.floor(max(h, w) / crop_pct)
        return cls(
            mean=tuple(map(float, cfg["mean"])),
            std=tuple(map(float, cfg["std"])),
            interpolation=str(cfg.get("interpolation") or "bilinear"),
            resize_shorter=shorter,
            crop_hw=(int(h), int(w)),
        )

    def __call__(self, image: Image.Image) -> np.ndarray:
        """One PIL image → float32 (3, H, W) normalised array."""
        image = image.convert("RGB")
        resample = _RESAMPLE[self.interpolation]
        if self.resize_hw is not None:
            image = image.resize((self.resize_hw[1], self.resize_hw[0]), resample)
        elif self.resize_shorter is not None:
            image = resize_shorter_edge(image, self.resize_shorter, resample)
        if self.crop_hw is not None:
            image = center_crop(image, self.crop_hw)
        arr = np.asarray(image, dtype=np.float32) / 255.0
        arr = (arr - np.asarray(self.mean, np.float32)) / np.asarray(self.std, np.float32)
        return np.ascontiguousarray(arr.transpose(2, 0, 1))


def resize_shorter_edge(image: Image.Image, size: int, resample: int) -> Image.Image:
    w, h = image.size
    if min(w, h) == size:
        return image
    if w <= h:
        return image.resize((size, int(round(size * h / w))), resample)
    return image.resize((int(round(size * w / h)), size), resample)


def center_crop(image: Image.Image, crop_hw: tuple[int, int]) -> Image.Image:
    """Centre crop; pads with black when the image is smaller (as torchvision does)."""
    ch, cw = crop_hw
    w, h = image.size
    if w < cw or h < ch:
        canvas = Image.new("RGB", (max(w, cw), max(h, ch)))
        canvas.paste(image, ((max(w, cw) - w) // 2, (max(h, ch) - h) // 2))
        image, (w, h) = canvas, canvas.size
    left, top = int(round((w - cw) / 2.0)), int(round((h - ch) / 2.0))
    return image.crop((left, top, left + cw, top + ch))


def load_batch(paths: list[str], pre: Preprocess) -> np.ndarray:
    """Read and preprocess images into one float32 (B, 3, H, W) array."""
    out = []
    for p in paths:
        try:
            with Image.open(p) as im:
                out.append(pre(im))
        except (OSError, SyntaxError, ValueError) as e:  # truncated/corrupt/missing: name the file
            raise ConfigError(f"{p}: cannot read image ({' '.join(str(e).split())[:160]})") from None
    return np.stack(out)
