"""The farm with the real scenarios, end to end through the CLI (small n)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from farm_helpers import dataset_digest
from sceneforge.renderfarm import run_job

pytestmark = pytest.mark.render

SPARRTA = {"envs": ["desert"], "tasks": ["ego"], "n": 8, "size": 64}


def sceneforge(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "sceneforge.cli", *args], capture_output=True, text=True, timeout=600)


def test_generate_with_two_workers_equals_one_worker_and_reports_status(tmp_path):
    pytest.importorskip("sceneforge.scenarios.sparrta")
    one = run_job("scenarios.sparrta", SPARRTA, tmp_path / "one", workers=1, progress=False)
    assert one["finalized"] and one["complete"] == 8
    done = sceneforge(
        "generate",
        "--env",
        "desert",
        "--task",
        "ego",
        "--n",
        "8",
        "--size",
        "64",
        "--out",
        str(tmp_path / "two"),
        "--workers",
        "2",
        "--quiet",
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert dataset_digest(tmp_path / "two") == dataset_digest(tmp_path / "one")
    status = sceneforge("farm", "status", str(tmp_path / "two"))
    assert status.returncode == 0 and "shards: done 8, pending 0, failed 0" in status.stdout


def test_videos_with_two_workers_equal_one_worker(tmp_path):
    pytest.importorskip("sceneforge.scenarios.videos")
    config = {"env": "desert", "n": 3, "image_size": 64, "motion": {"n_frames": 4}}
    one = run_job("scenarios.videos", config, tmp_path / "one", workers=1, progress=False)
    assert one["finalized"] and one["complete"] == 3
    done = sceneforge(
        "videos", "--env", "desert", "--n", "3", "--size", "64", "--frames", "4", "--out", str(tmp_path / "two"), "--workers", "2"
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert dataset_digest(tmp_path / "two") == dataset_digest(tmp_path / "one")
