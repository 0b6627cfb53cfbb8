"""Benchmark: labelled SpaRRTa images per second, end to end, vs the raw render rate.

    python benchmarks/generate.py [--n 60] [--task ego|allo|both] [--env desert] [--size 224]
    sceneforge bench generate --n 60

Starts one embedded server, warms it up, then measures in the same run:
  1. raw render rate: ``lit`` renders/s of a typical scene (source, target, clutter) at SIZE²;
  2. visibility calls/s (full + per-object-alone passes, one call);
  3. end to end: ``scenarios.sparrta`` samples/s with every rule on (visibility included),
     written to a temp dir (JPEG + params + records);
and prints the ratio end-to-end / raw, plus where the time goes (per-call timing of the client
and rejections / visibility renders per accepted sample). Timings on a shared machine are noisy:
compare the ratio, not the absolute numbers.
"""
from __future__ import annotations

import argparse
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path


class TimedClient:
    """Forwards to a real RenderClient and adds up the seconds spent in each method."""

    def __init__(self, client):
        self._c = client
        self.seconds: dict[str, float] = defaultdict(float)
        self.calls: Counter = Counter()

    def __getattr__(self, name):
        attr = getattr(self._c, name)
        if not callable(attr):
            return attr

        def timed(*a, **k):
            t = time.perf_counter()
            try:
                return attr(*a, **k)
            finally:
                self.seconds[name] += time.perf_counter() - t
                self.calls[name] += 1
        return timed


def raw_rates(client, session, cfg, reps: int) -> tuple[float, float]:
    """Renders/s and visibility calls/s on the first scene of the job, same camera each time."""
    from collections import Counter as C

    from scenarios.sparrta import scenario as sparrta
    from scenarios.sampling import sample_rng
    from scenarios.sparrta.scene import sample_view

    unit = session_units(cfg)[0]
    st = sparrta.setting_for(cfg, session.env(unit.env), unit.task)
    group = session.group(unit, 0, 0, st)
    session.show(unit, group)
    view = sample_view(sample_rng(0, "bench", "ego", "x", 0), group, "ego", "left", st,
                       session.env(unit.env).ground, None, C())
    client.set_camera(0, view.camera)
    t = time.perf_counter()
    for _ in range(reps):
        client.render(0, ("lit",))
    render_rate = reps / (time.perf_counter() - t)
    t = time.perf_counter()
    for _ in range(reps):
        client.visibility(0, ["source", "target"])
    return render_rate, reps / (time.perf_counter() - t)


def session_units(cfg):
    from scenarios.sparrta import scenario as sparrta
    return sparrta.units_of(cfg)


def end_to_end(address: str, cfg, out: Path):
    """Run every sample of the job through one Session; returns (seconds, records, TimedClient)."""
    from engine.client import RenderClient
    from scenarios.contract import ShardResult
    from scenarios.sparrta import scenario as sparrta
    from scenarios.sparrta.config import locate
    from scenarios.sparrta.record import load_record

    units = session_units(cfg)
    n = sum(u.n for u in units)
    from renderfarm.manifest import claim_output

    out.mkdir(parents=True, exist_ok=True)
    claim_output(out, "scenarios.sparrta", sparrta.plan(cfg.to_dict()))
    with RenderClient(address) as raw:
        client = TimedClient(raw)
        session = sparrta.Session(cfg, client, out)
        t = time.perf_counter()
        sparrta._run_todo(session, units, list(range(n)), ShardResult(0), None)
        seconds = time.perf_counter() - t
    recs = [load_record(out, *locate(units, g)) for g in range(n)]
    return seconds, recs, client


def report(n, seconds, recs, client, render_rate, vis_rate) -> None:
    done = [r for r in recs if r]
    rate = len(done) / seconds
    rej = Counter()
    for r in done:
        rej.update(r["rejections"])
    vis_per = sum(r["renders"] for r in done) / max(1, len(done))
    print(f"raw render rate (lit, one scene):   {render_rate:7.1f} renders/s")
    print(f"visibility calls:                   {vis_rate:7.1f} calls/s")
    print(f"end to end (labelled, all rules):   {rate:7.1f} images/s   ({len(done)}/{n} samples in {seconds:.1f} s)")
    print(f"ratio end-to-end / raw render:      {rate / render_rate:7.2f}")
    print(f"per accepted sample: {vis_per:.2f} visibility calls, {sum(rej.values()) / max(1, len(done)):.1f} "
          f"rejected candidates ({', '.join(f'{k} {v / len(done):.1f}' for k, v in rej.most_common())})")
    server = sum(client.seconds.values())
    print(f"time split: client calls {server / seconds:.0%} of wall time "
          f"({', '.join(f'{k} {v / seconds:.0%} ({client.calls[k]})' for k, v in sorted(client.seconds.items(), key=lambda kv: -kv[1]))}); "
          f"sampling + encoding + writing {1 - server / seconds:.0%}")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=60, help="samples per task")
    p.add_argument("--task", choices=["ego", "allo", "both"], default="ego")
    p.add_argument("--env", default="desert")
    p.add_argument("--size", type=int, default=224)
    p.add_argument("--reps", type=int, default=40, help="renders for the raw rate")
    args = p.parse_args(argv)

    from engine.client import RenderClient
    from engine.server.launch import start_server
    from scenarios.sparrta import scenario as sparrta
    from scenarios.sparrta.config import parse_config

    tasks = ["ego", "allo"] if args.task == "both" else [args.task]
    cfg = parse_config({"envs": [args.env], "tasks": tasks, "n": args.n, "size": args.size, "seed": 12345})
    with tempfile.TemporaryDirectory() as tmp, start_server(port=0) as srv:
        warm = parse_config({"envs": [args.env], "tasks": tasks, "n": 4, "size": args.size, "seed": 1})
        end_to_end(srv.address, warm, Path(tmp) / "warm")
        with RenderClient(srv.address) as c:
            render_rate, vis_rate = raw_rates(c, sparrta.Session(cfg, c, Path(tmp) / "raw"), cfg, args.reps)
        seconds, recs, client = end_to_end(srv.address, cfg, Path(tmp) / "run")
    print(f"sceneforge bench generate: env {args.env}, task {args.task}, {args.size}x{args.size}, "
          f"1 server + 1 client process")
    report(sum(u.n for u in session_units(cfg)), seconds, recs, client, render_rate, vis_rate)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
