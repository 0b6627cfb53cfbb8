"""DSI-style video throughput: clips/s for 16-frame 224² clips with all 4 variants.

Run: ``python benchmarks/videos.py [--clips 12] [--farm-clips 40] [--workers 2] [--env city]``
(or ``sceneforge bench videos -- --clips 12``).

Measures, in the same run and on the same clips:

1. **baseline**: rendering the std frames only (one server, lit pass, no visibility checks,
   no encoding; after an untimed warm-up pass) — the floor any video pipeline pays;
2. **inline**: the full per-clip pipeline on one worker and one server (sampling, rendering,
   per-frame visibility, 4 H.264 encodes, record), with a per-stage breakdown;
3. **articulated** (when the ``articulation`` option exists): the same inline pipeline with
   subjects and distractors drawn as posed rigs, and the cost of animation per frame
   (articulated minus rigid seconds per clip, over the frames of a clip);
4. **farm**: ``renderfarm.run_job`` with ``--workers`` local workers (one server each),
   including process and server start-up.

and prints clips/s, the ratio of each to the baseline, and the projected wall time for the
DSI-scale target (issue 38: 1,000 clips x 4 variants in <= 10 minutes on 2 cores at the default
16 frames, i.e. >= 1.67 clips/s). Timings on a shared machine are noisy: compare ratios measured
in one run.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

TARGET_MINUTES = 10.0
TARGET_CLIPS_PER_S = 1000 / (TARGET_MINUTES * 60)
N_FRAMES = 16


def _config(args, n: int, **extra) -> dict:
    return {"env": args.env, "n": n, "seed": args.seed, "image_size": 224, "motion": {"n_frames": N_FRAMES, "fps": 8.0}, **extra}


class CpuClock:
    """CPU seconds of this process plus the render server's (``/proc/PID/stat``): on a machine
    shared with other jobs, wall time measures the share we got, CPU time the work we did."""

    def __init__(self, server_pid: int):
        self.pid = server_pid
        self.t0 = self.now()

    def now(self) -> float:
        fields = Path(f"/proc/{self.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return time.process_time() + (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def lap(self) -> float:
        now = self.now()
        t, self.t0 = now - self.t0, now
        return t


def articulation_available() -> bool:
    """True once the videos config has the ``articulation`` option (issue 38 item 1)."""
    from sceneforge.scenarios.videos.config import VideoConfig

    return "articulation" in VideoConfig.__dataclass_fields__


def bench_baseline(args, server: str, pid: int) -> tuple[float, float]:
    """Wall and CPU seconds per clip to render the std frames only."""
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
            videos.render_frames(client, clip, subject, scenery, ctx.env.world, ctx.fov, ctx.size, ("lit",), visibility=False)
        t0, cpu = time.perf_counter(), CpuClock(pid)
        for clip, scenery in clips:
            subject = Actor("subject", ctx.subject_ids[0], mo.subject_transform(clip, 0))
            videos.render_frames(client, clip, subject, scenery, ctx.env.world, ctx.fov, ctx.size, ("lit",), visibility=False)
        return (time.perf_counter() - t0) / args.clips, cpu.lap() / args.clips


def bench_inline(args, server: str, pid: int, out: Path, **extra) -> tuple[float, float, dict]:
    """Wall and CPU seconds per clip for the full pipeline on one worker, and a stage breakdown
    (wall)."""
    from sceneforge.engine.client import RenderClient
    from sceneforge.scenarios import videos

    cfg = _config(args, args.clips, **extra)
    ctx = videos.load_context(videos.VideoConfig.from_dict(cfg))
    stages: Counter = Counter()
    with RenderClient(server) as client:
        t0, cpu = time.perf_counter(), CpuClock(pid)
        for i in range(args.clips):
            t = time.perf_counter()
            made = videos.make_clip(ctx, client, i, Counter())
            stages["sample+render+visibility"] += time.perf_counter() - t
            t = time.perf_counter()
            videos.write_clip(out, videos.clip_record(ctx, i, made), made["frames"])
            stages["questions+4 encodes+record"] += time.perf_counter() - t
        total, cpu_s = time.perf_counter() - t0, cpu.lap()
    return total / args.clips, cpu_s / args.clips, {k: round(v / args.clips, 3) for k, v in stages.items()}


def bench_articulation(args, server: str, pid: int, out: Path) -> dict:
    """Rigid and articulated clips of the same indices and subjects, interleaved clip by clip
    (so load drift on a shared machine hits both alike): CPU-s per clip of each arm (this
    process + the server; the whole per-clip pipeline of ``run`` incl. graphs and ground truth),
    and the CPU-s spent posing the rigs (``scenario._articulated``, timed in place)."""
    import numpy as np

    from sceneforge.engine.client import RenderClient
    from sceneforge.scenarios.videos import scenario as sc

    extra = {"subjects": list(args.articulated_subjects)}
    ctxs = {
        flag: sc.load_context(sc.VideoConfig.from_dict(_config(args, args.clips, articulation=flag, **extra)))
        for flag in (False, True)
    }
    cpu_s, posing, original = {False: [], True: []}, [0.0], sc._articulated

    def timed(*a, **k):
        t = time.process_time()
        try:
            return original(*a, **k)
        finally:
            posing[0] += time.process_time() - t

    sc._articulated = timed
    try:
        with RenderClient(server) as client:
            clock = CpuClock(pid)
            for i in range(args.clips):
                for flag in (False, True):
                    made = sc.make_clip(ctxs[flag], client, i, Counter())
                    sc.write_graphs(ctxs[flag], out / str(flag), i, made)
                    sc.write_ground_truth(ctxs[flag], out / str(flag), i, made)
                    sc.write_clip(out / str(flag), sc.clip_record(ctxs[flag], i, made), made["frames"])
                    cpu_s[flag].append(clock.lap())
    finally:
        sc._articulated = original
    diff = np.asarray(cpu_s[True]) - np.asarray(cpu_s[False])
    return {
        "rigid": float(np.mean(cpu_s[False])),
        "articulated": float(np.mean(cpu_s[True])),
        "diff": float(diff.mean()),
        "diff_sem": float(diff.std(ddof=1) / np.sqrt(len(diff))) if len(diff) > 1 else 0.0,
        "posing": posing[0] / args.clips,
    }


def _job_cpu() -> float:
    """CPU seconds of this process and of every finished (reaped) descendant: the farm's
    workers and, through them, their render servers."""
    import resource

    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + ru.ru_utime + ru.ru_stime


def bench_farm(args, out: Path) -> tuple[float, float, float, float]:
    """(seconds per clip including start-up, marginal seconds per clip, marginal CPU-s per clip,
    start-up CPU-s): a 2-clip job measures the start-up (workers, servers, asset loading), a
    ``--farm-clips`` job the rest."""
    from sceneforge.renderfarm.job import run_job

    times, cpus = [], []
    for name, n in (("small", 2), ("big", args.farm_clips)):
        t0, c0 = time.perf_counter(), _job_cpu()
        summary = run_job("scenarios.videos", _config(args, n), out / name, workers=args.workers, progress=False)
        times.append(time.perf_counter() - t0)
        cpus.append(_job_cpu() - c0)
        if not summary.get("finalized"):
            raise SystemExit(f"farm run did not finish: {summary.get('failed')}")
    marginal_cpu = (cpus[1] - cpus[0]) / (args.farm_clips - 2)
    return (times[1] / args.farm_clips, (times[1] - times[0]) / (args.farm_clips - 2), marginal_cpu, cpus[0] - 2 * marginal_cpu)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--clips", type=int, default=12, help="clips for baseline and inline runs")
    p.add_argument("--farm-clips", type=int, default=40, help="clips for the farm run (> 2)")
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--env", default="city")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--no-articulated", action="store_true", help="skip the articulated row")
    p.add_argument(
        "--articulated-subjects",
        nargs="+",
        default=["human", "deer", "husky", "camel", "taxi", "bike"],
        help="subject classes of the articulated comparison (legs and wheels)",
    )
    args = p.parse_args(argv)
    from sceneforge.engine.server.launch import start_server

    articulated = articulation_available() and not args.no_articulated
    with tempfile.TemporaryDirectory(prefix="bench-videos-") as tmp, start_server() as srv:
        pid = srv.proc.pid
        base, base_cpu = bench_baseline(args, srv.address, pid)
        inline, inline_cpu, stages = bench_inline(args, srv.address, pid, Path(tmp) / "inline")
        art = bench_articulation(args, srv.address, pid, Path(tmp) / "art") if articulated else None
        farm = bench_farm(args, Path(tmp) / "farm")
    print(f"{N_FRAMES}-frame 224² clips, env {args.env}, 4 variants each (CPU = this process + its server)")
    print(f"baseline  render std frames only : {1 / base:6.2f} clips/s  ({base:.3f} s/clip, {base_cpu:.3f} CPU-s/clip)")
    print(
        f"inline    full pipeline, 1 worker: {1 / inline:6.2f} clips/s  ({inline:.3f} s/clip, {inline_cpu:.3f} CPU-s/clip; "
        f"{inline / base:.2f}x baseline wall, {inline_cpu / base_cpu:.2f}x baseline CPU)"
    )
    print(f"          stages (s/clip)        : {stages}")
    if art:
        subjects = " ".join(args.articulated_subjects)
        print(f"articul.  subjects {subjects}, {args.clips} clips each way, interleaved, incl. graphs + ground truth:")
        print(
            f"          rigid {art['rigid']:.3f} / articulated {art['articulated']:.3f} CPU-s/clip "
            f"({art['articulated'] / art['rigid']:.2f}x rigid, {art['articulated'] / base_cpu:.2f}x baseline CPU)"
        )
        per_frame, sem = 1000 * art["diff"] / N_FRAMES, 1000 * art["diff_sem"] / N_FRAMES
        print(
            f"          animation cost         : {per_frame:+.1f} ± {sem:.1f} "
            f"CPU-ms per frame (articulated minus rigid, mean ± s.e. over clips); posing the rigs alone "
            f"{1000 * art['posing'] / N_FRAMES:.1f} CPU-ms per frame"
        )
    else:
        print("articul.  skipped (no 'articulation' option in this tree, or --no-articulated)")
    farm_total, farm, farm_cpu, startup_cpu = farm
    startup = farm_total * args.farm_clips - farm * args.farm_clips
    print(f"farm      {args.workers} workers, {args.farm_clips} clips incl. start-up: {1 / farm_total:6.2f} clips/s")
    print(
        f"farm      {args.workers} workers, marginal (start-up excluded): {1 / farm:6.2f} clips/s  "
        f"({base / farm:.2f}x the baseline rate); {farm_cpu:.3f} CPU-s/clip of all job processes "
        f"({farm_cpu / base_cpu:.2f}x baseline CPU), start-up {startup_cpu:.1f} CPU-s"
    )
    wall = (startup + 1000 * farm) / 60
    print(f"target    1,000 clips x 4 variants <= {TARGET_MINUTES:.0f} min = {TARGET_CLIPS_PER_S:.3f} clips/s")
    print(
        f"          farm (measured wall)   : {(1 / farm) / TARGET_CLIPS_PER_S:.2f}x the target rate -> {wall:.1f} min "
        f"incl. {startup:.0f} s start-up ({'met' if wall <= TARGET_MINUTES else 'NOT met'})"
    )
    rows = [("farm", farm_cpu), ("articulated", farm_cpu + art["diff"] if art else None)]
    for name, cpu_s in rows:
        if cpu_s is not None:  # 2 dedicated cores = 2 CPU-s per s; the farm keeps both busy
            proj = (startup_cpu / args.workers + 1000 * cpu_s / args.workers) / 60
            print(
                f"          {name:<11} from CPU-s: 1,000 clips = {1000 * cpu_s / 60:.1f} CPU-min -> {proj:.1f} min on "
                f"{args.workers} dedicated cores incl. start-up ({'met' if proj <= TARGET_MINUTES else 'NOT met'})"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
