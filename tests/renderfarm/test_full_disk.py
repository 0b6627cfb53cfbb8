"""Issue 13 item 11: a full disk during `generate --workers 2` / `videos` is one line, exit 2,
no ``.tmp`` files left. Uses a small tmpfs (needs root to mount; skipped otherwise)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from farm_helpers import HERE

ROOT = HERE.parents[1]


@pytest.fixture
def small_disk(small_disk_of):
    return small_disk_of("256k")


def _cli(*argv: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": f"{ROOT}:{HERE}"}
    return subprocess.run([sys.executable, "-m", "sceneforge.cli", *argv], capture_output=True, text=True, timeout=600, env=env)


def _errors(p: subprocess.CompletedProcess) -> list[str]:
    lines = [l for l in p.stderr.replace("\r", "\n").splitlines() if l.strip()]
    return [
        l
        for l in lines
        if not l.lstrip().startswith(("sparrta:", "videos:", "generate:", "clips:")) and "it/s" not in l and "sample/s" not in l
    ]


@pytest.mark.slow  # ~25 s: two workers with their servers until 256 kB are full
@pytest.mark.render
def test_full_disk_in_a_two_worker_generate_is_one_line(small_disk):
    p = _cli(
        "generate",
        "--env",
        "desert",
        "--task",
        "ego",
        "--n",
        "200",
        "--size",
        "128",
        "--workers",
        "2",
        "--out",
        str(small_disk / "ds"),
    )
    errors = _errors(p)
    assert p.returncode == 2, p.stderr[-2000:]
    assert len(errors) == 1 and "No space left on device" in errors[0] and "Traceback" not in p.stderr, errors
    assert not list(small_disk.rglob("*.tmp*"))


@pytest.mark.slow
@pytest.mark.render
def test_full_disk_in_videos_is_one_line(small_disk):
    p = _cli("videos", "--env", "desert", "--n", "6", "--frames", "8", "--out", str(small_disk / "v"))
    errors = _errors(p)
    assert p.returncode == 2, p.stderr[-2000:]
    assert len(errors) == 1 and "No space left on device" in errors[0] and "Traceback" not in p.stderr, errors
    assert not list(small_disk.rglob("*.tmp*"))
