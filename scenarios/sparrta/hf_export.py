"""``sceneforge export --format hf``: a relation dataset as a Hugging Face ``DatasetDict``.

The field loads image datasets with ``datasets``; this writes one that needs no code of ours:

* ``OUT/`` is ``DatasetDict.save_to_disk`` output (``datasets.load_from_disk(OUT)``);
* ``OUT/data/{train,validation,test}-00000-of-00001.parquet`` hold the same rows with the image
  bytes embedded (``load_dataset("parquet", data_dir=OUT/data)``, the Hub's layout);
* splits come from our ``split`` column (``val`` is Hugging Face's ``validation``), ``label`` is a
  ``ClassLabel`` (front, back, left, right: ``relations.LABELS``), ``image`` and ``mask`` are
  ``Image`` features; every other column of ``samples.parquet`` is kept as a plain value.

Every row is checked before anything is written (issue 48): ``file_name``/``mask_file`` must
resolve inside the dataset (:func:`core.paths.inside`: an absolute path or a symlink out is
refused, not embedded), the files must exist, ``split`` must be train/val/test and ``label`` one
of ``relations.LABELS`` (such rows used to be dropped or a traceback). A failed export removes its
temporary directory.

Depth maps stay out (float32 arrays of 224² per sample would triple the size; they are in the
source dataset). ``datasets`` is not a base dependency: without it this is one line.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pandas as pd

from sceneforge.core.errors import ConfigError
from sceneforge.core.paths import inside
from sceneforge.scenarios.sampling.relations import LABELS

HF_SPLITS = {"train": "train", "val": "validation", "test": "test"}
DROP = ("params_file", "mask_file", "depth_file", "scene_file", "file_name")


def _check_target(out: Path) -> None:
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise ConfigError(f"{out}: exists and is not an empty directory")


def export_hf(data_dir: Path, out: Path) -> dict[str, int]:
    """Write ``data_dir``'s samples to ``out`` as a DatasetDict (+ Parquet shards); split -> rows."""
    try:
        import datasets
    except ImportError as e:
        raise ConfigError("--format hf needs Hugging Face datasets: pip install datasets") from e
    data_dir, out = Path(data_dir), Path(out)
    table = data_dir / "samples.parquet"
    if not table.is_file():
        raise ConfigError(f"{data_dir}: no samples.parquet (a finished `sceneforge generate` output directory?)")
    _check_target(out)
    df = pd.read_parquet(table)
    _check_rows(df, data_dir, table)
    has_mask = "mask_file" in df.columns and df["mask_file"].notna().all() and (df["mask_file"] != "").all()
    columns = [c for c in df.columns if c not in DROP and c != "label"]
    features = datasets.Features(
        {
            "image": datasets.Image(),
            **({"mask": datasets.Image()} if has_mask else {}),
            "label": datasets.ClassLabel(names=list(LABELS)),
            **datasets.Features.from_arrow_schema(datasets.Dataset.from_pandas(df[columns], preserve_index=False).data.schema),
            "file_name": datasets.Value("string"),
        }
    )

    def rows(part: pd.DataFrame) -> dict[str, list]:
        cols = {c: part[c].tolist() for c in columns}
        cols["image"] = [{"bytes": (data_dir / f).read_bytes(), "path": Path(f).name} for f in part["file_name"]]
        if has_mask:
            cols["mask"] = [{"bytes": (data_dir / f).read_bytes(), "path": Path(f).name} for f in part["mask_file"]]
        cols["label"] = [LABELS.index(v) for v in part["label"]]
        cols["file_name"] = part["file_name"].tolist()
        return cols

    splits = {
        HF_SPLITS[s]: datasets.Dataset.from_dict(rows(df[df["split"] == s]), features=features)
        for s in HF_SPLITS
        if (df["split"] == s).any()
    }
    dd = datasets.DatasetDict(splits)
    tmp = out.with_name(f".{out.name}.{os.getpid()}.tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        dd.save_to_disk(str(tmp))
        (tmp / "data").mkdir()
        for name, ds in dd.items():
            ds.to_parquet(str(tmp / "data" / f"{name}-00000-of-00001.parquet"))
        if out.exists():
            out.rmdir()
        os.replace(tmp, out)
    except OSError as e:  # a full disk: one line, and no half-written temporary directory left
        raise ConfigError(f"{out}: cannot write the export ({e.strerror or type(e).__name__}); nothing written") from None
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return {name: len(ds) for name, ds in dd.items()}


def _check_rows(df: pd.DataFrame, data_dir: Path, table: Path) -> None:
    """Every row exportable, or ConfigError naming the row, field and value (nothing written)."""
    for field in ("file_name", "label", "split"):
        if field not in df.columns:
            raise ConfigError(f"{table}: no {field} column")
    masks = "mask_file" in df.columns
    for i, r in enumerate(df.to_dict("records")):
        where = f"{table} row {i + 1}"
        if r["split"] not in HF_SPLITS:
            raise ConfigError(f"{where} split {str(r['split'])[:40]!r}: expected one of {', '.join(HF_SPLITS)}")
        if r["label"] not in LABELS:
            raise ConfigError(f"{where} label {str(r['label'])[:40]!r}: expected one of {', '.join(LABELS)}")
        for field in ("file_name", "mask_file") if masks else ("file_name",):
            rel = r[field]
            if field == "mask_file" and (rel is None or rel == "" or (isinstance(rel, float) and rel != rel)):
                continue  # no mask for this row: the export has no mask column then
            path = inside(data_dir, rel, f"{where} {field}")
            if not path.is_file():
                raise ConfigError(f"{where} {field} {str(rel)[:80]!r}: no such file in {data_dir}")
