"""Benchmark: the farm on 1, 2, 4 simulated Ray nodes, and the driver's cost of a 100,000-item plan.

    python benchmarks/farm_scaling.py [--nodes 1,2,4] [--n 240] [--size 64] [--plan 100000]

Nodes are ``ray.cluster_utils.Cluster`` nodes on 127.0.0.1 (each its own raylet, object store and
1 CPU; one actor per node). On a 2-core machine wall time cannot scale past 2 nodes, so each run
reports CPU-seconds: of every process of the job (driver, raylets, GCS, actors; read from /proc)
per sample, and the driver's own CPU per work item (its scheduling overhead). Two scenarios: the
CPU toy of the tests (real PNG + JSON samples) and ``farm_noop`` (samples that cost nothing, so the
whole job is overhead: per item, wall and CPU).

``--plan N``: a job of N samples of ``farm_noop`` on the local backend with one worker and shard
size 1 (N work items): seconds from ``run_job`` to the first dispatched item, the driver's RSS
growth then and at its peak (the end: summaries read the journal back), the journal's size, and
the whole run (per-item overhead of the local backend).
"""

from __future__ import annotations

import os

os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")  # before ray: loopback only

import argparse  # noqa: E402
import json  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

HERE = Path(__file__).resolve().parent
TOYS = HERE.parent / "tests" / "renderfarm"
for p in (HERE, TOYS):
    sys.path.insert(0, str(p))
os.environ["PYTHONPATH"] = os.pathsep.join([str(HERE), str(TOYS), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)
TICK = os.sysconf("SC_CLK_TCK")


def tree_cpu(root: int) -> dict[int, float]:
    """CPU seconds (user + system) of ``root`` and every descendant alive now, by pid."""
    parent, cpu = {}, {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                fields = open(f"/proc/{d}/stat").read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            parent[int(d)] = int(fields[1])
            cpu[int(d)] = (int(fields[11]) + int(fields[12])) / TICK
    keep, frontier = {root}, [root]
    while frontier:
        kids = [p for p, pp in parent.items() if pp in frontier and p not in keep]
        keep.update(kids)
        frontier = kids
    return {p: cpu[p] for p in keep if p in cpu}


def cpu_delta(before: dict[int, float], after: dict[int, float]) -> float:
    return sum(c - before.get(p, 0.0) for p, c in after.items())


def self_cpu() -> float:
    t = os.times()
    return t.user + t.system


def ray_run(nodes: int, scenario: str, config: dict, shard_size: int) -> dict:
    import ray
    from ray.cluster_utils import Cluster

    from sceneforge.renderfarm import run_job

    cluster = Cluster(
        initialize_head=True, head_node_args={"num_cpus": 1, "include_dashboard": False, "object_store_memory": 80 * 2**20}
    )
    for _ in range(nodes - 1):
        cluster.add_node(num_cpus=1, object_store_memory=80 * 2**20)
    cluster.wait_for_nodes()
    ray.init(address=cluster.address, include_dashboard=False, log_to_driver=False)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            before, d0, t0 = tree_cpu(os.getpid()), self_cpu(), time.perf_counter()
            summary = run_job(scenario, config, Path(tmp), backend="ray", workers=nodes, shard_size=shard_size, progress=False)
            wall, after, d1 = time.perf_counter() - t0, tree_cpu(os.getpid()), self_cpu()
    finally:
        ray.shutdown()
        cluster.shutdown()
    n, items = summary["samples"], -(-summary["samples"] // shard_size)
    return {
        "nodes": nodes,
        "scenario": scenario,
        "samples": n,
        "items": items,
        "wall_s": round(wall, 2),
        "samples_per_s": round(n / wall, 1),
        "cpu_s_per_sample": round(cpu_delta(before, after) / n, 4),
        "driver_cpu_ms_per_item": round(1000 * (d1 - d0) / items, 2),
        "wall_ms_per_item": round(1000 * wall / items, 2),
        "complete": summary["complete"],
    }


def rss_mb() -> float:
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return 0.0


def rss_now() -> float:
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def plan_run(n: int) -> dict:
    """A job of ``n`` single-sample items: start-up, driver memory, journal size, per-item cost."""
    import logging

    from sceneforge.renderfarm import run_job
    from sceneforge.renderfarm.scheduler import Scheduler

    first: list[float] = []
    submit = Scheduler.run

    def timed_run(self, pool):  # the moment the scheduler starts dispatching
        first.append((time.perf_counter(), rss_now()))
        return submit(self, pool)

    Scheduler.run = timed_run
    logging.getLogger("renderfarm").setLevel(logging.ERROR)
    with tempfile.TemporaryDirectory() as tmp:
        base, now0, t0, c0 = rss_mb(), rss_now(), time.perf_counter(), self_cpu()
        summary = run_job("farm_noop", {"n": n}, Path(tmp), workers=1, shard_size=1, progress=False)
        wall, cpu = time.perf_counter() - t0, self_cpu() - c0
        journal = (Path(tmp) / ".farm" / "journal.sqlite").stat().st_size
    Scheduler.run = submit
    return {
        "plan_items": n,
        "start_s": round(first[0][0] - t0, 2),
        "driver_rss_growth_at_start_mb": round(first[0][1] - now0, 1),
        "driver_peak_rss_growth_mb": round(rss_mb() - base, 1),
        "journal_mb": round(journal / 2**20, 2),
        "run_s": round(wall, 1),
        "wall_ms_per_item": round(1000 * wall / n, 3),
        "driver_cpu_ms_per_item": round(1000 * cpu / n, 3),
        "complete": summary["complete"],
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--nodes", default="1,2,4")
    ap.add_argument("--n", type=int, default=240, help="toy samples per run")
    ap.add_argument("--size", type=int, default=64)
    ap.add_argument("--noop-n", type=int, default=2000, help="noop samples per run (shard size 1: items)")
    ap.add_argument("--plan", type=int, default=100_000, help="items in the plan test (0: skip)")
    a = ap.parse_args(argv)
    rows = []
    for k in [int(x) for x in a.nodes.split(",") if x]:
        rows.append(ray_run(k, "farm_toy_cpu", {"n": a.n, "seed": 0, "size": a.size}, shard_size=8))
        print(json.dumps(rows[-1]), flush=True)
        rows.append(ray_run(k, "farm_noop", {"n": a.noop_n}, shard_size=1))
        print(json.dumps(rows[-1]), flush=True)
    if a.plan:
        print(json.dumps(plan_run(a.plan)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
