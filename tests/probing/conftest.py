"""Fixtures for probing tests: images made here, tiny random models built here; never a download."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from PIL import Image

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # tests must never reach a model hub

QUADRANT_LABELS = ("front", "back", "left", "right")  # top-left, top-right, bottom-left, bottom-right

# A tiny ViT: 32x32 input, 8x8 patches → a 4x4 grid, 3 blocks, width 32.
TINY_VIT = {"img_size": 32, "patch_size": 8, "depth": 3, "embed_dim": 32, "num_heads": 2}


def make_image_dataset(
    root: Path, envs=("desert", "forest"), tasks=("ego",), n=(24, 8, 8), size: int = 32, seed: int = 0
) -> Path:
    """Noise images with one bright square; the label is the quadrant that holds it. The table's
    source box is the square's (it gives the label away), the target box is drawn at random."""
    rng = np.random.default_rng(seed)
    rows = []
    for env in envs:
        for task in tasks:
            d = root / f"{env}_{task}"
            (d / "images").mkdir(parents=True, exist_ok=True)
            for split, count in zip(("train", "val", "test"), n):
                for i in range(count):
                    q = int(rng.integers(4))
                    img = rng.integers(0, 90, (size, size, 3), dtype=np.uint8)
                    h = size // 2
                    y0, x0 = (q // 2) * h + 2, (q % 2) * h + 2
                    img[y0 : y0 + h - 4, x0 : x0 + h - 4] = 255
                    name = f"images/{split}_{i:04d}.png"
                    Image.fromarray(img).save(d / name)
                    tx, ty = (int(v) for v in rng.integers(0, size - 4, 2))
                    boxes = {**_box("source", x0, y0, h - 4), **_box("target", tx, ty, 4)}
                    rows.append(
                        (
                            d,
                            dict(
                                file_name=name,
                                label=QUADRANT_LABELS[q],
                                split=split,
                                env=env,
                                task=task,
                                triple=f"{env}_t0",
                                **boxes,
                            ),
                        )
                    )
    for d in {r[0] for r in rows}:
        table = pd.DataFrame([r for dd, r in rows if dd == d])
        table.to_parquet(d / "metadata.parquet", index=False)
        table.to_csv(d / "metadata.csv", index=False)
    return root


def _box(obj: str, x0: int, y0: int, side: int) -> dict:
    """``samples.parquet``-style inclusive pixel box columns of one object."""
    return {f"{obj}_bbox_x0": x0, f"{obj}_bbox_y0": y0, f"{obj}_bbox_x1": x0 + side - 1, f"{obj}_bbox_y1": y0 + side - 1}


@pytest.fixture
def image_data(tmp_path) -> Path:
    return make_image_dataset(tmp_path / "data")


@pytest.fixture(autouse=True)
def _restore_torch_threads():
    """`--threads 1` in CLI tests sets a process-wide torch setting; give it back afterwards."""
    import torch

    n = torch.get_num_threads()
    yield
    torch.set_num_threads(n)
