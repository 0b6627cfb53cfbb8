"""``sceneforge farm status``: per-shard done / pending / failed from the journal, exit codes."""

from __future__ import annotations

import json
import subprocess
import sys

from sceneforge.renderfarm import run_job
from sceneforge.renderfarm.status import job_status


def farm_status(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "sceneforge.cli", "farm", "status", *args], capture_output=True, text=True, timeout=120
    )


def test_status_shows_failed_shard_and_sample(tmp_path):
    config = {"n": 12, "seed": 1, "size": 16, "fail_on": [4]}
    run_job("farm_toy_cpu", config, tmp_path, workers=1, shard_size=4, progress=False)
    out = farm_status(str(tmp_path))
    assert out.returncode == 1
    assert "shards: done 2, pending 0, failed 1" in out.stdout
    assert "sample 4: failed after 3 attempts: RuntimeError: toy sample 4 always fails" in out.stdout
    lines = [l.split() for l in out.stdout.splitlines() if l.strip().startswith(("0 ", "1 ", "2 "))]
    assert [(l[0], l[1], l[2]) for l in lines] == [("0", "0-3", "done"), ("1", "4-7", "failed"), ("2", "8-11", "done")]
    data = json.loads(farm_status(str(tmp_path), "--json").stdout)
    assert data["counts"]["samples"] == {"done": 8, "failed": 4, "failed_samples": 1}
    assert data["workers"] is None  # no job running


def test_status_of_a_fresh_and_of_a_complete_job(tmp_path):
    run_job("farm_toy_cpu", {"n": 6, "seed": 1, "size": 16}, tmp_path, workers=1, progress=False)
    status = job_status(tmp_path)
    assert status["counts"]["shards"] == {"done": 6}
    assert farm_status(str(tmp_path)).returncode == 0


def test_status_of_a_non_farm_dir_is_one_clear_line(tmp_path):
    out = farm_status(str(tmp_path))
    assert out.returncode == 2
    assert out.stderr.strip().count("\n") == 0 and "not a sceneforge output dir (no job.json" in out.stderr


def test_status_of_an_ordinary_generate_output(tmp_path):
    """Issue 47 item 3: `farm status` on what `sceneforge generate` wrote with its defaults (an
    inline run: no journal) says done/failed/pending and exits 0 (it was "not a farm output dir")."""
    out = tmp_path / "g"
    gen = subprocess.run(
        [sys.executable, "-m", "sceneforge.cli", "generate", "--env", "desert", "--task", "ego", "--n", "2"]
        + ["--out", str(out), "--no-fetch", "--quiet"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert gen.returncode == 0, gen.stderr
    assert not (out / ".farm" / "job.json").exists()  # inline: no farm manifest, no journal
    status = farm_status(str(out))
    assert status.returncode == 0, status.stderr
    assert "run inline" in status.stdout and "samples: 2: done 2, failed 0, pending 0" in status.stdout
    data = json.loads(farm_status(str(out), "--json").stdout)
    assert data["inline"] and data["counts"]["samples"]["done"] == 2


def test_status_of_an_inline_run_that_stopped_early(tmp_path):
    """An inline run that stopped before its end (here a sample raises, as a crash or Ctrl-C would
    stop it) leaves job.json and no summary: status unknown, exit 1, and how to resume."""
    import pytest

    with pytest.raises(RuntimeError, match="toy sample 2 always fails"):
        run_job("farm_toy_cpu", {"n": 4, "seed": 1, "size": 16, "fail_on": [2]}, tmp_path, backend="inline", progress=False)
    status = farm_status(str(tmp_path))
    assert status.returncode == 1 and "status unknown" in status.stdout and "rerun the same command" in status.stdout
    run_job("farm_toy_cpu", {"n": 4, "seed": 1, "size": 16}, tmp_path / "b", backend="inline", progress=False)
    assert farm_status(str(tmp_path / "b")).returncode == 0
