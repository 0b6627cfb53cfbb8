"""Where datasets are under ``--data``: the table names and the recursive search.

Apart from :mod:`probing.data` (which reads the tables with pandas) so that a probe's arguments
are checked before pandas or torch is imported (:mod:`probing.validate`, issue 47).
"""

from __future__ import annotations

from pathlib import Path

from sceneforge.core.errors import ConfigError

TABLE_NAMES = ("samples.parquet", "metadata.parquet", "metadata.csv")  # preference order


def find_datasets(root: str | Path) -> list[Path]:
    """Directories at or below ``root`` that contain a metadata table (sorted, deterministic)."""
    root = Path(root)
    if not root.exists():
        raise ConfigError(f"--data {root}: no such file or directory")
    if root.is_file():
        root = root.parent
    found = {p.parent for name in TABLE_NAMES for p in root.rglob(name)}
    if not found:
        raise ConfigError(f"--data {root}: no {', '.join(TABLE_NAMES)} found (recursively)")
    return sorted(found)
