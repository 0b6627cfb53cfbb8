"""Fixtures for the render-farm tests (helpers live in farm_helpers.py)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))  # toy scenarios + helpers, also in workers

from farm_helpers import dataset_digest  # noqa: E402


@pytest.fixture
def toy_config() -> dict:
    return {"n": 48, "seed": 7, "size": 32}


@pytest.fixture(scope="session")
def cpu_reference(tmp_path_factory) -> tuple[dict, dict]:
    """An uninterrupted 1-worker run of the CPU toy: (config, digest) every other run must equal."""
    from sceneforge.renderfarm import run_job

    config = {"n": 48, "seed": 7, "size": 32}
    out = tmp_path_factory.mktemp("cpu_ref")
    summary = run_job("farm_toy_cpu", config, out, workers=1, progress=False)
    assert summary["complete"] == 48 and summary["finalized"]
    return config, dataset_digest(out)
