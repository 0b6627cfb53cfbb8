"""Benchmark: labelled SpaRRTa images per second, end to end, vs the raw render rate.

    python benchmarks/generate.py [--n 160] [--reps 80] [--task ego|allo|both] [--env all|desert,city] [--size 224]
                                  [--detail] [--repeats 1]
    sceneforge bench generate

Defaults (n = 160 samples per row, 80 raw renders of 8 scenes' views): a row's rate is a
property of the job's scenes, so it is measured over ~40 scene groups, not the ~10 of 40 samples,
and the raw rate over 8 scenes, not 1. With n = 40 (the
old default) one seed's first groups decided it: winter town ego made 2.77 visibility calls per
image on seed 12345's first 40 samples and 1.4-2.1 on other seeds' (2026-11-26), and its row
moved by a quarter with them; the raw rate over 20 frames moved by +-15 % run to run.

Starts one embedded server; for every (environment, task) it warms up on 4 samples and primes
the caches a long run has warm (every HDRI of the environment's look randomisation prefiltered,
every asset the environment can draw loaded on both sides: one-time costs that 20 samples would
otherwise carry), then measures in the same run:
  1. raw render rate: ``lit`` renders/s of the unit's scenes (source, target, clutter, the
     figure for allo) at SIZE², over one view from each of its first 8 scene groups that passes
     the geometric rules (the cost of a frame depends on what is in view: foliage), each rendered
     REPS/8 times, half just before and half just after the end-to-end run (the machine's
     speed drifts);
  2. end to end: ``scenarios.sparrta`` samples/s with every rule on (visibility included),
     written to a temp dir (JPEG + params + records);
and prints one row: labelled images/s, renders/s and their ratio, by wall clock and by CPU time
(client process with all its threads + the server process, from /proc), and visibility calls
per image. On a shared machine wall-clock numbers follow the load (printed at start and end);
CPU-time figures are steadier. ``--detail`` adds rejections and where the time goes per row.
``--repeats K`` measures each row K times (same config and seed, each run bracketed by its own raw
rate) and prints each run, then the run with the median wall ratio and the range: one run's city
ego ratio moved 0.43-0.59 within an hour on this 2-core machine (2026-11-26).
"""

from __future__ import annotations

import argparse
import math
import os
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
                out = attr(*a, **k)
            finally:
                self.seconds[name] += time.perf_counter() - t
                self.calls[name] += 1
            if name.endswith("_async"):  # the wait for the reply counts too (not the work done meanwhile)
                return self._timed_wait(name, out)
            return out

        return timed

    def _timed_wait(self, name: str, wait):
        def waited():
            t = time.perf_counter()
            try:
                return wait()
            finally:
                self.seconds[name] += time.perf_counter() - t

        if hasattr(wait, "discard"):  # a reply nobody will read (engine/wire.py)
            waited.discard = wait.discard
        return waited


def server_cpu(pid: int | None) -> float:
    """CPU seconds (user + system, all threads) the server process has used so far."""
    if pid is None:
        return 0.0
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class Clock:
    """Wall seconds and CPU seconds (this process, every thread, + the render server)."""

    def __init__(self, server_pid: int | None):
        self.pid = server_pid
        self.busy: float | None = None  # server seconds spent running commands (end_to_end sets it)

    def __enter__(self):
        self.server = server_cpu(self.pid)
        self.wall, self.cpu = time.perf_counter(), time.process_time() + self.server
        return self

    def __exit__(self, *exc):
        self.wall = time.perf_counter() - self.wall
        server = server_cpu(self.pid)
        self.cpu = time.process_time() + server - self.cpu
        self.server = server - self.server  # the server's share of ``cpu``


LEVEL_SWEEP = 12  # distances 2R·2^k: a level of detail needs 4x fewer triangles per doubling


def prime_caches(client, session, cfg) -> None:
    """Load what a long run has in its caches before timing: each HDRI of the environment's look
    randomisation (prefiltered once per server), every asset the environment can draw (meshes
    and each of their levels of detail on the server, shapes and sizes in the client). Samples
    are unchanged (caches are keyed by content)."""
    from sceneforge.engine.world import Actor, Camera, Transform
    from sceneforge.scenarios.world.look import server_world

    for unit in {u.env: u for u in session_units(cfg)}.values():
        env = session.env(unit.env)
        shapes = session.shapes(unit.env)
        classes = set(env.classes()) | {t.viewpoint_class for t in env.triples}
        ids = sorted({a for c in classes for a in env.variants(c, shapes.lib)})
        for a in ids:
            shapes(a)
            shapes.lib.size_cm(a)
        cam = Camera((0.0, 0.0, 200.0), fov_deg=90.0, width=cfg.size, height=cfg.size)
        radius = {a: 0.5 * math.hypot(*shapes.lib.size_cm(a)) for a in ids}
        for step in range(LEVEL_SWEEP):  # every asset at twice the last distance: each level of detail drawn
            client.reset()
            client.spawn(
                [
                    Actor(f"warm_{k}", a, Transform((d, d * (k / max(1, len(ids) - 1) - 0.5), 0.0)))
                    for k, a in enumerate(ids)
                    for d in [min(2.0 * radius[a] * 2.0**step + 100.0, 5.0e5)]
                ]
            )
            client.render(0, ("lit",), camera=cam)  # uploads meshes, levels, shadow levels, impostors
        client.reset()
        spec = getattr(env.spec, "randomize", None)
        for hdri in spec.hdri if spec is not None and spec.hdri else []:
            world = server_world(env.world)
            world["sky"] = dict(world.get("sky", {}), hdri=hdri)
            client.set_world(world)
            client.render(0, ("lit",), camera=cam)
        client.set_world(env.world)
    session._world = session._scene_key = session._sent_look = None  # the server's scene changed


RAW_GROUPS = 8  # scene groups the raw rate's views come from (one view each)


def raw_rates(client, session, cfg, reps: int, server_pid: int | None = None):
    """(n, render wall s, render CPU s, visibility wall s, visibility CPU s) of ``n`` lit renders
    and visibility calls over ``RAW_GROUPS`` views of the job's first unit, one from each of its
    first scene groups (a view that passes the geometric rules, the allo figure placed as in a
    sample), each rendered ``reps // RAW_GROUPS`` times with its camera set once (so only the
    frame is timed). Views of several scenes, because a frame's
    cost follows what is in view and the end-to-end rate covers ~40 scenes: city lit renders cost
    16.4-19.8 ms across its first 10 groups (2026-11-26), and the first group alone, the only one
    before session 8, was 3 % under their mean."""
    from collections import Counter as C

    from sceneforge.scenarios.sparrta import scenario as sparrta
    from sceneforge.scenarios.sampling.rejection import sample_rng
    from sceneforge.scenarios.sparrta.scene import sample_view

    unit = session_units(cfg)[0]
    st = sparrta.setting_for(cfg, session.env(unit.env), unit.task)
    views = []
    for g in range(RAW_GROUPS):
        group = session.group(unit, g * cfg.samples_per_scene, 0, st)
        for k in range(256):  # the first view of this scene that passes the geometric rules
            try:
                views.append(
                    (
                        group,
                        sample_view(
                            sample_rng(0, "bench", unit.task, "x", g, k),
                            group,
                            unit.task,
                            ("left", "right", "front", "back")[k % 4],
                            st,
                            session.env(unit.env).ground,
                            group.viewpoint,
                            C(),
                        ),
                    )
                )
            except Exception:  # noqa: BLE001 - this scene may not allow that label: try another draw
                continue
            break
    per = max(1, reps // max(1, len(views)))
    render = Clock(server_pid)
    render.wall = render.cpu = 0.0
    vis = Clock(server_pid)
    vis.wall = vis.cpu = 0.0
    for group, view in views:
        session.show(unit, group)
        if view.human is not None:
            session.place_human(view.human)
        client.set_camera(0, view.camera)
        client.render(0, ("lit",))  # the shadow map of this pose, drawn once here (a sample draws one of its
        # own: every sample has its own sun; the raw rate leaves that out)
        with Clock(server_pid) as r:
            for _ in range(per):
                client.render(0, ("lit",))
        with Clock(server_pid) as v:
            for _ in range(per):
                client.visibility(0, ["source", "target"])
        render.wall, render.cpu = render.wall + r.wall, render.cpu + r.cpu
        vis.wall, vis.cpu = vis.wall + v.wall, vis.cpu + v.cpu
    return per * len(views), render.wall, render.cpu, vis.wall, vis.cpu


def bracketed_raw(address: str, cfg, tmp: Path, reps: int, pid, run):
    """The raw rates measured in two halves, just before and just after ``run()`` (the end-to-end
    run): this machine's speed drifts within minutes (the same views rendered 55 and 48 lit
    frames/s in two runs 2 minutes apart), and a ratio of two rates taken at different moments
    carries that drift. Returns ((render wall, render CPU, visibility wall, visibility CPU) per
    second, (wall renders/s before, after), run())."""
    from sceneforge.engine.client import RenderClient
    from sceneforge.scenarios.sparrta import scenario as sparrta

    def half(k: int):
        with RenderClient(address) as c:  # a fresh session: it knows nothing of the scene on the server
            return raw_rates(c, sparrta.Session(cfg, c, tmp / "raw"), cfg, k, pid)

    before = half(reps // 2)
    out = run()
    after = half(reps - reps // 2)
    n, rw, rc, vw, vc = (a + b for a, b in zip(before, after))
    halves = (before[0] / before[1], after[0] / after[1])  # lit renders/s before and after the run
    return (n / rw, n / rc, n / vw, n / vc), halves, out


def session_units(cfg):
    from sceneforge.scenarios.sparrta import scenario as sparrta

    return sparrta.units_of(cfg)


def end_to_end(address: str, cfg, out: Path, server_pid: int | None = None, prime: bool = True):
    """Run every sample of the job through one Session (its caches primed first, untimed, unless
    ``prime`` is false); returns (Clock, records, TimedClient)."""
    from sceneforge.engine.client import RenderClient
    from sceneforge.scenarios.contract import ShardResult
    from sceneforge.scenarios.pipeline.shard import make_all
    from sceneforge.scenarios.sparrta import scenario as sparrta
    from sceneforge.scenarios.sparrta.config import locate
    from sceneforge.scenarios.sparrta.record import load_record

    units = session_units(cfg)
    n = sum(u.n for u in units)
    from sceneforge.renderfarm.manifest import claim_output

    out.mkdir(parents=True, exist_ok=True)
    claim_output(out, "scenarios.sparrta", sparrta.plan(cfg.to_dict()))
    with RenderClient(address) as raw:
        client = TimedClient(raw)
        session = sparrta.Session(cfg, client, out)
        if prime:
            prime_caches(raw, session, cfg)
        busy = raw.info().get("busy_s")  # the server's busy seconds (None: a server without the counter)
        with Clock(server_pid) as clock:
            with sparrta.ShardMaker(session, units) as maker:
                make_all(maker, list(range(n)), ShardResult(0), None, sparrta.LOOKAHEAD)
        after = raw.info().get("busy_s")
        clock.busy = None if busy is None or after is None else after - busy
    recs = [load_record(out, *locate(units, g)) for g in range(n)]
    return clock, recs, client


def report_detail(n, clock, recs, client) -> None:
    seconds = clock.wall
    done = [r for r in recs if r]
    rej = Counter()
    for r in done:
        rej.update(r["rejections"])
    vis_per = sum(r["renders"] for r in done) / max(1, len(done))
    print(
        f"    per accepted sample: {vis_per:.2f} visibility calls, {sum(rej.values()) / max(1, len(done)):.1f} "
        f"rejected candidates ({', '.join(f'{k} {v / len(done):.1f}' for k, v in rej.most_common(6))})"
    )
    server = sum(client.seconds.values())
    print(
        f"    time split: client calls {server / seconds:.0%} of wall time "
        f"({', '.join(f'{k} {v / seconds:.0%} ({client.calls[k]})' for k, v in _top4(client.seconds))}); "
        f"sampling + encoding + writing {1 - server / seconds:.0%}"
    )
    per = 1000.0 / max(1, len(done))
    busy = clock.busy
    print(
        f"    per image: {seconds * per:.1f} ms wall, server {clock.server * per:.1f} CPU-ms, "
        f"client {(clock.cpu - clock.server) * per:.1f} CPU-ms (all its threads)"
        + (
            ""
            if busy is None
            else f"; the server ran commands {busy * per:.1f} ms and waited for requests {(seconds - busy) * per:.1f} ms"
        )
    )


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=160, help="samples per (environment, task) (default 160: ~40 scene groups)")
    p.add_argument("--task", choices=["ego", "allo", "both"], default="both")
    p.add_argument("--env", default="all", help="an environment, a comma list, or 'all' (the five)")
    p.add_argument("--size", type=int, default=224)
    p.add_argument("--reps", type=int, default=80, help="renders for the raw rate (8 views, reps/8 each)")
    p.add_argument("--detail", action="store_true", help="rejections and time split per row")
    p.add_argument(
        "--repeats",
        type=int,
        default=1,
        help="measure each row this many times (same config and seed; each with its own raw rate "
        "before and after) and report the run with the median wall ratio, and the range",
    )
    p.add_argument(
        "--threads",
        type=int,
        default=1,
        help="the server's llvmpipe threads (default 1: one worker's share of a machine; an inline "
        "`sceneforge generate` gives its server the free cores, renderfarm.auto.inline_threads)",
    )
    args = p.parse_args(argv)
    if args.repeats < 1:
        p.error(f"--repeats: expected a count of at least 1, got {args.repeats}")

    from sceneforge.engine.server.launch import start_server
    from sceneforge.scenarios.world.environments import list_envs
    from sceneforge.scenarios.sparrta.config import parse_config

    tasks = ["ego", "allo"] if args.task == "both" else [args.task]
    envs = list(list_envs()) if args.env == "all" else args.env.split(",")
    load0 = os.getloadavg()
    rows = []
    print(
        f"sceneforge bench generate: {', '.join(envs)} x {', '.join(tasks)}, {args.size}x{args.size}, n={args.n} "
        f"per row, 1 server ({args.threads} renderer thread(s)) + 1 client process, {os.cpu_count()} CPUs, "
        f"load average {load0[0]:.1f} at start"
    )
    print(
        f"{'env':12s} {'task':4s} | {'wall: img/s':>11s} {'renders/s':>9s} {'ratio':>5s} | "
        f"{'CPU: img/cpu-s':>14s} {'renders/cpu-s':>13s} {'ratio':>5s} | vis/img"
    )
    with tempfile.TemporaryDirectory() as tmp, start_server(port=0, threads=args.threads) as srv:
        pid = getattr(srv, "pid", None)
        for env in envs:
            for task in tasks:
                cfg = parse_config({"envs": [env], "tasks": [task], "n": args.n, "size": args.size, "seed": 12345})
                warm = parse_config({"envs": [env], "tasks": [task], "n": 4, "size": args.size, "seed": 1})
                end_to_end(srv.address, warm, Path(tmp) / f"warm_{env}_{task}", pid, prime=False)
                runs = []
                for k in range(args.repeats):
                    runs.append(measure_row(srv.address, cfg, Path(tmp), args.reps, pid, f"run_{env}_{task}_{k}"))
                    if args.repeats > 1:
                        print(f"  {env} {task} run {k + 1}/{args.repeats}: {_row_text(runs[-1])}", flush=True)
                m = median_run(runs)
                rows.append((env, task, m["i_wall"], m["r_wall"], m["i_cpu"], m["r_cpu"]))
                spread = ""
                if args.repeats > 1:
                    ratios = [_wall_ratio(r) for r in runs]
                    spread = f" | median of {len(runs)}, wall ratio {min(ratios):.2f}-{max(ratios):.2f}"
                print(f"{env:12s} {task:4s} | {_row_text(m)}{spread}", flush=True)
                if args.detail:
                    v_wall, v_cpu, halves = m["v_wall"], m["v_cpu"], m["halves"]
                    print(
                        f"    one visibility call (same views as the renders): {1000 / v_wall:.1f} ms wall, "
                        f"{1000 / v_cpu:.1f} CPU-ms; one lit render {1000 / m['r_wall']:.1f} ms, "
                        f"{1000 / m['r_cpu']:.1f} CPU-ms "
                        f"(raw rate before / after the run: {halves[0]:.1f} / {halves[1]:.1f} renders/s)"
                    )
                    report_detail(len(m["recs"]), m["clock"], m["recs"], m["client"])
    for task in tasks:
        sel = [r for r in rows if r[1] == task]
        gw = _gmean([r[2] / r[3] for r in sel])
        gc = _gmean([r[4] / r[5] for r in sel])
        print(f"{task}: geometric mean ratio over {len(sel)} environments: wall {gw:.2f}, CPU {gc:.2f}")
    print(f"load average {os.getloadavg()[0]:.1f} at the end (1-minute; {os.cpu_count()} CPUs)")
    return 0


def measure_row(address: str, cfg, tmp: Path, reps: int, pid, name: str) -> dict:
    """One measurement of a row: the raw rates bracketing one end-to-end run of ``cfg`` (written
    to ``tmp / name``)."""
    (r_wall, r_cpu, v_wall, v_cpu), halves, (clock, recs, client) = bracketed_raw(
        address, cfg, tmp, reps, pid, lambda: end_to_end(address, cfg, tmp / name, pid)
    )
    done = [r for r in recs if r]
    return {
        "i_wall": len(done) / clock.wall,
        "i_cpu": len(done) / clock.cpu,
        "r_wall": r_wall,
        "r_cpu": r_cpu,
        "v_wall": v_wall,
        "v_cpu": v_cpu,
        "halves": halves,
        "clock": clock,
        "recs": recs,
        "client": client,
        "vis": sum(r["renders"] for r in done) / max(1, len(done)),
    }


def median_run(runs: list[dict]) -> dict:
    """The run whose wall ratio is the median (the lower middle one of an even count): a whole
    run, so its printed rates, ratio and detail belong together. On a shared machine one run's
    ratio moves with the load (city ego: 0.43-0.59 within an hour, 2026-11-26); the median of
    several is the steadier figure, as timing tools report (pyperf, hyperfine)."""
    ranked = sorted(runs, key=_wall_ratio)
    return ranked[(len(ranked) - 1) // 2]


def _wall_ratio(r: dict) -> float:
    return r["i_wall"] / r["r_wall"]


def _row_text(r: dict) -> str:
    return (
        f"{r['i_wall']:11.1f} {r['r_wall']:9.1f} {_wall_ratio(r):5.2f} | "
        f"{r['i_cpu']:14.1f} {r['r_cpu']:13.1f} {r['i_cpu'] / r['r_cpu']:5.2f} | {r['vis']:.2f}"
    )


def _gmean(xs):
    import math

    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def _top4(seconds: dict) -> list:
    """The four client calls that took longest, longest first."""
    return sorted(seconds.items(), key=lambda kv: -kv[1])[:4]


if __name__ == "__main__":
    raise SystemExit(main())
