"""Farm + real embedded render servers (the render toy scenario speaks stock UnrealCV)."""

from __future__ import annotations

import os
import signal

import pytest

from farm_helpers import count_files, dataset_digest, live_workers, pid_alive, start_job, wait_for
from sceneforge.renderfarm import run_job
from sceneforge.renderfarm.jsonlog import read_log

pytestmark = pytest.mark.render

CONFIG = {"n": 12, "seed": 11, "size": 48}


@pytest.fixture(scope="module")
def render_reference(tmp_path_factory) -> dict:
    out = tmp_path_factory.mktemp("render_ref")
    summary = run_job("farm_toy_render", CONFIG, out, workers=1, progress=False)
    assert summary["complete"] == 12 and summary["finalized"], summary
    return dataset_digest(out)


def test_two_workers_render_the_same_bytes_as_one(tmp_path, render_reference):
    summary = run_job("farm_toy_render", CONFIG, tmp_path, workers=2, shard_size=2, progress=False)
    assert summary["workers"] == 2
    assert dataset_digest(tmp_path) == render_reference


def test_external_server_list_of_our_own_servers(tmp_path, render_reference):
    from sceneforge.engine.server.launch import start_server

    with start_server(port=0, output_dir=tmp_path / "s0") as a, start_server(port=0, output_dir=tmp_path / "s1") as b:
        out = tmp_path / "data"
        summary = run_job("farm_toy_render", CONFIG, out, servers=f"{a.address},{b.address}", shard_size=2, progress=False)
        assert summary["workers"] == 2 and summary["finalized"]
        assert a.alive() and b.alive()  # the farm never stops servers it did not start
    assert dataset_digest(out) == render_reference


def test_a_retry_on_a_server_left_dirty_writes_the_clean_bytes(tmp_path, render_reference):
    """A shard that died mid-sample leaves its object on a server that lives on (a client timed
    out under load); the retry on that server must write what a clean server writes."""
    import unrealcv

    from sceneforge.engine.server.launch import start_server

    with start_server(port=0, output_dir=tmp_path / "s0") as server:
        host, port = server.address.rsplit(":", 1)
        client = unrealcv.Client((host, int(port)))
        assert client.connect(timeout=10)
        try:  # sample 3's object, left where every camera of the job looks near
            assert client.request("vset /objects/spawn rock toy_3") == "toy_3"
            assert client.request("vset /object/toy_3/location 0 0 0") == "ok"
        finally:
            client.disconnect()
        out = tmp_path / "data"
        summary = run_job("farm_toy_render", CONFIG, out, servers=[server.address], progress=False)
        assert summary["finalized"] and not summary["failed"], summary
    assert dataset_digest(out) == render_reference


def test_unreachable_external_server_is_a_clear_error(tmp_path):
    import socket

    from sceneforge.core.errors import ConnectionFailed

    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        dead = f"127.0.0.1:{s.getsockname()[1]}"
    with pytest.raises(ConnectionFailed, match="does not answer"):
        run_job("farm_toy_render", CONFIG, tmp_path, servers=[dead], progress=False)


def test_dead_server_is_restarted_and_dead_worker_leaves_no_orphan(tmp_path, render_reference):
    config = {**CONFIG, "n": 24}
    job = start_job("farm_toy_render", tmp_path, config, "--workers", "2", "--shard-size", "2")
    wait_for(lambda: count_files(tmp_path / "images") >= 2 and len(live_workers(tmp_path)) == 2, 90, "two running workers")
    first, second = live_workers(tmp_path)
    os.kill(first["server_pid"], signal.SIGKILL)  # the renderer dies under a worker
    os.kill(second["pid"], signal.SIGKILL)  # a worker dies: its server must go too
    wait_for(lambda: not pid_alive(second["server_pid"]), 30, "the dead worker's server to be reaped")
    assert job.wait(300) == 0, job.stderr.read().decode()[-2000:]
    log = read_log(tmp_path / ".farm" / "log.jsonl")
    assert any("restarting" in e["msg"] for e in log)
    ref_dir = tmp_path.parent / "ref24"
    run_job("farm_toy_render", config, ref_dir, workers=1, progress=False)
    assert dataset_digest(tmp_path) == dataset_digest(ref_dir)


def test_sigterm_stops_workers_and_their_servers(tmp_path):
    job = start_job("farm_toy_render", tmp_path, {**CONFIG, "n": 40}, "--workers", "2", "--shard-size", "2")
    wait_for(lambda: len(live_workers(tmp_path)) == 2 and count_files(tmp_path / "images") >= 1, 90, "two running workers")
    workers = live_workers(tmp_path)
    job.send_signal(signal.SIGTERM)
    assert job.wait(60) == 130
    pids = [w["pid"] for w in workers] + [w["server_pid"] for w in workers]
    wait_for(lambda: not any(pid_alive(p) for p in pids), 15, "workers and servers to exit")
    summary = run_job("farm_toy_render", {**CONFIG, "n": 40}, tmp_path, workers=2, progress=False)
    assert summary["finalized"] and summary["failed"] == {}


def test_kill_9_of_the_whole_job_leaves_no_server_and_resumes_identically(tmp_path, render_reference):
    job = start_job("farm_toy_render", tmp_path, CONFIG, "--workers", "2", "--shard-size", "1")
    wait_for(lambda: len(live_workers(tmp_path)) == 2 and count_files(tmp_path / "images") >= 2, 90, "two running workers")
    workers = live_workers(tmp_path)
    os.killpg(job.pid, signal.SIGKILL)  # the job only: workers lead their own process groups
    job.wait()
    pids = [w["pid"] for w in workers] + [w["server_pid"] for w in workers]
    wait_for(lambda: not any(pid_alive(p) for p in pids), 20, "orphaned workers and servers to exit")
    summary = run_job("farm_toy_render", CONFIG, tmp_path, workers=2, progress=False)
    assert summary["finalized"]
    assert dataset_digest(tmp_path) == render_reference
