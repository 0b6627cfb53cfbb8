"""``sceneforge export --format hf``: a relation dataset as a Hugging Face ``DatasetDict``.

The field loads image datasets with ``datasets``; this writes one that needs no code of ours:

* ``OUT/`` is ``DatasetDict.save_to_disk`` output (``datasets.load_from_disk(OUT)``);
* ``OUT/data/{train,validation,test}-00000-of-00001.parquet`` hold the same rows with the image
  bytes embedded (``load_dataset("parquet", data_dir=OUT/data)``, the Hub's layout);
* splits come from our ``split`` column (``val`` is Hugging Face's ``validation``), ``label`` is a
  ``ClassLabel`` (front, back, left, right: ``relations.LABELS``), ``image`` and ``mask`` are
  ``Image`` features; every other column of ``samples.parquet`` is kept as a plain value.

Depth maps stay out (float32 arrays of 224² per sample would triple the size; they are in the
source dataset). ``datasets`` is not a base dependency: without it this is one line.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pandas as pd

from sceneforge.core.errors import ConfigError
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
    dd.save_to_disk(str(tmp))
    (tmp / "data").mkdir()
    for name, ds in dd.items():
        ds.to_parquet(str(tmp / "data" / f"{name}-00000-of-00001.parquet"))
    if out.exists():
        out.rmdir()
    os.replace(tmp, out)
    return {name: len(ds) for name, ds in dd.items()}
