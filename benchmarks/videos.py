"""DSI-style video throughput: clips/s for 16-frame 224² clips with all 4 variants.

Run: ``python benchmarks/videos.py [--clips 12] [--workers 2] [--env city]``
(or ``sceneforge bench videos -- --clips 12``).

Measures, in the same run and on the same clips:

1. **baseline**: rendering the std frames only (one server, lit pass, no visibility checks,
   no encoding; after an untimed warm-up pass) — the floor any video pipeline pays;
2. **inline**: the full per-clip pipeline on one worker and one server (sampling, rendering,
   per-frame visibility, 4 H.264 encodes, record), with a per-stage breakdown;
3. **farm**: ``renderfarm.run_job`` with ``--workers`` local workers (one server each),
   including process and server start-up.

and prints clips/s, the ratio of each to the baseline, and the projected time for the DSI-scale
target (1,000 clips x 4 variants in under 30 minutes on 2 cores, i.e. >= 0.556 clips/s).
Timings on a shared machine are noisy: compare ratios measured in one run.
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

TARGET_CLIPS_PER_S = 1000 / (30 * 60)


def _config(args, n: int) -> dict:
    return {"env": args.env, "n": n, "seed": args.seed, "image_size": 224,
            "motion": {"n_frames": 16, "fps": 8.0}}


def bench_baseline(args, server: str) -> float:
    """Seconds per clip to render the std frames only."""
    from sceneforge.engine.client import RenderClient
    from sceneforge.engine.world import Actor
    from sceneforge.scenarios.videos import motion as mo
    from sceneforge.scenarios import videos

    ctx = videos.load_context(videos.VideoConfig.from_dict(_config(args, args.clips)))
    clips = []
    for i in range(args.clips):  # sampling is not timed here
        rng = videos.clip_rng(ctx.cfg, ctx.env.name, i)
        pattern = ctx.cfg.motion.patterns[i % 9]
        clip = videos.sample_clip(ctx, rng, pattern, ctx.subject_ids[i % len(ctx.subject_ids)], Counter())
        clips.append((clip, ctx.env.clutter(rng, keep_out=mo.keep_out(clip))))
    with RenderClient(server) as client:
        for clip, scenery in clips:  # warm-up, untimed: mesh uploads, shader compiles, GL targets
            subject = Actor("subject", ctx.subject_ids[0], mo.subject_transform(clip, 0))
            videos.render_frames(client, clip, subject, scenery, ctx.env.world, ctx.fov, ctx.size,
                                 ("lit",), visibility=False)
        t0 = time.perf_counter()
        for clip, scenery in clips:
            subject = Actor("subject", ctx.subject_ids[0], mo.subject_transform(clip, 0))
            videos.render_frames(client, clip, subject, scenery, ctx.env.world, ctx.fov, ctx.size,
                                 ("lit",), visibility=False)
        return (time.perf_counter() - t0) / args.clips


def bench_inline(args, server: str, out: Path) -> tuple[float, dict]:
    """Seconds per clip for the full pipeline on one worker, and a stage breakdown."""
    from sceneforge.engine.client import RenderClient
    from sceneforge.scenarios import videos

    cfg = _config(args, args.clips)
    ctx = videos.load_context(videos.VideoConfig.from_dict(cfg))
    stages: Counter = Counter()
    with RenderClient(server) as client:
        t0 = time.perf_counter()
        for i in range(args.clips):
            t = time.perf_counter()
            made = videos.make_clip(ctx, client, i, Counter())
            stages["sample+render+visibility"] += time.perf_counter() - t
            t = time.perf_counter()
            videos.write_clip(out, videos.clip_record(ctx, i, made), made["frames"])
            stages["questions+4 encodes+record"] += time.perf_counter() - t
        total = time.perf_counter() - t0
    return total / args.clips, {k: round(v / args.clips, 3) for k, v in stages.items()}


def bench_farm(args, out: Path) -> tuple[float, float]:
    """(seconds per clip including start-up, marginal seconds per clip): a 2-clip job measures
    the start-up (workers, servers, asset loading), a ``--farm-clips`` job the rest."""
    from sceneforge.renderfarm.job import run_job

    times = []
    for name, n in (("small", 2), ("big", args.farm_clips)):
        t0 = time.perf_counter()
        summary = run_job("scenarios.videos", _config(args, n), out / name, workers=args.workers, progress=False)
        times.append(time.perf_counter() - t0)
        if not summary.get("finalized"):
            raise SystemExit(f"farm run did not finish: {summary.get('failed')}")
    return times[1] / args.farm_clips, (times[1] - times[0]) / (args.farm_clips - 2)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--clips", type=int, default=12, help="clips for baseline and inline runs")
    p.add_argument("--farm-clips", type=int, default=40, help="clips for the farm run (> 2)")
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--env", default="city")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    from sceneforge.engine.server.launch import start_server

    with tempfile.TemporaryDirectory(prefix="bench-videos-") as tmp, start_server() as srv:
        base = bench_baseline(args, srv.address)
        inline, stages = bench_inline(args, srv.address, Path(tmp) / "inline")
        farm = bench_farm(args, Path(tmp) / "farm")
    print(f"16-frame 224² clips, env {args.env}, 4 variants each")
    print(f"baseline  render std frames only : {1 / base:6.2f} clips/s  ({base:.3f} s/clip)")
    print(f"inline    full pipeline, 1 worker: {1 / inline:6.2f} clips/s  ({inline / base:.2f}x baseline time)")
    print(f"          stages (s/clip)        : {stages}")
    farm_total, farm = farm
    print(f"farm      {args.workers} workers, {args.farm_clips} clips incl. start-up: {1 / farm_total:6.2f} clips/s")
    print(f"farm      {args.workers} workers, marginal (start-up excluded): {1 / farm:6.2f} clips/s  "
          f"({base / farm:.2f}x the baseline rate)")
    print(f"target    1,000 clips x 4 variants < 30 min = {TARGET_CLIPS_PER_S:.3f} clips/s; farm marginal is "
          f"{(1 / farm) / TARGET_CLIPS_PER_S:.2f}x the target rate -> 1,000 clips in {1000 * farm / 60:.1f} min "
          f"(+ start-up)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
