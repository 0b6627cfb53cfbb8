"""Benchmark: render-farm scaling (1 vs N local workers) and the cost of resuming a finished job.

    python benchmarks/farm.py [--n 160] [--size 64] [--env desert] [--task ego] [--workers 2]
    sceneforge bench farm --n 160

Runs the same ``scenarios.sparrta`` job four times in fresh temp dirs, in one process:
  0. baseline: inline, no farm (``run_job(..., backend="inline")``: one server, one process),
  1. one farm worker (farm overhead = 0 vs 1), 2. ``--workers`` workers (target: >= 1.7x on 2
  free cores), 3. the finished job of (2) again (time-to-resume: manifest + journal check, no
  workers started).
Throughput is given twice: end to end (including worker + server start-up) and steady state
(samples completed after every worker finished its first shard, from the job's JSON log), since
start-up is a fixed cost that small ``--n`` exaggerates. Also checks that both datasets are
byte-identical. On a shared machine the numbers are noisy: compare the ratio, not absolutes.
"""

from __future__ import annotations

import argparse
import hashlib
import tempfile
import time
from pathlib import Path


def digest(out_dir: Path) -> str:
    h = hashlib.sha256()
    for path in sorted(Path(out_dir).rglob("*")):
        rel = path.relative_to(out_dir)
        if path.is_file() and rel.parts[0] != ".farm":
            h.update(str(rel).encode() + b"\0" + path.read_bytes())
    return h.hexdigest()


def steady_rate(out_dir: Path) -> float:
    """Samples/s once every worker has finished its first shard (start-up excluded), to the end."""
    from sceneforge.renderfarm.jsonlog import read_log

    done = [e for e in read_log(out_dir / ".farm" / "log.jsonl") if e.get("event") == "shard_done"]
    firsts: dict[str, float] = {}
    for e in done:
        firsts.setdefault(e["worker"], e["time"])
    start = max(firsts.values(), default=0.0)
    after = [e for e in done if e["time"] > start]
    span = after[-1]["time"] - start if after else 0.0
    return sum(e["done"] for e in after) / span if span > 0 else float("nan")


def timed_job(config: dict, out_dir: Path, workers: int) -> tuple[float, dict]:
    from sceneforge.renderfarm import run_job

    t0 = time.perf_counter()
    summary = run_job("scenarios.sparrta", config, out_dir, workers=workers, progress=False)
    return time.perf_counter() - t0, summary


def timed_inline(config: dict, out_dir: Path) -> float:
    from sceneforge.renderfarm import run_job

    t0 = time.perf_counter()
    run_job("scenarios.sparrta", config, out_dir, backend="inline", progress=False)
    return time.perf_counter() - t0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=160, help="samples per job (default 160)")
    p.add_argument("--size", type=int, default=64, help="image size in px (default 64)")
    p.add_argument("--env", default="desert")
    p.add_argument("--task", default="ego", choices=["ego", "allo"])
    p.add_argument("--workers", type=int, default=2, help="workers of the parallel run (default 2)")
    a = p.parse_args(argv)
    config = {"envs": [a.env], "tasks": [a.task], "n": a.n, "size": a.size}
    with tempfile.TemporaryDirectory(prefix="farm-bench-") as tmp:
        t0 = timed_inline(config, Path(tmp) / "inline")
        t1, s1 = timed_job(config, Path(tmp) / "w1", 1)
        tn, sn = timed_job(config, Path(tmp) / f"w{a.workers}", a.workers)
        tr, sr = timed_job(config, Path(tmp) / f"w{a.workers}", a.workers)
        same = digest(Path(tmp) / "w1") == digest(Path(tmp) / f"w{a.workers}")
        r1, rn = steady_rate(Path(tmp) / "w1"), steady_rate(Path(tmp) / f"w{a.workers}")
    print(
        f"farm benchmark: scenarios.sparrta {a.env}/{a.task}, n={a.n}, {a.size}px "
        f"(complete: {s1['complete']}/{sn['complete']}, byte-identical: {same})"
    )
    print(f"  inline   : {t0:7.2f} s  end-to-end {a.n / t0:6.2f} samples/s  (no farm; baseline)")
    print(f"  1 worker : {t1:7.2f} s  end-to-end {a.n / t1:6.2f} samples/s  steady {r1:6.2f} samples/s")
    print(f"  {a.workers} workers: {tn:7.2f} s  end-to-end {a.n / tn:6.2f} samples/s  steady {rn:6.2f} samples/s")
    print(f"  farm overhead with 1 worker: {t1 / t0:.2f}x the inline time")
    print(f"  scaling  : end-to-end {t1 / tn:.2f}x   steady {rn / r1:.2f}x   (target >= 1.7x on 2 free cores)")
    print(
        f"  resume of the finished job: {tr:.3f} s ({tr / tn * 100:.1f}% of the {a.workers}-worker run; "
        f"rendered {sr['rendered']})"
    )
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
