"""A static, offline dataset explorer (``sceneforge browse``): grid, filters, overlays, top-down maps.

    from sceneforge.explorer import build_explorer
    page = build_explorer(Path("data/desert_ego"))      # data/desert_ego/explorer/index.html

It reads finished datasets from disk only (it imports ``core``, nothing that renders), and writes
plain files a browser opens without a server; see docs/explorer.md.
"""

from __future__ import annotations

from pathlib import Path

from sceneforge.explorer.readers import read_dataset
from sceneforge.explorer.site import write_site

DEFAULT_DIR = "explorer"


def build_explorer(data_dir: Path, out_dir: Path | None = None, predictions: Path | None = None, run: str | None = None) -> Path:
    """Read ``data_dir`` and write its explorer (default ``data_dir/explorer``); returns index.html.
    ``predictions``: a CSV ``file_name,prediction`` or a ``sceneforge probe`` output directory
    (``run`` = ``HEAD:LAYER:PROTOCOL`` when it holds several probes)."""
    data_dir = Path(data_dir)
    table = read_dataset(data_dir, predictions=predictions, run=run)
    return write_site(table, data_dir, Path(out_dir) if out_dir else data_dir / DEFAULT_DIR)


__all__ = ["build_explorer", "read_dataset", "write_site", "DEFAULT_DIR"]
