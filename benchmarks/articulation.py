"""Articulated subjects (issue 38 item 1): media and the cost of animation.

    python benchmarks/articulation.py media [--out docs/img]     # contact sheet + one mp4 per class
    python benchmarks/articulation.py cost [--clips 12 --rounds 2]   # ms/frame with vs without articulation
    python benchmarks/articulation.py sliding                  # foot sliding per class, posing ms/frame

``media`` renders every rigged class walking/trotting/driving past a tracking camera on the city
street (the embedded GL server): ``docs/img/videos_rigs_sheet.png`` (rows = classes, columns =
four instants of one gait cycle, the first mid-stride) and ``docs/img/videos_rig_<class>.mp4``.
``cost`` makes every clip rigid and articulated back to back on one server (paired, order
alternating, ``--rounds`` times) and prints the per-clip difference in ms per rendered frame
(wall and client CPU); numbers go to docs/videos.md. ``sliding``
prints the foot sliding per class (cm per step) and the posing time per frame.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from sceneforge.engine.world import Camera, look_at_rotation

# class, asset (for size and colours), speed cm/s, label
CLASSES = [
    ("human", "sh3d_human_m1", 120.0, "human walk"),
    ("human", "sh3d_human_f2", 330.0, "human run"),
    ("bear", "proc_bear", 110.0, "bear walk"),
    ("fox", "proc_fox", 60.0, "fox walk"),
    ("husky", "proc_husky", 230.0, "husky trot"),
    ("deer", "proc_deer", 110.0, "deer walk"),
    ("camel", "proc_camel", 130.0, "camel walk"),
    ("taxi", "sh3d_taxi", 400.0, "taxi"),
    ("truck", "sh3d_truck", 350.0, "truck"),
    ("bike", "sh3d_bike", 300.0, "bike"),
    ("vespa", "sh3d_vespa", 350.0, "vespa"),
]
FPS, FRAMES, SIZE = 12.0, 24, 224


def _pose(lib, asset: str, speed: float, n: int, fps: float, ground, yaw_rate: float = 0.0):
    from sceneforge.scenarios.videos import articulation, rigs

    t = np.arange(n) / fps
    loc = np.column_stack([-speed * t.mean() + speed * t, np.zeros(n), np.zeros(n)])
    loc[:, 2] = ground(loc[:, 0], loc[:, 1])
    rig = articulation.rig_for_asset(lib, asset)
    return rigs.pose_rig(rig, loc, yaw_rate * t, fps, ground, phase0=0.1), loc


def _render_class(client, lib, env, asset: str, speed: float, n: int, fps: float) -> np.ndarray:
    posed, loc = _pose(lib, asset, speed, n, fps, env.ground.height)
    L, W, H = posed.rig.size
    dist = 1.25 * max(L, H) + 80.0
    client.reset()
    client.spawn(posed.actors("subject", 0))
    frames = []
    for t in range(n):
        client.set_poses(posed.poses("subject", t))
        target = loc[t] + np.array([0.0, 0.0, 0.45 * H])
        eye = target + np.array([-0.2 * dist, -dist, 0.3 * dist])
        cam = Camera(tuple(eye), look_at_rotation(tuple(eye), tuple(target)), 40.0, SIZE, SIZE)
        frames.append(client.render(0, ("lit",), camera=cam)["lit"])
    return np.stack(frames)


def media(out: Path) -> None:
    import cv2

    from sceneforge.engine.client import RenderClient
    from sceneforge.engine.server.launch import start_server
    from sceneforge.scenarios.videos.video_io import encode_mp4
    from sceneforge.scenarios.world.environments import load_env

    env = load_env("city")
    lib = env.library
    out.mkdir(parents=True, exist_ok=True)
    srv = start_server(port=0, output_dir=Path(tempfile.mkdtemp()))
    rows = []
    try:
        with RenderClient(srv.address, timeout=300) as client:
            world = dict(env.world)
            client.set_world(world)
            for cls, asset, speed, label in CLASSES:
                frames = _render_class(client, lib, env, asset, speed, FRAMES, FPS)
                mp4 = encode_mp4(frames, out / f"videos_rig_{cls}{'_run' if 'run' in label else ''}.mp4", FPS)
                posed, _ = _pose(lib, asset, speed, FRAMES, FPS, env.ground.height)
                cyc = max(2, int(round(FPS / posed.gait.cadence_hz))) if posed.gait else 8
                pick = [FRAMES // 2 + int(k * cyc / 4) for k in range(4)]
                pick = [min(p, FRAMES - 1) for p in pick]
                tiles = [cv2.resize(frames[p], (112, 112), interpolation=cv2.INTER_AREA) for p in pick]
                row = np.concatenate(tiles, 1)
                bar = np.full((14, row.shape[1], 3), 255, np.uint8)
                cv2.putText(bar, label, (3, 11), cv2.FONT_HERSHEY_SIMPLEX, 0.38, (0, 0, 0), 1, cv2.LINE_AA)
                rows.append(np.concatenate([bar, row], 0))
                print(f"{label:12s} {mp4.name} {mp4.stat().st_size / 1024:.0f} KB frames {pick}")
    finally:
        srv.stop()
    half = (len(rows) + 1) // 2
    left, right = rows[:half], rows[half:]
    if len(right) < len(left):
        right.append(np.full_like(rows[0], 255))
    sheet = np.concatenate(
        [np.concatenate(left, 0), np.full((sum(r.shape[0] for r in left), 6, 3), 255, np.uint8), np.concatenate(right, 0)], 1
    )
    path = out / "videos_rigs_sheet.png"
    from PIL import Image

    Image.fromarray(sheet).quantize(colors=128, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE).save(
        path, optimize=True
    )  # a 128-colour palette keeps the sheet small (< 300 KB)
    print(f"{path} {sheet.shape[1]}x{sheet.shape[0]} {path.stat().st_size / 1024:.0f} KB")


def sliding() -> None:
    """Foot sliding (cm per step, max over steps) per class on the city terrain, straight and
    turning in place; and the posing time per frame."""
    from sceneforge.scenarios.videos import rigs
    from sceneforge.scenarios.world.environments import load_env

    env = load_env("city")
    for cls, asset, speed, label in CLASSES:
        posed, _ = _pose(env.library, asset, speed, FRAMES, FPS, env.ground.height)
        t0 = time.perf_counter()
        turn, _ = _pose(env.library, asset, 0.0, FRAMES, FPS, env.ground.height, yaw_rate=60.0)
        ms = (time.perf_counter() - t0) / FRAMES * 1e3
        s, s2 = rigs.foot_sliding(posed), rigs.foot_sliding(turn)
        g = posed.gait
        print(
            f"{label:12s} parts {len(posed.rig.parts):2d} "
            + (
                f"{g.name} stride {g.stride_cm:5.1f} cm cadence {g.cadence_hz:.2f} Hz "
                f"slide max {s.max():.2e} cm over {len(s)} steps, turning {turn.gait.name} max {s2.max():.2e} "
                f"cm over {len(s2)} steps"
                if g
                else f"wheel spin {posed.wheel_spin_deg[-1, 0] - posed.wheel_spin_deg[0, 0]:.1f} deg"
            )
            + f"; pose {ms:.2f} ms/frame"
        )


def cost(clips: int, rounds: int = 2) -> None:
    """Paired per clip: the same clip made rigid and articulated back to back on one server
    (sample + render + visibility: ``scenario.make_clip``), the order alternating, ``rounds``
    times; the median of the per-clip differences cancels the slow load drift of a shared machine."""
    from collections import Counter

    from sceneforge.engine.client import RenderClient
    from sceneforge.engine.server.launch import start_server
    from sceneforge.scenarios.videos import scenario as videos

    base = {"env": "city", "n": clips, "seed": 0}
    ctxs = {
        m: videos.load_context(videos.VideoConfig.from_dict(c))
        for m, c in (("rigid", base), ("articulated", {**base, "articulation": True}))
    }
    srv = start_server(port=0, output_dir=Path(tempfile.mkdtemp()))
    per = {m: [] for m in ctxs}
    cpu = {m: [] for m in ctxs}
    try:
        with RenderClient(srv.address, timeout=300) as client:
            for m, ctx in ctxs.items():  # warm-up: meshes, rigs and GL caches of both modes
                videos.make_clip(ctx, client, 0, Counter())
            for rnd in range(rounds):
                for i in range(clips):
                    order = list(ctxs) if (i + rnd) % 2 == 0 else list(ctxs)[::-1]
                    for m in order:
                        t0, c0 = time.perf_counter(), time.process_time()
                        made = videos.make_clip(ctxs[m], client, i, Counter())
                        n = made["clip"].n_frames * made["attempts"]
                        per[m].append(1e3 * (time.perf_counter() - t0) / n)
                        cpu[m].append(1e3 * (time.process_time() - c0) / n)
    finally:
        srv.stop()
    r, a = np.array(per["rigid"]), np.array(per["articulated"])
    cr, ca = np.array(cpu["rigid"]), np.array(cpu["articulated"])
    print(f"{clips} clips x {rounds} rounds, paired (make_clip: sample + render + visibility, ms per rendered frame)")
    print(
        f"  wall: rigid median {np.median(r):.1f}, articulated median {np.median(a):.1f}; "
        f"per-clip difference median {np.median(a - r):+.1f} ms/frame (IQR {np.percentile(a - r, 25):+.1f} .. "
        f"{np.percentile(a - r, 75):+.1f}), ratio median {np.median(a / r):.2f}x"
    )
    print(
        f"  client CPU: rigid median {np.median(cr):.1f}, articulated {np.median(ca):.1f} ms/frame "
        f"(difference median {np.median(ca - cr):+.1f}: posing, poses JSON, union counts)"
    )


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    m = sub.add_parser("media")
    m.add_argument("--out", type=Path, default=Path("docs/img"))
    c = sub.add_parser("cost")
    c.add_argument("--clips", type=int, default=12)
    c.add_argument("--rounds", type=int, default=2)
    sub.add_parser("sliding")
    a = ap.parse_args(argv)
    if a.cmd == "media":
        media(a.out)
    elif a.cmd == "cost":
        cost(a.clips, a.rounds)
    else:
        sliding()
    return 0


if __name__ == "__main__":
    sys.exit(main())
