"""Ray on a real multi-node cluster (3 raylets on this machine, ``ray.cluster_utils.Cluster``):
a node lost mid-job, and the head node lost under a running driver. Each case runs in its own
interpreter (tests/renderfarm/ray_cluster.py) so Ray can be kept on 127.0.0.1; ~1.5 min in all."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from farm_helpers import HERE, dataset_digest
from sceneforge.renderfarm.jsonlog import read_log

pytest.importorskip("ray")


def _cluster_run(mode: str, out, config: dict, timeout: float = 400) -> dict:
    proc = subprocess.run(
        [sys.executable, str(HERE / "ray_cluster.py"), mode, str(out), json.dumps(config)],
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_a_node_removed_mid_job_the_rest_finish_it_byte_identical(tmp_path, cpu_reference):
    config, reference = cpu_reference
    report = _cluster_run("node-loss", tmp_path, {**config, "sleep_s": 0.3})
    summary = report["summary"]
    assert len(report["nodes_seen"]) == 3, report  # the job ran on every node
    assert summary["finalized"] and summary["failed"] == {} and summary["complete"] == 48
    crashes = [e for e in read_log(tmp_path / ".farm" / "log.jsonl") if e.get("crashed")]
    assert [e["worker"] for e in crashes] == [report["victim"]]
    assert dataset_digest(tmp_path) == reference  # same bytes as one local worker


def test_head_node_lost_under_a_running_driver_one_line_then_resume(tmp_path, cpu_reference):
    config, reference = cpu_reference
    report = _cluster_run("head-loss", tmp_path, {**config, "sleep_s": 1.0})
    assert report["first_rc"] == 2 and report["stopped_s"] < 45, report
    errors = [line for line in report["first_stderr"].splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "head node" in errors[0] and "resume" in errors[0], report["first_stderr"]
    assert "Traceback" not in report["first_stderr"]
    assert 1 <= report["journaled_at_loss"] < 12  # stopped mid-job, shards kept
    assert report["second_rc"] == 0, report["second_stderr"]
    assert dataset_digest(tmp_path) == reference


def test_token_auth_cluster_runs_with_the_token_and_refuses_another_in_one_line(tmp_path, cpu_reference):
    """Ray 2.60 starts local clusters with RAY_AUTH_MODE=token for real (3 nodes, a fresh token)."""
    config, reference = cpu_reference
    report = _cluster_run("token", tmp_path / "good", config)
    assert report["good_rc"] == 0, report["good_stderr"]
    assert dataset_digest(tmp_path / "good") == reference
    errors = [line for line in report["bad_stderr"].splitlines() if line.startswith("error:")]
    assert report["bad_rc"] == 2 and len(errors) == 1, report["bad_stderr"]
    assert "RAY_AUTH_TOKEN" in errors[0] and "Traceback" not in report["bad_stderr"]
