"""Multi-node Ray on one machine for the farm tests: ``ray.cluster_utils.Cluster`` nodes, each with
its own raylet, object store and CPU, all on 127.0.0.1.

Runs in its own interpreter (``python ray_cluster.py MODE OUT CONFIG_JSON``) because Ray reads
``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER`` when it is imported: ``0`` keeps every node, GCS and driver on
the loopback address (otherwise Ray binds the machine's outward address) and the test process may
already hold a single-node Ray session. Prints one JSON object on its last stdout line.

Modes:
  node-loss  3 nodes of 1 CPU, a 3-actor job in this process; once an actor on a non-head node is
             busy, that node is removed (its raylet and actors die); the job must finish on the others.
  token      3 nodes started with RAY_AUTH_MODE=token and a fresh token; a driver process with the
             token runs the job, one with another token must stop in one line (the token hint).
  head-loss  3 nodes; the job runs in a separate driver process (``farm_runner.py --backend ray``);
             once a shard is journaled the head node's processes are killed; then a new head on the
             same port and the same command again (the resume).
"""

from __future__ import annotations

import os

os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"  # before ray is imported: loopback only
if __name__ == "__main__" and __import__("sys").argv[1:2] == ["token"]:  # Ray reads these at import
    os.environ.update(RAY_AUTH_MODE="token", RAY_AUTH_TOKEN=__import__("secrets").token_hex(32))
    os.environ.pop("RAY_AUTH_TOKEN_PATH", None)

import json  # noqa: E402
import sqlite3  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(HERE), os.environ.get("PYTHONPATH")) if p)

import ray  # noqa: E402
from ray.cluster_utils import Cluster  # noqa: E402

from farm_helpers import live_workers, wait_for  # noqa: E402

NODE = {"num_cpus": 1, "object_store_memory": 80 * 2**20}


def start_cluster(n_nodes: int, port: int | None = None) -> Cluster:
    head = {**NODE, "include_dashboard": False, **({"gcs_server_port": port} if port else {})}
    cluster = Cluster(initialize_head=True, head_node_args=head)
    for _ in range(n_nodes - 1):
        cluster.add_node(**NODE)
    cluster.wait_for_nodes()
    return cluster


def node_loss(out: Path, config: dict) -> dict:
    from sceneforge.renderfarm import run_job

    cluster = start_cluster(3)
    ray.init(address=cluster.address, include_dashboard=False, log_to_driver=False)
    others = {n.node_id for n in cluster.list_all_nodes() if n is not cluster.head_node}
    result: list = []
    job = threading.Thread(
        target=lambda: result.append(run_job("farm_toy_cpu", config, out, backend="ray", workers=3, shard_size=4, progress=False))
    )
    job.start()
    seen: set[str] = set()

    def victim_busy() -> bool:
        workers = live_workers(out)
        seen.update(w["node"] for w in workers)
        return any(w["state"] == "busy" and w["node"] in others for w in workers) and len(seen) == 3

    wait_for(victim_busy, 120, "a busy actor on every node")
    victim = next(w for w in live_workers(out) if w["state"] == "busy" and w["node"] in others)
    node = next(n for n in cluster.list_all_nodes() if n.node_id == victim["node"])
    cluster.remove_node(node, allow_graceful=False)
    job.join(240)
    ray.shutdown()
    cluster.shutdown()
    return {
        "summary": result[0] if result else None,
        "nodes_seen": sorted(seen),
        "removed": victim["node"],
        "victim": victim["worker"],
    }


def head_loss(out: Path, config: dict) -> dict:
    cluster = start_cluster(3)
    port = int(cluster.address.rsplit(":", 1)[1])
    first = _driver(out, config, cluster.address)
    wait_for(lambda: _journaled(out) >= 1, 120, "a journaled shard")
    t0 = time.monotonic()
    cluster.head_node.kill_all_processes(check_alive=False, allow_graceful=False)
    try:
        _, err = first.communicate(timeout=90)
    except subprocess.TimeoutExpired:
        first.kill()
        _, err = first.communicate()
    stopped_s = time.monotonic() - t0
    done_at_loss = _journaled(out)
    for node in list(cluster.worker_nodes):
        node.kill_all_processes(check_alive=False, allow_graceful=False)
    restarted = start_cluster(3, port=port)
    second = _driver(out, {k: v for k, v in config.items()}, restarted.address)
    _, err2 = second.communicate(timeout=240)
    restarted.shutdown()
    return {
        "first_rc": first.returncode,
        "first_stderr": err.decode(errors="replace"),
        "stopped_s": round(stopped_s, 1),
        "journaled_at_loss": done_at_loss,
        "second_rc": second.returncode,
        "second_stderr": err2.decode(errors="replace")[-2000:],
    }


def token(out: Path, config: dict) -> dict:
    import secrets

    cluster = start_cluster(3)
    try:
        good = _driver(out, config, cluster.address)
        _, err = good.communicate(timeout=240)
        t0 = time.monotonic()
        bad = _driver(
            out.with_name(out.name + "_bad"), config, cluster.address, env={**os.environ, "RAY_AUTH_TOKEN": secrets.token_hex(32)}
        )
        try:
            _, bad_err = bad.communicate(timeout=120)
        except subprocess.TimeoutExpired:
            bad.kill()
            _, bad_err = bad.communicate()
    finally:
        cluster.shutdown()
    return {
        "good_rc": good.returncode,
        "good_stderr": err.decode(errors="replace")[-2000:],
        "bad_rc": bad.returncode,
        "bad_stderr": bad_err.decode(errors="replace")[-3000:],
        "bad_s": round(time.monotonic() - t0, 1),
    }


def _driver(out: Path, config: dict, address: str, env: dict | None = None) -> subprocess.Popen:
    cmd = [
        sys.executable,
        str(HERE / "farm_runner.py"),
        "farm_toy_cpu",
        str(out),
        json.dumps(config),
        "--backend",
        "ray",
        "--workers",
        "3",
        "--shard-size",
        "4",
        "--ray-address",
        address,
    ]
    return subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)


def _journaled(out: Path) -> int:
    try:
        with sqlite3.connect(f"file:{out}/.farm/journal.sqlite?mode=ro", uri=True, timeout=5) as db:
            return db.execute("SELECT count(*) FROM shards WHERE status = 'done'").fetchone()[0]
    except sqlite3.Error:
        return 0


if __name__ == "__main__":
    mode, out_dir, cfg = sys.argv[1], Path(sys.argv[2]), json.loads(sys.argv[3])
    report = {"node-loss": node_loss, "head-loss": head_loss, "token": token}[mode](out_dir, cfg)
    print(json.dumps(report))
