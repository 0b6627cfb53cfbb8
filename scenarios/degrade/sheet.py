"""Contact sheet of the nine degradations at a few levels (docs/img/degradations.png).

python -m sceneforge.scenarios.degrade.sheet DATASET_DIR SAMPLE_FILE_NAME OUT.png [--levels 1 3 5]
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from sceneforge.scenarios.degrade import TYPES, degrade


def contact_sheet(
    img: np.ndarray, depth: np.ndarray, fov_deg: float, levels=(1, 3, 5), seed: int = 0, tile: int = 192
) -> np.ndarray:
    """Rows: clean + the nine types; columns: the levels (clean repeated in the first row)."""
    from PIL import Image, ImageDraw

    label_w, head = 120, 18
    rows = [("clean", [img] * len(levels))]
    rows += [
        (k, [degrade(k, lv, img, depth=depth, fov_deg=fov_deg, seed=seed, key="sheet").image for lv in levels]) for k in TYPES
    ]
    sheet = Image.new("RGB", (label_w + tile * len(levels), head + tile * len(rows)), "white")
    draw = ImageDraw.Draw(sheet)
    for c, lv in enumerate(levels):
        draw.text((label_w + c * tile + tile // 2 - 20, 3), f"level {lv}", fill="black")
    for r, (name, tiles) in enumerate(rows):
        draw.text((6, head + r * tile + tile // 2 - 6), name, fill="black")
        for c, t in enumerate(tiles):
            sheet.paste(Image.fromarray(t).resize((tile, tile), Image.BILINEAR), (label_w + c * tile, head + r * tile))
    return np.asarray(sheet)


def main(argv=None) -> int:
    import pandas as pd
    from PIL import Image

    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("dataset", type=Path)
    p.add_argument("file_name")
    p.add_argument("out", type=Path)
    p.add_argument("--levels", nargs="+", type=int, default=[1, 3, 5])
    a = p.parse_args(argv)
    t = pd.read_parquet(a.dataset / "samples.parquet")
    row = t[t["file_name"] == a.file_name].iloc[0]
    img = np.asarray(Image.open(a.dataset / a.file_name).convert("RGB"))
    depth = np.load(a.dataset / row["depth_file"])
    Image.fromarray(contact_sheet(img, depth, float(row["camera_hfov_deg"]), tuple(a.levels))).save(a.out)
    print(a.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
