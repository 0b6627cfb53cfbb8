"""Template-VQA generation time against SpaRRTa generation, and where a VQA image's time goes.

Run: ``python benchmarks/vqa.py [--env city] [--n 15] [--seed 0] [--rounds 1]``
(or ``sceneforge bench vqa --n 15``).

1. **end to end, back to back** (the ratio issue 52 item 7 asks for): ``sceneforge vqa --env E
   --n N --seed S --workers 1`` and ``sceneforge generate --env E --task ego --n N --seed S
   --workers 1``, each in a fresh process (server start-up included), alternately for
   ``--rounds`` rounds under ``nice``; prints each time, the median of each and **the ratio
   vqa / generate** against the target (**<= 4x**). The machine may be shared: compare ratios
   measured in one run, never times across runs.
2. **in process** (one server, images 1..n after an untimed image 0): seconds per image split into
   the candidate views (geometry + the labelled objects' pixel counts), the written view (render,
   full measurement, relations, record JSON), and the counts: scenes drawn and views tried per
   image, and the rejections by rule.

Before issue 52 (a quiet machine): 59.7 s vs 7.0 s for n = 15 (8.6x), a city image trying ~127
candidate views, each counting the pixels of all ~70 objects.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

TARGET_RATIO = 4.0
CLI = "import sys; from sceneforge.cli import main; sys.exit(main(sys.argv[1:]))"  # the `sceneforge` script


def timed_command(args: list[str], out: Path) -> float:
    """Seconds of one ``sceneforge`` command in a fresh, niced process (exit status checked)."""
    cmd = ["nice", "-n", "10", sys.executable, "-c", CLI, *args, "--out", str(out), "--workers", "1", "--quiet"]
    env = {**os.environ, "SCENEFORGE_NO_FETCH": "1"}
    t = time.perf_counter()
    r = subprocess.run(cmd, env=env, capture_output=True, text=True)
    dt = time.perf_counter() - t
    if r.returncode != 0:
        raise SystemExit(f"{' '.join(args)} failed ({r.returncode}): {r.stderr.strip()[-400:]}")
    return dt


def end_to_end(env: str, n: int, seed: int, rounds: int, tmp: Path) -> dict:
    common = ["--env", env, "--n", str(n), "--seed", str(seed)]
    times: dict[str, list[float]] = {"vqa": [], "generate": []}
    for k in range(rounds):
        times["vqa"].append(timed_command(["vqa", *common], tmp / f"vqa{k}"))
        times["generate"].append(timed_command(["generate", "--task", "ego", *common], tmp / f"gen{k}"))
    return times


def in_process(env: str, n: int, seed: int, tmp: Path) -> dict:
    """Images 1..n made by ``scenario.Maker`` on one server, the parts of each timed."""
    from sceneforge.engine.client import RenderClient
    from sceneforge.engine.server.launch import start_server
    from sceneforge.renderfarm.auto import inline_threads
    from sceneforge.scenarios.vqa import scenario

    class Timed(scenario.Maker):
        def write_if_askable(self, *a):
            t = time.perf_counter()
            out = super().write_if_askable(*a)
            self.stats["written_view_s" if out is not None else "refused_view_s"] += time.perf_counter() - t
            return out

    cfg = scenario.parse_config({"envs": [env], "n": n + 1, "seed": seed})
    spec = scenario.server_spec(cfg.to_dict())
    counts: Counter = Counter()
    total = 0.0
    with (
        start_server(assets=list(spec.assets), licenses=spec.licenses, renderer=spec.renderer, threads=inline_threads()) as srv,
        RenderClient(srv.address) as client,
    ):
        maker = Timed(cfg, client, tmp / "inproc")
        maker.stats = Counter()
        maker.make(env, 0)
        maker.stats.clear()
        for i in range(1, n + 1):
            t = time.perf_counter()
            maker.make(env, i)
            total += time.perf_counter() - t
            counts.update(maker.last_counts)
    return {"total": total, "stats": maker.stats, "counts": counts, "n": n}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--env", default="city")
    p.add_argument("--n", type=int, default=15, help="images (both commands)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--rounds", type=int, default=1, help="back-to-back vqa/generate pairs")
    p.add_argument("--skip-in-process", action="store_true")
    args = p.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench-vqa-") as tmp:
        t = end_to_end(args.env, args.n, args.seed, args.rounds, Path(tmp))
        v, g = statistics.median(t["vqa"]), statistics.median(t["generate"])
        ratio = v / g
        print(f"{args.env}, n={args.n}, seed {args.seed}, {args.rounds} round(s), fresh processes, nice 10, back to back")
        print(f"  sceneforge vqa                : {', '.join(f'{x:.1f}' for x in t['vqa'])} s (median {v:.1f} s)")
        print(f"  sceneforge generate --task ego: {', '.join(f'{x:.1f}' for x in t['generate'])} s (median {g:.1f} s)")
        verdict = "meets" if ratio <= TARGET_RATIO else "misses"
        print(f"  ratio vqa / generate          : {ratio:.2f}x (target <= {TARGET_RATIO:.0f}x: {verdict}; before issue 52: 8.6x)")
        if not args.skip_in_process:
            r = in_process(args.env, min(args.n, 5), args.seed, Path(tmp))
            n, s, c = r["n"], r["stats"], r["counts"]
            views = r["total"] - s["written_view_s"] - s["refused_view_s"]
            print(f"  in process, images 1..{n}: {r['total'] / n:.2f} s/image")
            print(f"    candidate views (geometry, labelled pixel counts): {views / n:.2f} s/image")
            print(f"    written view (render, full measure, relations, record): {s['written_view_s'] / n:.2f} s/image")
            print(f"    refused after the full measure (border, mask): {s['refused_view_s'] / n:.2f} s/image")
            print(f"    scenes drawn {c['scenes'] / n:.1f}/image, views tried {c['views'] / n:.1f}/image")
            rules = {k: v for k, v in sorted(c.items()) if k not in ("scenes", "views")}
            print(f"    rejections: {rules}")
    return 0 if ratio <= TARGET_RATIO else 1


if __name__ == "__main__":
    sys.exit(main())
