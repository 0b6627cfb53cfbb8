"""Cost of going through the render server's socket vs calling the renderer in-process.

Run: ``python benchmarks/socket_overhead.py [--seconds 3]`` (also called by ``benchmarks/render.py``).

Same scene (the typical procedural scene of ``render.py``), same camera orbit, same kinds
(lit + depth + instance ids, 224²), one llvmpipe thread on both sides:

* in-process: ``GLBackend.render`` in a fresh process (``LP_NUM_THREADS=1``);
* socket: ``sceneforge serve --threads 1`` in a subprocess, driven by ``RenderClient`` — per
  frame one ``vget /sceneforge/render`` (NPZ reply), and separately with the camera moved first
  (one more round trip, ``vset /sceneforge/camera``), which is what a dataset generator does.

Also prints how long ``sceneforge serve`` takes to listen. Timings on a shared machine are noisy:
the ratio is measured in one run, compare ratios rather than absolute frames/s.
"""
from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

KINDS = ("lit", "depth", "instance_id")


def _inprocess_worker(conn, size: int) -> None:
    """Owns an in-process GLBackend; answers ("fixed"|"moving", seconds) with frames/s."""
    os.environ["LP_NUM_THREADS"] = "1"
    import render as R
    from engine.server.gl_backend import GLBackend

    provider, ids = R.typical_provider()
    backend = GLBackend(provider)
    scene, cams = R.build_scene(ids), R.cameras(size)
    conn.send("ready")
    while (msg := conn.recv()) is not None:
        mode, seconds = msg
        conn.send(R.bench_inprocess(backend, scene, cams[:1] if mode == "fixed" else cams, KINDS, seconds))
    backend.close()


def _rate(fn, seconds: float) -> float:
    fn(0)  # warm
    n, t0 = 0, time.perf_counter()
    while True:
        fn(n)
        n += 1
        dt = time.perf_counter() - t0
        if dt >= seconds and n >= 5:
            return n / dt


def socket_overhead(seconds: float = 3.0, size: int = 224, rounds: int = 5) -> dict:
    """Interleave short in-process and socket windows (the machine's load changes from second
    to second), report the median of the per-round time ratios, print and return the numbers."""
    import render as R
    from engine.client import RenderClient
    from engine.server.launch import start_server

    ctx = mp.get_context("spawn")
    parent, child = ctx.Pipe()
    worker = ctx.Process(target=_inprocess_worker, args=(child, size))
    worker.start()
    _, ids = R.typical_provider()
    scene, cams = R.build_scene(ids), R.cameras(size)
    res: dict = {}
    with tempfile.TemporaryDirectory() as out:
        t0 = time.perf_counter()
        with start_server(port=0, output_dir=out, threads=1, env={"LP_NUM_THREADS": "1"}) as srv:
            res["serve_ready_s"] = time.perf_counter() - t0
            with RenderClient(srv.address, timeout=300) as c:
                c.spawn(scene.actors.values())
                c.set_camera(0, cams[0])  # the fixed-camera case uses cams[0], as in-process
                t1 = time.perf_counter()
                c.render(0, KINDS)
                res["socket_first_frame_s"] = time.perf_counter() - t1
                assert parent.recv() == "ready"
                socket_call = {"fixed": lambda j: c.render(0, KINDS),
                               "moving": lambda j: (c.set_camera(0, cams[j % len(cams)]), c.render(0, KINDS))}
                window = max(0.5, seconds / rounds)
                for mode in ("fixed", "moving"):
                    res.update(_interleave(parent, socket_call[mode], mode, rounds, window))
    parent.send(None)
    worker.join()
    _print(res, size)
    return res


def _interleave(parent, socket_call, mode: str, rounds: int, window: float) -> dict:
    import statistics

    pairs = []
    for _ in range(rounds):
        parent.send((mode, window))
        pairs.append((parent.recv(), _rate(socket_call, window)))
    return {f"fps_inprocess_{mode}": statistics.median(p[0] for p in pairs),
            f"fps_socket_{mode}": statistics.median(p[1] for p in pairs),
            f"socket_overhead_{mode}": statistics.median(a / b - 1.0 for a, b in pairs)}


def _print(res: dict, size: int) -> None:
    print(f"  socket vs in-process, {'+'.join(KINDS)} {size}x{size}, LP_NUM_THREADS=1 "
          f"(median of interleaved rounds; overhead = extra time per frame):")
    for mode, what in (("fixed", "fixed camera, render only"),
                       ("moving", "moving camera: set_camera (1 vset) + render")):
        print(f"    {what}: in-process {res[f'fps_inprocess_{mode}']:.1f} frames/s, "
              f"socket {res[f'fps_socket_{mode}']:.1f} ({100 * res[f'socket_overhead_{mode}']:+.1f}%)")
    print(f"  sceneforge serve listening after {res['serve_ready_s']:.2f} s; "
          f"first frame over the socket {res['socket_first_frame_s']:.2f} s")


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--size", type=int, default=224)
    a = ap.parse_args()
    socket_overhead(a.seconds, a.size)
