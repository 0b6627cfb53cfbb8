"""Run a SpaRRTa job the way ``sceneforge generate`` does (the inline runner), for the tests.

A uniquely named module (not ``conftest``) so ``from sparrta_helpers import generate`` cannot pick
up another directory's helpers when the whole suite runs.
"""
from __future__ import annotations

from pathlib import Path

from core.errors import PlacementError
from renderfarm import run_job


def generate(config: dict, out: Path, *, server: str | None = None, progress: bool = False) -> dict:
    """``run_job(backend="inline")``; a failed sample raises PlacementError like the CLI's one line."""
    summary = run_job("sparrta", config, out, backend="inline", server=server, progress=progress)
    if summary["failed"]:
        first = next(iter(summary["failed"].values()))
        raise PlacementError(first, rejections=summary["rejections"])
    return summary
