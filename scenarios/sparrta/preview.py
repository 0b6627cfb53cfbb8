"""Contact sheet of a SpaRRTa dataset: images in a grid with their labels and object boxes drawn,
so a person can eyeball whether "left" really looks left (green = source, red = target,
blue = the human viewpoint figure)."""

from __future__ import annotations

import io
import math
from pathlib import Path

from sceneforge.core.errors import ConfigError
from sceneforge.core.paths import inside
from sceneforge.scenarios.output.writers import atomic_write_bytes

COLORS = {"source": (40, 220, 60), "target": (235, 50, 40), "human": (40, 120, 255)}
BANNER = 30  # pixels of text above each tile


def load_table(data_dir: Path):
    import pandas as pd

    data_dir = Path(data_dir)
    for name, reader in (("samples.parquet", pd.read_parquet), ("metadata.csv", pd.read_csv)):
        if (data_dir / name).is_file():
            return reader(data_dir / name)
    raise ConfigError(f"{data_dir}: no samples.parquet or metadata.csv (not a finished `sceneforge generate` output)")


def pick_rows(df, n: int, split: str | None = None):
    """``n`` rows covering every (env, task, label) group round-robin, shown in index order."""
    if split:
        df = df[df["split"] == split]
    if n < 1:
        raise ConfigError(f"--n must be >= 1, got {n}")
    if len(df) == 0:
        raise ConfigError("no samples to show" + (f" in split {split!r}" if split else ""))
    df = df.sort_values("index")
    rank = df.groupby(["env", "task", "label"]).cumcount()
    chosen = df.assign(_rank=rank).sort_values(["_rank", "index"]).head(n)
    return chosen.sort_values("index").drop(columns="_rank")


def tile(data_dir: Path, row, size: int):
    """One annotated tile: the image scaled to ``size`` plus a banner with task, label, classes."""
    from PIL import Image, ImageDraw

    path = inside(Path(data_dir), row["file_name"], f"{data_dir}: table row {row.name + 1} file_name")
    if not path.is_file():
        raise ConfigError(f"{path}: image listed in the table is missing")
    img = Image.open(path).convert("RGB")
    scale = size / img.width
    img = img.resize((size, round(img.height * scale)), Image.BILINEAR)
    out = Image.new("RGB", (size, img.height + BANNER), (20, 20, 20))
    out.paste(img, (0, BANNER))
    draw = ImageDraw.Draw(out)
    for name, color in COLORS.items():
        box = [row.get(f"{name}_bbox_{k}") for k in ("x0", "y0", "x1", "y1")]
        if all(b is not None and not (isinstance(b, float) and math.isnan(b)) for b in box):
            x0, y0, x1, y1 = (float(b) * scale for b in box)
            draw.rectangle([x0, y0 + BANNER, x1 + scale, y1 + scale + BANNER], outline=color, width=2)
    draw.text((4, 2), f"{row['task']}: {str(row['label']).upper()}  [{row['split']}]", fill=(255, 255, 255))
    draw.text((4, 15), f"{row['target_class']} rel. {row['source_class']} #{row['index']}", fill=(200, 200, 200))
    return out


def contact_sheet(data_dir: Path, out_png: Path, n: int = 16, size: int = 224, split: str | None = None) -> Path:
    """Write a PNG grid of ``n`` samples; returns its path."""
    from PIL import Image

    rows = pick_rows(load_table(data_dir), n, split)
    tiles = [tile(data_dir, r, size) for _, r in rows.iterrows()]
    cols = math.ceil(math.sqrt(len(tiles)))
    th = max(t.height for t in tiles)
    sheet = Image.new("RGB", (cols * size, math.ceil(len(tiles) / cols) * th), (0, 0, 0))
    for k, t in enumerate(tiles):
        sheet.paste(t, ((k % cols) * size, (k // cols) * th))
    buf = io.BytesIO()
    sheet.save(buf, format="PNG")
    return atomic_write_bytes(Path(out_png), buf.getvalue())
