"""Ray backend on a local single-node Ray: same shard contract, same bytes as the local backend."""

from __future__ import annotations

import os
import signal
import threading

import pytest

from farm_helpers import HERE, dataset_digest, live_workers, wait_for
from sceneforge.renderfarm.jsonlog import read_log
from sceneforge.renderfarm import run_job

ray = pytest.importorskip("ray")


@pytest.fixture(scope="module")
def local_ray():
    """One short-lived Ray session for every test here (start-up costs several seconds)."""
    path = os.pathsep.join(p for p in (str(HERE), os.environ.get("PYTHONPATH")) if p)
    # address="local": always a new instance of our own, never a cluster someone else runs here
    ray.init(
        address="local", num_cpus=2, include_dashboard=False, log_to_driver=False, runtime_env={"env_vars": {"PYTHONPATH": path}}
    )
    yield
    ray.shutdown()


def test_ray_backend_equals_local_backend(tmp_path, cpu_reference, local_ray):
    config, reference = cpu_reference
    summary = run_job(
        "farm_toy_cpu",
        {**config, "fail_on": [3], "hang_on": [20]},
        tmp_path,
        backend="ray",
        workers=2,
        shard_size=6,
        progress=False,
        sample_timeout_s=2,
    )
    assert summary["backend"] == "ray" and sorted(summary["failed"]) == ["20", "3"]
    assert summary["failed"]["20"] == "timed out (actor killed)"
    summary = run_job("farm_toy_cpu", config, tmp_path, backend="ray", workers=2, progress=False)
    assert summary["finalized"] and summary["rendered"] == 2
    assert dataset_digest(tmp_path) == reference


@pytest.mark.render
def test_ray_actors_own_render_servers(tmp_path, local_ray):
    config = {"n": 6, "seed": 11, "size": 48}
    run_job("farm_toy_render", config, tmp_path / "local", workers=1, progress=False)
    summary = run_job("farm_toy_render", config, tmp_path / "ray", backend="ray", workers=2, shard_size=2, progress=False)
    assert summary["finalized"] and summary["workers"] == 2
    assert dataset_digest(tmp_path / "ray") == dataset_digest(tmp_path / "local")


def test_a_killed_actor_is_replaced_and_nothing_is_lost(tmp_path, cpu_reference, local_ray):
    config, reference = cpu_reference
    slow = {**config, "sleep_s": 0.05}
    summaries = []
    job = threading.Thread(
        target=lambda: summaries.append(
            run_job("farm_toy_cpu", slow, tmp_path, backend="ray", workers=2, shard_size=8, progress=False)
        )
    )
    job.start()
    wait_for(lambda: any(w["state"] == "busy" for w in live_workers(tmp_path)), 60, "a busy actor")
    victim = next(w for w in live_workers(tmp_path) if w["state"] == "busy")
    os.kill(victim["pid"], signal.SIGKILL)
    job.join(120)
    assert summaries and summaries[0]["finalized"] and summaries[0]["failed"] == {}
    crashes = [e for e in read_log(tmp_path / ".farm" / "log.jsonl") if e.get("crashed")]
    assert crashes and crashes[0]["worker"] == victim["worker"]
    assert dataset_digest(tmp_path) == reference
