"""Reading image datasets from disk: the only thing probing knows about the rest of sceneforge.

A dataset is a directory holding a table -- ``samples.parquet`` (what ``sceneforge generate``
writes), ``metadata.parquet`` or ``metadata.csv``, first found wins -- with at least the columns
in :data:`REQUIRED_COLUMNS` and ``triple`` or ``triple_id``; ``file_name`` is relative to that
directory (docs/datasets.md) and must stay inside it (:func:`core.paths.inside`: a table is data,
not permission to read ``/etc`` or a sibling's files). ``--data`` may
also point at a parent directory: every dataset below it is found (recursively) and concatenated,
so one feature extraction covers all environments and tasks.

Example::

    table = load_datasets("data/")          # pandas DataFrame, one row per image
    table[["path", "label", "split", "env", "task"]]
"""

from __future__ import annotations

import hashlib
import logging
from pathlib import Path

import pandas as pd

from sceneforge.core.errors import ConfigError
from sceneforge.probing.tables import TABLE_NAMES, find_datasets  # noqa: F401  (re-exported: probing.data's names)
from sceneforge.core.paths import inside

log = logging.getLogger(__name__)

CLASSES = ("front", "back", "left", "right")
SPLITS = ("train", "val", "test")
REQUIRED_COLUMNS = ("file_name", "label", "split", "env", "task")


def read_metadata(dataset_dir: Path) -> pd.DataFrame:
    """One dataset's table, validated, with an absolute ``path`` column added."""
    source = next(dataset_dir / n for n in TABLE_NAMES if (dataset_dir / n).is_file())
    try:
        table = pd.read_parquet(source) if source.suffix == ".parquet" else pd.read_csv(source)
    except Exception as e:  # corrupt file: name it, one line
        raise ConfigError(f"{source}: cannot read metadata table ({type(e).__name__}: {e})") from e
    _validate(table, source)
    table = table.rename(columns={"triple_id": "triple"}) if "triple" not in table else table.copy()
    table["label"] = table["label"].astype(str).str.strip().str.lower()
    table["split"] = table["split"].astype(str).str.strip().str.lower()
    for col in ("env", "task", "triple"):
        table[col] = table[col].astype(str)
    table["path"] = [
        str(inside(dataset_dir, f, f"{source} row {i + 1} file_name").resolve()) for i, f in enumerate(table["file_name"])
    ]
    table["dataset"] = str(dataset_dir)
    return table


def _validate(table: pd.DataFrame, source: Path) -> None:
    missing = [c for c in REQUIRED_COLUMNS if c not in table.columns]
    if "triple" not in table.columns and "triple_id" not in table.columns:
        missing.append("triple (or triple_id)")
    if missing:
        raise ConfigError(f"{source}: missing column(s) {', '.join(missing)} (need {', '.join(REQUIRED_COLUMNS)}, triple)")
    if table.empty:
        raise ConfigError(f"{source}: metadata table has no rows")
    labels = set(table["label"].astype(str).str.strip().str.lower())
    if bad := sorted(labels - set(CLASSES)):
        raise ConfigError(f"{source}: column 'label' has unknown value(s) {bad}; expected {list(CLASSES)}")
    splits = set(table["split"].astype(str).str.strip().str.lower())
    if bad := sorted(splits - set(SPLITS)):
        raise ConfigError(f"{source}: column 'split' has unknown value(s) {bad}; expected {list(SPLITS)}")


def read_tables(root: str | Path) -> pd.DataFrame:
    """All datasets' tables under ``root`` as one table, row order as :func:`load_datasets` (the
    layout baselines of ``probe-report`` need the rows, not the images)."""
    return pd.concat([read_metadata(d) for d in find_datasets(root)], ignore_index=True)


def load_datasets(root: str | Path) -> pd.DataFrame:
    """All datasets under ``root`` as one table, checked for missing image files."""
    table = read_tables(root)
    missing = [p for p in table["path"] if not Path(p).is_file()]
    if missing:
        raise ConfigError(f"--data {root}: {len(missing)} image file(s) listed in metadata are missing, e.g. {missing[0]}")
    log.info("loaded %d images from %d dataset(s) under %s", len(table), table["dataset"].nunique(), root)
    return table


def content_hash(paths: list[str]) -> str:
    """SHA-256 over the image bytes in order: features depend on pixels and order, not labels.

    Relabelling or re-splitting a dataset therefore reuses its cached features, while any changed
    pixel (or a reordering) gives a new key.
    """
    h = hashlib.sha256()
    for p in paths:
        data = Path(p).read_bytes()
        h.update(len(data).to_bytes(8, "little"))
        h.update(hashlib.sha256(data).digest())
    return h.hexdigest()


def label_ids(labels) -> "list[int]":
    """Class indices in :data:`CLASSES` order (the order of every confusion matrix)."""
    return [CLASSES.index(str(lab)) for lab in labels]
