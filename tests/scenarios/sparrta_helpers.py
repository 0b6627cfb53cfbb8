"""Run a SpaRRTa job the way ``sceneforge generate`` does (the inline runner), for the tests.

A uniquely named module (not ``conftest``) so ``from sparrta_helpers import generate`` cannot pick
up another directory's helpers when the whole suite runs.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
from PIL import Image

from sceneforge.core.errors import PlacementError
from sceneforge.renderfarm import run_job


def generate(config: dict, out: Path, *, server: str | None = None, progress: bool = False) -> dict:
    """``run_job(backend="inline")``; a failed sample raises PlacementError like the CLI's one line."""
    summary = run_job("sparrta", config, out, backend="inline", server=server, progress=progress)
    if summary["failed"]:
        first = next(iter(summary["failed"].values()))
        raise PlacementError(first, rejections=summary["rejections"])
    return summary


def tree_hashes(root: Path) -> dict[str, str]:
    """sha256 of every dataset file (the runner's bookkeeping under .farm/ excluded)."""
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file() and p.relative_to(root).parts[0] != ".farm"
    }


def mask_of(out: Path, r, name: str) -> np.ndarray:
    """Boolean mask of object ``name`` in table row ``r``'s mask image (its params' colours)."""
    colors = json.loads((out / r.params_file).read_text())["mask_colors"]
    return np.all(np.asarray(Image.open(out / r.mask_file)) == np.array(colors[name]), axis=2)
