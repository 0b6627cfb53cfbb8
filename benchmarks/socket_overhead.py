"""Cost of going through the render server's socket vs calling the renderer in-process.

Run: ``python benchmarks/socket_overhead.py [--seconds 3]`` (also called by ``benchmarks/render.py``).

Same scene (the typical procedural scene of ``render.py``), same camera orbit, same kinds
(lit + depth + instance ids, 224²), one llvmpipe thread on both sides:

* in-process: ``GLBackend.render`` in a fresh process (``LP_NUM_THREADS=1``);
* socket: ``sceneforge serve --threads 1`` in a subprocess, driven by ``RenderClient`` — per
  frame one ``vget /sceneforge/render`` (NPZ reply); with the camera moved every frame either in
  the same request (``render(cam, kinds, camera=...)``) or by a separate ``set_camera`` first
  (one more round trip), as a dataset generator does.

Two figures per case, from interleaved short windows (the load of a shared machine changes from
second to second; medians over rounds):

* wall-clock frames/s — what a user waits for; on an oversubscribed machine each round trip also
  waits for the scheduler to run the other process, which in-process calls never do;
* CPU milliseconds per frame (server + client processes vs the in-process one) — the work the
  socket path adds, independent of scheduling latency.

Also prints how long ``sceneforge serve`` takes to listen and the first frame over the socket.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

KINDS = ("lit", "depth", "instance_id")


def _proc_cpu_s(pid: int) -> float:
    """utime + stime of a whole process (all threads), seconds."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _measure(fn, seconds: float, cpu=time.process_time) -> tuple[float, float]:
    """(frames/s wall, CPU ms per frame) of calling ``fn(j)`` for at least ``seconds``."""
    fn(0)  # warm
    n, t0, c0 = 0, time.perf_counter(), cpu()
    while True:
        fn(n)
        n += 1
        dt = time.perf_counter() - t0
        if dt >= seconds and n >= 5:
            return n / dt, 1000.0 * (cpu() - c0) / n


def _inprocess_worker(conn, size: int) -> None:
    """Owns an in-process GLBackend; answers ("fixed"|"moving", seconds) with _measure()."""
    os.environ["LP_NUM_THREADS"] = "1"
    import render as R
    from sceneforge.engine.server.gl.backend import GLBackend

    provider, ids = R.typical_provider()
    backend = GLBackend(provider)
    scene, cams = R.build_scene(ids), R.cameras(size)
    conn.send("ready")
    while (msg := conn.recv()) is not None:
        mode, seconds = msg
        use = cams[:1] if mode == "fixed" else cams  # both moving modes orbit the same cameras
        conn.send(_measure(lambda j: backend.render(scene, use[j % len(use)], KINDS), seconds))  # noqa: B023 (called now)
    backend.close()


def _interleave(parent, socket_call, server_pid: int, mode: str, rounds: int, window: float) -> dict:
    both_cpu = lambda: time.process_time() + _proc_cpu_s(server_pid)  # noqa: E731
    pairs = []
    for _ in range(rounds):
        parent.send((mode, window))
        pairs.append((parent.recv(), _measure(socket_call, window, cpu=both_cpu)))
    med = lambda f: statistics.median(f(a, b) for a, b in pairs)  # noqa: E731
    return {
        f"fps_inprocess_{mode}": med(lambda a, b: a[0]),
        f"fps_socket_{mode}": med(lambda a, b: b[0]),
        f"socket_overhead_{mode}": med(lambda a, b: a[0] / b[0] - 1.0),
        f"cpu_ms_inprocess_{mode}": med(lambda a, b: a[1]),
        f"cpu_ms_socket_{mode}": med(lambda a, b: b[1]),
        f"socket_cpu_overhead_{mode}": med(lambda a, b: b[1] / a[1] - 1.0),
    }


def socket_overhead(seconds: float = 3.0, size: int = 224, rounds: int = 5) -> dict:
    """Measure, print and return the numbers (render.py merges them into its results)."""
    import render as R
    from sceneforge.engine.client import RenderClient
    from sceneforge.engine.server.launch import start_server

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
                calls = {
                    "fixed": lambda j: c.render(0, KINDS),
                    "moving": lambda j: c.render(0, KINDS, camera=cams[j % len(cams)]),
                    "moving_vset": lambda j: (c.set_camera(0, cams[j % len(cams)]), c.render(0, KINDS)),
                }
                for mode in calls:
                    res.update(_interleave(parent, calls[mode], srv.pid, mode, rounds, max(0.5, seconds / rounds)))
    parent.send(None)
    worker.join()
    _print(res, size)
    return res


def _print(res: dict, size: int) -> None:
    print(
        f"  socket vs in-process, {'+'.join(KINDS)} {size}x{size}, LP_NUM_THREADS=1, load average "
        f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs (medians of interleaved rounds):"
    )
    for mode, what in (
        ("fixed", "fixed camera, render only"),
        ("moving", "moving camera, render(camera=...): one request"),
        ("moving_vset", "moving camera, set_camera + render: two requests"),
    ):
        print(
            f"    {what}: wall {res[f'fps_inprocess_{mode}']:.1f} -> {res[f'fps_socket_{mode}']:.1f} "
            f"frames/s ({100 * res[f'socket_overhead_{mode}']:+.1f}% time per frame); CPU "
            f"{res[f'cpu_ms_inprocess_{mode}']:.1f} -> {res[f'cpu_ms_socket_{mode}']:.1f} ms/frame "
            f"({100 * res[f'socket_cpu_overhead_{mode}']:+.1f}%)"
        )
    print(
        f"  sceneforge serve listening after {res['serve_ready_s']:.2f} s; "
        f"first frame over the socket {res['socket_first_frame_s']:.2f} s"
    )


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=3.0, help="total timing per case (split into rounds)")
    ap.add_argument("--size", type=int, default=224)
    ap.add_argument("--rounds", type=int, default=5)
    a = ap.parse_args()
    socket_overhead(a.seconds, a.size, a.rounds)
