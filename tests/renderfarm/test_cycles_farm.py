"""The farm on the Cycles renderer: 2 workers (each with its own server and Blender) write the
same bytes as 1 worker. Tiny: 2 samples of 64 px at 2 samples per pixel. Skipped (with the
install command as the reason) when the Cycles environment is absent."""

from __future__ import annotations

import pytest

from sceneforge.engine.server.cycles.install import INSTALL_HINT, status
from farm_helpers import dataset_digest
from sceneforge.renderfarm import run_job

pytestmark = [
    pytest.mark.render,
    pytest.mark.cycles,
    pytest.mark.skipif(status() is None, reason=f"Cycles is not installed: {INSTALL_HINT}"),
]

CONFIG = {
    "envs": ["desert"],
    "tasks": ["ego"],
    "n": 2,
    "size": 64,
    "seed": 5,
    "samples_per_scene": 1,
    "renderer": "cycles:samples=2",
}


def test_two_cycles_workers_equal_one(tmp_path):
    one = run_job("scenarios.sparrta", CONFIG, tmp_path / "one", workers=1, progress=False)
    assert one["finalized"] and one["complete"] == 2, one
    two = run_job("scenarios.sparrta", CONFIG, tmp_path / "two", workers=2, shard_size=1, progress=False)
    assert two["finalized"] and two["workers"] == 2
    digest = dataset_digest(tmp_path / "one")
    assert len([k for k in digest if k.endswith(".jpg")]) == 2
    assert dataset_digest(tmp_path / "two") == digest
