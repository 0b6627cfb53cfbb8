"""Local backend with the CPU toy scenario: determinism, failures, resume, kill -9, SIGTERM."""

from __future__ import annotations

import json
import os
import signal

import pytest

from farm_helpers import count_files, dataset_digest, live_workers, pid_alive, start_job, wait_for
from sceneforge.core.errors import ConfigError
from sceneforge.renderfarm import JobOptions, exit_code, run_job
from sceneforge.renderfarm.jsonlog import read_log
from sceneforge.renderfarm.status import format_status, job_status


@pytest.mark.parametrize("workers", [2, 4])
def test_worker_count_does_not_change_the_dataset(tmp_path, cpu_reference, workers):
    config, reference = cpu_reference
    summary = run_job("farm_toy_cpu", config, tmp_path, workers=workers, progress=False)
    assert summary["workers"] == workers and summary["finalized"]
    assert dataset_digest(tmp_path) == reference


def test_shard_size_does_not_change_the_dataset(tmp_path, cpu_reference):
    config, reference = cpu_reference
    run_job("farm_toy_cpu", config, tmp_path, workers=2, shard_size=5, progress=False)
    assert dataset_digest(tmp_path) == reference


def test_the_options_are_one_value_and_keywords_override_it(tmp_path, cpu_reference):
    """``JobOptions`` is run_job's keywords as one value (the runner hands it down whole)."""
    config, reference = cpu_reference
    opts = JobOptions(workers=2, shard_size=5, progress=False)
    summary = run_job("farm_toy_cpu", config, tmp_path, opts, workers=1)
    assert summary["workers"] == 1 and summary["finalized"] and dataset_digest(tmp_path) == reference
    with pytest.raises(TypeError, match="wrokers"):
        run_job("farm_toy_cpu", config, tmp_path / "x", opts, wrokers=2)


def test_always_failing_sample_is_reported_not_looped(tmp_path, cpu_reference):
    config, reference = cpu_reference
    bad = {**config, "fail_on": [5, 30]}
    summary = run_job("farm_toy_cpu", bad, tmp_path, workers=2, shard_size=4, progress=False)
    assert set(summary["failed"]) == {"5", "30"}
    assert "always fails" in summary["failed"]["5"]
    assert summary["complete"] == 46 and not summary["finalized"] and exit_code(summary) == 1
    failures = [e for e in read_log(tmp_path / ".farm" / "log.jsonl") if e.get("event") == "sample_failed"]
    assert sorted(e["sample"] for e in failures) == [5, 30]
    assert all(e["attempts"] == 3 for e in failures)
    # the neighbours of a bad sample (same shard) are done; a re-run retries only what failed
    fixed = run_job("farm_toy_cpu", config, tmp_path, workers=2, progress=False)
    assert fixed["failed"] == {} and fixed["rendered"] == 2 and fixed["finalized"]
    assert dataset_digest(tmp_path) == reference


def test_reported_failure_that_ends_a_shard_early_costs_the_rest_no_attempt(tmp_path, cpu_reference):
    config, reference = cpu_reference
    bad = {**config, "fail_on": [9], "fail_mode": "report"}
    summary = run_job("farm_toy_cpu", bad, tmp_path, workers=1, shard_size=8, progress=False)
    assert list(summary["failed"]) == ["9"] and summary["complete"] == 47
    rows = {r["sample"]: r for r in read_log(tmp_path / ".farm" / "log.jsonl") if r.get("event") == "sample_failed"}
    assert rows[9]["attempts"] == 3 and "always fails" in rows[9]["error"]
    run_job("farm_toy_cpu", config, tmp_path, workers=1, progress=False)
    assert dataset_digest(tmp_path) == reference


def test_hung_sample_is_killed_and_reported(tmp_path, cpu_reference):
    config, reference = cpu_reference
    hung = {**config, "hang_on": [3]}
    summary = run_job("farm_toy_cpu", hung, tmp_path, workers=2, shard_size=2, progress=False, sample_timeout_s=1.5)
    assert summary["failed"] == {"3": "timed out (worker killed)"} and summary["complete"] == 47
    run_job("farm_toy_cpu", config, tmp_path, workers=2, progress=False)
    assert dataset_digest(tmp_path) == reference


def test_resume_of_a_complete_job_does_no_work(tmp_path, cpu_reference):
    config, reference = cpu_reference
    run_job("farm_toy_cpu", config, tmp_path, workers=2, progress=False)
    again = run_job("farm_toy_cpu", config, tmp_path, workers=2, progress=False)
    assert again["rendered"] == 0 and again["complete"] == 48
    assert dataset_digest(tmp_path) == reference


def test_a_different_config_is_refused(tmp_path, cpu_reference):
    config, _ = cpu_reference
    run_job("farm_toy_cpu", config, tmp_path, workers=1, progress=False)
    with pytest.raises(ConfigError, match="different config"):
        run_job("farm_toy_cpu", {**config, "seed": 8}, tmp_path, workers=1, progress=False)


def test_bad_arguments_are_clear_errors(tmp_path, cpu_reference):
    config, _ = cpu_reference
    with pytest.raises(ConfigError, match="--backend"):
        run_job("farm_toy_cpu", config, tmp_path, backend="slurm")
    with pytest.raises(ConfigError, match="--workers"):
        run_job("farm_toy_cpu", config, tmp_path, workers=0)
    with pytest.raises(ConfigError, match="HOST:PORT"):
        run_job("farm_toy_cpu", config, tmp_path, servers="localhost")


def test_kill_9_of_the_whole_job_then_resume_is_identical(tmp_path, cpu_reference):
    config, reference = cpu_reference
    slow = {**config, "sleep_s": 0.05}
    job = start_job("farm_toy_cpu", tmp_path, slow, "--workers", "2")
    wait_for(lambda: count_files(tmp_path / "images") >= 10, what="10 samples")
    workers = live_workers(tmp_path)
    os.killpg(job.pid, signal.SIGKILL)
    job.wait()
    assert "ended without cleanup; re-run to resume" in format_status(job_status(tmp_path))
    assert count_files(tmp_path / "images") < 48  # really interrupted mid-run
    # workers notice their parent died (PR_SET_PDEATHSIG) and exit: no orphans
    wait_for(lambda: not any(pid_alive(w["pid"]) for w in workers), 20, "orphan workers to exit")
    summary = run_job("farm_toy_cpu", slow, tmp_path, workers=2, progress=False)
    assert summary["complete"] == 48 and summary["failed"] == {}
    assert 0 < summary["rendered"] < 48
    assert dataset_digest(tmp_path) == reference


def test_kill_9_of_a_worker_mid_run_is_survived(tmp_path, cpu_reference):
    config, reference = cpu_reference
    slow = {**config, "sleep_s": 0.05}
    job = start_job("farm_toy_cpu", tmp_path, slow, "--workers", "2", "--shard-size", "8")
    wait_for(lambda: any(w["state"] == "busy" for w in live_workers(tmp_path)), what="a busy worker")
    victim = next(w for w in live_workers(tmp_path) if w["state"] == "busy")
    os.kill(victim["pid"], signal.SIGKILL)
    assert job.wait(120) == 0, job.stderr.read().decode()[-2000:]
    log = read_log(tmp_path / ".farm" / "log.jsonl")
    crashes = [e for e in log if e.get("event") == "item_failed" and e.get("crashed")]
    assert crashes and crashes[0]["worker"] == victim["worker"]
    assert dataset_digest(tmp_path) == reference
    summary = json.loads((tmp_path / ".farm" / "summary.json").read_text())
    assert summary["failed"] == {} and summary["finalized"]


def test_sigterm_stops_workers_cleanly_and_resume_works(tmp_path, cpu_reference):
    config, reference = cpu_reference
    # 0.25 s per sample: 48 samples keep 2 workers busy >= 6 s, so on a loaded machine the job is
    # still running when the test looks at its workers (at 0.05 s it once finished first: CI 2026-11-27)
    slow = {**config, "sleep_s": 0.25}
    job = start_job("farm_toy_cpu", tmp_path, slow, "--workers", "2")
    wait_for(lambda: count_files(tmp_path / "images") >= 6, what="6 samples")
    workers = live_workers(tmp_path)
    assert workers
    running = format_status(job_status(tmp_path))
    assert f"job running (pid {job.pid})" in running and "  w0: " in running
    with pytest.raises(ConfigError, match="another farm job is running"):
        run_job("farm_toy_cpu", slow, tmp_path, workers=1, progress=False)
    job.send_signal(signal.SIGTERM)
    assert job.wait(60) == 130
    assert not any(pid_alive(w["pid"]) for w in workers)
    assert not (tmp_path / ".farm" / "workers.json").exists()
    assert "no job running" in format_status(job_status(tmp_path))
    assert not list(tmp_path.rglob("*.tmp"))  # no half-written files left behind
    run_job("farm_toy_cpu", slow, tmp_path, workers=2, progress=False)
    assert dataset_digest(tmp_path) == reference
