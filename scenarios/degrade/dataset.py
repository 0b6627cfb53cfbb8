"""Degraded variants of a finished dataset, written beside its clean images.

For every row of ``samples.parquet`` (or ``metadata.csv``) and every (type, level)::

    <dir>/img_NNNN.<type>_<level>.png     the variant (PNG: the degradation's exact pixels;
                                          re-encoding as JPEG would add a second degradation)
    <dir>/mask_NNNN.distortion_<level>.png  the warped instance mask (distortion only)

and one table for all variants, ``degraded.parquet`` + ``degraded.csv`` at the dataset root: the
clean row (labels unchanged) with ``file_name`` pointing at the variant, plus ``degradation``,
``level``, ``clean_file_name`` and ``degradation_params`` (JSON). For distortion the 2-D box
columns (``*_bbox_x0..y1``) are recomputed from the warped mask when the dataset has masks, else
mapped through the lens model. The table is *not* named ``samples.parquet`` so that probing a
dataset root does not silently mix clean and degraded images.

Deterministic (random draws keyed by (seed, type, level, clean file name)) and restartable: every
file is written atomically and a variant file that exists is not written again (the variant is
still recomputed, cheaply, to fill its table row).

Every path a row names (``file_name``, ``depth_file``, ``mask_file``, ``params_file``) and every
variant written from it must lie inside the dataset root (:func:`core.paths.inside`): a table is
data anyone can edit, and ``file_name=../../x/victim.jpg`` used to write PNGs next to the victim.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from sceneforge.core.config_names import IMAGE_SIZE
from sceneforge.core.errors import ConfigError
from sceneforge.core.paths import inside
from sceneforge.scenarios.degrade import NEEDS_DEPTH, check, check_depth, degrade
from sceneforge.scenarios.output.writers import atomic_write_bytes, encode_image

TABLES = ("samples.parquet", "metadata.csv")
MAX_SIDE = IMAGE_SIZE[1]  # the largest image any scenario makes (core/config_names.py)
MAX_PIXELS = MAX_SIDE * MAX_SIDE
BOX_KEYS = ("x0", "y0", "x1", "y1")


def table_path(root: Path) -> Path:
    """The dataset's table: ``samples.parquet``, else ``metadata.csv``."""
    for name in TABLES:
        p = Path(root) / name
        if p.is_file():
            return p
    raise ConfigError(f"{root}: no samples.parquet or metadata.csv (is this a finished sceneforge dataset?)")


def read_table(root: Path):
    import pandas as pd

    p = table_path(root)
    try:
        return pd.read_parquet(p) if p.suffix == ".parquet" else pd.read_csv(p)
    except Exception as e:
        raise ConfigError(f"{p}: cannot read the dataset table ({type(e).__name__}: {e})") from None


PATH_FIELDS = ("file_name", "depth_file", "mask_file", "params_file")


def check_rows(root: Path, table, source: Path) -> None:
    """Every path the table names stays inside ``root`` and every field of view and box is a
    number, checked before anything is written, so a bad row 500 does not leave 499 rows of
    variants behind (missing optional paths are NaN)."""
    fields = [f for f in PATH_FIELDS if f in table.columns]
    for i, (_, row) in enumerate(table.iterrows()):
        where = f"{source} row {i + 1}"
        for field in fields:
            if field != "file_name" and not isinstance(row[field], str):
                continue  # an optional file this row does not have
            inside(root, row[field], f"{where} {field}")
        _row_fov(row, where)
        for name in _mask_names(row):
            _row_box(row, name, where)


def row_path(root: Path, row, field: str, where: str, name: str | None = None) -> Path:
    """``root / row[field]`` (or ``root / name``, a file derived from it) after checking it stays
    inside the dataset; errors name the table, row and field (``where`` = "TABLE row N")."""
    return inside(root, row[field] if name is None else name, f"{where} {field}")


def variant_name(file_name: str, kind: str, level: int) -> str:
    p = Path(file_name)
    return str(p.with_name(f"{p.stem}.{kind}_{level}.png").as_posix())


def _load_image(path: Path) -> np.ndarray:
    """The image as uint8 RGB; its size is read from the header and checked before decoding
    (a 14000² PNG was a DecompressionBombError traceback, or gigabytes of float buffers)."""
    import warnings

    from PIL import Image

    too_big = f"degrade handles at most {MAX_PIXELS} pixels ({MAX_SIDE}x{MAX_SIDE}, the largest image sceneforge renders)"
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)  # our own cap says it in one line
            with Image.open(path) as im:
                if im.width * im.height > MAX_PIXELS:
                    raise ConfigError(f"{path}: {im.width}x{im.height}; {too_big}")
                return np.asarray(im.convert("RGB"))
    except Image.DecompressionBombError:
        raise ConfigError(f"{path}: larger than PIL's decompression-bomb limit; {too_big}") from None
    except OSError as e:
        raise ConfigError(f"{path}: cannot read image ({e})") from None


def _load_depth(path: Path) -> np.ndarray:
    """A 2-D ray-depth map in cm: numbers, no NaN, none negative (``+inf`` is the sky). Why: a
    string array was a traceback, and NaN or negative depths gave silently wrong haze and blur."""
    try:
        depth = np.load(path, allow_pickle=False)
    except (OSError, ValueError) as e:
        raise ConfigError(f"{path}: cannot read depth ({e})") from None
    if depth.ndim != 2 or not (np.issubdtype(depth.dtype, np.floating) or np.issubdtype(depth.dtype, np.integer)):
        raise ConfigError(f"{path}: depth must be a 2-D array of numbers (cm), got {depth.dtype} {depth.shape}")
    if depth.size > MAX_PIXELS:
        raise ConfigError(f"{path}: depth {depth.shape} has more than {MAX_PIXELS} pixels")
    try:
        check_depth(depth)
    except ConfigError as e:
        raise ConfigError(f"{path}: {e}") from None
    return depth


def _row_fov(row, where: str) -> float:
    """``camera_hfov_deg`` of the row (53.13°, SpaRRTa's lens, when the table has none)."""
    value = row.get("camera_hfov_deg", 53.13)
    try:
        fov = float(value)
    except (TypeError, ValueError):
        fov = float("nan")
    if not 0 < fov < 180:
        raise ConfigError(f"{where} camera_hfov_deg {value!r}: expected a horizontal field of view in (0, 180) degrees")
    return fov


def _row_box(row, name: str, where: str) -> list[float] | None:
    """The row's inclusive pixel box of ``name``, or None when the object has none (NaN)."""
    box = []
    for k in BOX_KEYS:
        value = row[f"{name}_bbox_{k}"]
        if value is None or (isinstance(value, float) and np.isnan(value)):
            return None
        try:
            v = float(value)
        except (TypeError, ValueError):
            v = float("nan")
        if not np.isfinite(v):
            raise ConfigError(f"{where} {name}_bbox_{k} {value!r}: expected a pixel coordinate (a number)")
        box.append(v)
    return box


def _mask_names(row) -> list[str]:
    return sorted({c[: -len("_bbox_x0")] for c in row.index if c.endswith("_bbox_x0")})


def degrade_dataset(root: Path, types: list[str], levels: list[int], seed: int = 0, progress=None) -> dict:
    """Write every variant and the ``degraded`` table; returns counts."""

    root = Path(root)
    for k in types:
        for lv in levels:
            check(k, lv)
    table = read_table(root)
    if "file_name" not in table.columns:
        raise ConfigError(f"{root}: the table has no file_name column")
    needs_depth = [k for k in types if k in NEEDS_DEPTH]
    if needs_depth and "depth_file" not in table.columns:
        raise ConfigError(
            f"{root}: {', '.join(needs_depth)} need depth maps; make the dataset with --depth (no depth_file column)"
        )
    source = table_path(root)
    check_rows(root, table, source)
    rows, written, kept = [], 0, 0
    for i, (_, row) in enumerate(table.iterrows()):
        where = f"{source} row {i + 1}"
        clean_path = row_path(root, row, "file_name", where)
        clean = str(row["file_name"])
        img = depth = mask = None
        for kind in types:
            for lv in levels:
                name = variant_name(clean, kind, lv)
                out = row_path(root, row, "file_name", where, name)
                mask_name = mask_out = None
                if kind == "distortion" and "mask_file" in row.index and isinstance(row["mask_file"], str):
                    row_path(root, row, "mask_file", where)  # the clean mask first: its value in the error
                    mask_name = variant_name(str(row["mask_file"]), kind, lv)
                    mask_out = row_path(root, row, "mask_file", where, mask_name)
                done = out.is_file() and (mask_out is None or mask_out.is_file())
                if img is None:
                    img = _load_image(clean_path)
                if kind in NEEDS_DEPTH and depth is None:
                    depth = _load_depth(row_path(root, row, "depth_file", where))
                if mask_name and mask is None:
                    mask = _load_image(row_path(root, row, "mask_file", where))
                fov = _row_fov(row, where)
                res = degrade(kind, lv, img, depth=depth, mask=mask if mask_name else None, fov_deg=fov, seed=seed, key=clean)
                if done:
                    kept += 1
                else:
                    atomic_write_bytes(out, encode_image(res.image, "png"))
                    if mask_out is not None:
                        atomic_write_bytes(mask_out, encode_image(res.mask, "png"))
                    written += 1
                params = res.params
                new = row.to_dict()
                new.update(
                    {
                        "file_name": name,
                        "clean_file_name": clean,
                        "degradation": kind,
                        "level": int(lv),
                        "degradation_params": json.dumps(params, sort_keys=True),
                    }
                )
                if kind == "distortion":
                    new.update(_warped_boxes(row, res, mask, mask_name, root, params, where))
                    if mask_name:
                        new["mask_file"] = mask_name
                rows.append(new)
                if progress is not None:
                    progress(1)
    _write(rows, root)
    return {"variants": len(rows), "written": written, "kept": kept, "table": str(root / "degraded.parquet")}


def _warped_boxes(row, res, mask, mask_name, root: Path, params, where: str) -> dict:
    """Box columns of the labelled objects after distortion: from the warped mask (exact) when
    the dataset has masks and mask colours, else through the lens model. Boxes are inclusive pixel
    boxes ``[x0, y0, x1, y1]``, as the server's visibility boxes in the clean rows."""
    colors = {}
    if mask_name and "params_file" in row.index and isinstance(row["params_file"], str):
        try:
            colors = json.loads(row_path(root, row, "params_file", where).read_text()).get("mask_colors", {})
        except (OSError, ValueError):
            colors = {}
    out = {}
    for name in _mask_names(row):
        box = _row_box(row, name, where)
        if box is None:
            continue
        if name in colors and res.mask is not None:
            sel = (res.mask[..., :3] == np.asarray(colors[name], dtype=np.uint8)).all(-1)
            ys, xs = np.nonzero(sel)
            new = [int(xs.min()), int(ys.min()), int(xs.max()), int(ys.max())] if len(xs) else None
        else:  # inclusive pixel box -> continuous box -> lens -> pixels whose centres fall inside
            cont = res.box([box[0], box[1], box[2] + 1, box[3] + 1])
            new = (
                None
                if cont is None
                else [
                    int(np.floor(cont[0] + 0.5)),
                    int(np.floor(cont[1] + 0.5)),
                    int(np.ceil(cont[2] - 0.5)) - 1,
                    int(np.ceil(cont[3] - 0.5)) - 1,
                ]
            )
        out.update({f"{name}_bbox_{k}": (v if new else None) for k, v in zip(BOX_KEYS, new or [None] * 4)})
    return out


def _write(rows: list[dict], root: Path) -> None:
    import io

    import pandas as pd

    df = pd.DataFrame(rows)
    buf = io.BytesIO()
    df.to_parquet(buf, index=False, engine="pyarrow")
    atomic_write_bytes(root / "degraded.parquet", buf.getvalue())
    atomic_write_bytes(root / "degraded.csv", df.to_csv(index=False, lineterminator="\n", float_format="%.6f").encode("utf-8"))
