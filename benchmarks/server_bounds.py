"""Issue 39's hostile-client reproductions against a real ``sceneforge serve``, with their figures.

Each scenario starts its own server (``start_server``, 127.0.0.1, a free port), attacks it, and
prints one JSON line of what happened (RSS of the server process, log size, replies, times).
Bounded in count and time: safe to run on a shared machine.

    python benchmarks/server_bounds.py world-ids [--rounds 60] [--mib 1]
    python benchmarks/server_bounds.py slowloris [--sockets 63] [--hold 20]
    python benchmarks/server_bounds.py pipeline [--clients 4] [--requests 8] [--mib 60]
    python benchmarks/server_bounds.py cycles-kill [--size 1536] [--samples 64]
    python benchmarks/server_bounds.py big-frame [--size 8192] [--kinds lit,normal,depth,object_mask]
    python benchmarks/server_bounds.py small-requests [--actors 16384] [--size 1024] [--renders 4]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sceneforge.engine.protocol import frame, recv_frame  # noqa: E402
from sceneforge.engine.server.launch import start_server  # noqa: E402


def rss_mb(pid: int) -> float:
    """Resident set size of ``pid`` in MB (0 when gone)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return 0.0


def connect(port: int, timeout: float = 60.0) -> socket.socket:
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    greeting = recv_frame(s)
    assert greeting.startswith(b"connected"), greeting
    return s


def ask(s: socket.socket, payload: bytes) -> bytes:
    s.sendall(frame(payload))
    return recv_frame(s)


def world_ids(args) -> dict:
    """Unique multi-MiB HDRI / surface ids + a small render, ``rounds`` times; then ``world {}``."""
    out: dict = {"scenario": "world-ids", "rounds": args.rounds, "id_mib": args.mib}
    with start_server(port=0) as srv:
        with connect(srv.port) as s:
            assert ask(s, b"1:vset /camera/0/size 64 64").endswith(b"ok")
            ask(s, b"2:vget /sceneforge/render 0 lit")  # renderer + library warm
            time.sleep(1.0)
            out["rss_start_mb"] = round(rss_mb(srv.pid), 1)
            replies = set()
            t0 = time.perf_counter()
            for i in range(args.rounds):
                ident = (f"{i:06d}" + "x" * int(args.mib * 2**20)).encode()
                r = ask(
                    s, b"3:vset /sceneforge/world " + b'{"sky":{"hdri":"' + ident + b'"},"ground":{"surface":"' + ident + b'"}}'
                )
                replies.add(r[:120].decode(errors="replace"))
                ask(s, b"4:vget /sceneforge/render 0 lit")
            out["seconds"] = round(time.perf_counter() - t0, 1)
            out["rss_after_loop_mb"] = round(rss_mb(srv.pid), 1)
            ask(s, b"5:vset /sceneforge/world {}")
            ask(s, b"6:vget /sceneforge/render 0 lit")
            out["rss_after_reset_mb"] = round(rss_mb(srv.pid), 1)
            out["world_replies"] = sorted(replies)[:3]
        out["log_mb"] = round(srv.log_path.stat().st_size / 2**20, 2)
    return out


def slowloris(args) -> dict:
    """``sockets`` connections that send 5 bytes and hold; can the official client connect?"""
    from unrealcv import Client

    out: dict = {"scenario": "slowloris", "sockets": args.sockets, "hold_s": args.hold}
    with start_server(port=0, extra_args=list(args.server_args or [])) as srv:
        held = []
        for _ in range(args.sockets):
            s = socket.create_connection(("127.0.0.1", srv.port), timeout=10)
            s.sendall(b"\xc1\x83\x2b\x9e\x10")  # the magic and one byte of a length: a partial frame
            held.append(s)
        time.sleep(1.0)
        t0, tries, ok = time.monotonic(), 0, False
        while time.monotonic() - t0 < args.hold and not ok:
            tries += 1
            c = Client(("127.0.0.1", srv.port))
            c.connect(timeout=2)
            if c.isconnected():
                ok = c.request("vget /unrealcv/version", timeout=10) == "v1.1.0"
            c.disconnect()
            if not ok:
                time.sleep(1.0)
        out.update(official_client_served=ok, seconds_until_served=round(time.monotonic() - t0, 1), tries=tries)
        closed = 0
        for s in held:
            s.settimeout(0.2)
            try:
                closed += s.recv(1 << 16) == b"" or True
            except OSError:
                pass
            s.close()
        out["attacker_sockets_answered_or_closed"] = closed
    return out


def pipeline(args) -> dict:
    """``clients`` connections each pipelining ``requests`` × ``mib`` MiB frames behind a render."""
    out: dict = {"scenario": "pipeline", "clients": args.clients, "requests": args.requests, "mib": args.mib}
    with start_server(port=0, extra_args=list(args.server_args or [])) as srv:
        with connect(srv.port, timeout=300) as r:
            ask(r, b"1:vset /camera/0/size 64 64")
            ask(r, b"2:vget /sceneforge/render 0 lit")
            time.sleep(1.0)
            for b in range(0, args.actors, 4096):  # a slow render that takes little memory
                batch = [
                    {
                        "name": f"s{i}",
                        "asset": "primitive_sphere",
                        "location": [500 + i % 64 * 30, i // 64 % 64 * 30 - 960, i // 4096 * 30],
                    }
                    for i in range(b, min(args.actors, b + 4096))
                ]
                assert ask(r, b"3:vset /sceneforge/spawn " + json.dumps(batch, separators=(",", ":")).encode()) == b"3:ok"
            ask(r, b"3:vget /sceneforge/render 0 lit")
            out["rss_start_mb"] = round(rss_mb(srv.pid), 1)
            ask(r, b"3:vset /camera/0/size %d %d" % (args.size, args.size))
            t_render = time.perf_counter()
            for _ in range(args.renders):  # the worker stays busy, the attackers' requests queue
                r.sendall(frame(b"4:vget /sceneforge/render 0 lit"))
            time.sleep(0.3)
            # a request with a short reply (after the fix: refused in one line; before: ``ok``)
            body = b'vset /sceneforge/world {"env":"' + b"x" * (int(args.mib * 2**20) - 60) + b'"}'

            socks, peak = [], 0.0
            t0 = time.perf_counter()
            for _ in range(args.clients):
                s = connect(srv.port, timeout=60)
                try:
                    for i in range(args.requests):
                        s.sendall(frame(b"%d:" % i + body))
                        peak = max(peak, rss_mb(srv.pid))
                except OSError as e:
                    out.setdefault("send_errors", []).append(type(e).__name__)
                socks.append(s)
            for _ in range(20):
                peak = max(peak, rss_mb(srv.pid))
                time.sleep(0.25)
            out["send_seconds"] = round(time.perf_counter() - t0, 1)
            out["rss_peak_mb"] = round(peak, 1)
            first = []
            for s in socks:
                s.settimeout(120)
                try:
                    first.append(recv_frame(s, max_frame=2**31)[:60].decode(errors="replace"))
                except OSError as e:
                    first.append(type(e).__name__)
                s.close()
            out["first_replies"] = sorted(set(first))
            for _ in range(args.renders):
                recv_frame(r, max_frame=2**31)
            out["render_seconds"] = round(time.perf_counter() - t_render, 1)
            out["renderer_client_ok"] = ask(r, b"5:vget /unrealcv/status").startswith(b"5:Is Listening")
            out["rss_end_mb"] = round(rss_mb(srv.pid), 1)
    return out


def _descendants(pid: int) -> list[int]:
    """Every process whose parent chain (by /proc) leads to ``pid``, or whose session is ``pid``'s child's."""
    kids = []
    for p in Path("/proc").iterdir():
        if p.name.isdigit():
            try:
                stat = (p / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                kids.append(int(p.name))
    return kids


def cycles_kill(args) -> dict:
    """A Cycles render in flight, then SIGTERM (how long to exit) and, on a second server, SIGKILL
    (is the Blender worker left running?)."""
    out: dict = {"scenario": "cycles-kill", "size": args.size, "samples": args.samples}
    for how in ("SIGTERM", "SIGKILL"):
        srv = start_server(port=0, renderer=f"cycles:samples={args.samples}")
        try:
            s = connect(srv.port, timeout=600)
            ask(s, b"1:vset /camera/0/size 32 32")
            ask(s, b"2:vget /sceneforge/render 0 lit")  # starts the worker
            workers = _descendants(srv.pid)
            ask(s, b"3:vset /camera/0/size %d %d" % (args.size, args.size))
            s.sendall(frame(b"4:vget /sceneforge/render 0 lit"))
            time.sleep(3.0)
            t0 = time.monotonic()
            os.kill(srv.pid, getattr(signal, how))
            deadline = t0 + args.wait
            while srv.alive() and time.monotonic() < deadline:
                time.sleep(0.1)
            server_gone = not srv.alive()
            while any(Path(f"/proc/{w}").exists() and "zombie" not in _state(w) for w in workers) and time.monotonic() < deadline:
                time.sleep(0.1)
            alive = [w for w in workers if Path(f"/proc/{w}").exists() and "zombie" not in _state(w)]
            out[how] = {
                "server_exited": server_gone,
                "server_rc": srv.proc.poll(),
                "seconds": round(time.monotonic() - t0, 1),
                "workers": workers,
                "workers_left": alive,
                "log": [ln for ln in srv.log_tail(4000).splitlines() if "clean" in ln or "Error" in ln][-2:],
            }
            for w in alive:
                os.kill(w, signal.SIGKILL)
            s.close()
        finally:
            srv.stop(grace=5)
    return out


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/status").read_text().split("State:")[1].split("\n")[0]
    except (OSError, IndexError):
        return "zombie"


def big_frame(args) -> dict:
    """An ``size``² camera and ``kinds`` (four passes by default): time, the reply, RSS before,
    right after and kept after a small frame (GL render targets of the big size dropped or not)."""
    out: dict = {"scenario": "big-frame", "size": args.size, "kinds": args.kinds}
    with start_server(port=0, extra_args=list(args.server_args or [])) as srv:
        with connect(srv.port, timeout=600) as s:
            ask(s, b"1:vset /camera/0/size 64 64")
            ask(s, b"2:vget /sceneforge/render 0 lit,normal,depth,object_mask")
            time.sleep(1.0)
            out["rss_start_mb"] = round(rss_mb(srv.pid), 1)
            r = ask(s, b"3:vset /camera/0/size %d %d" % (args.size, args.size))
            out["size_reply"] = r.decode(errors="replace")[:200]
            t0 = time.perf_counter()
            s.sendall(frame(b"4:vget /sceneforge/render 0 " + args.kinds.encode()))
            r = recv_frame(s, max_frame=2**31)
            out["render_reply"] = r[:300].decode(errors="replace") if len(r) < 1000 else f"{len(r)} bytes"
            out["seconds"] = round(time.perf_counter() - t0, 1)
            del r
            out["rss_after_frame_mb"] = round(rss_mb(srv.pid), 1)
            ask(s, b"5:vset /camera/0/size 64 64")
            ask(s, b"6:vget /sceneforge/render 0 lit")
            time.sleep(0.5)
            out["rss_kept_mb"] = round(rss_mb(srv.pid), 1)
            out["fov_reply"] = ask(s, b"7:vset /camera/0/fov 1e-300").decode(errors="replace")[:200]
    return out


def _spawn_spheres(s: socket.socket, n: int) -> None:
    """``n`` spheres in a 64 × 64 × k block in front of camera 0: a slow render, little memory."""
    for b in range(0, n, 4096):
        batch = [
            {
                "name": f"s{i}",
                "asset": "primitive_sphere",
                "location": [500 + i % 64 * 30, i // 64 % 64 * 30 - 960, i // 4096 * 30],
            }
            for i in range(b, min(n, b + 4096))
        ]
        assert ask(s, b"3:vset /sceneforge/spawn " + json.dumps(batch, separators=(",", ":")).encode()) == b"3:ok"


def _latencies(s: socket.socket, seconds: float, until=None) -> list[float]:
    """Round trips (ms) of alternating ``vget /unrealcv/status`` / ``vget /camera/0/location`` for
    ``seconds``, or until ``until()`` is true."""
    out, t_end, i = [], time.monotonic() + seconds, 0
    while time.monotonic() < t_end and not (until and until()):
        cmd = b"vget /unrealcv/status" if i % 2 == 0 else b"vget /camera/0/location"
        t = time.perf_counter()
        reply = ask(s, b"%d:" % i + cmd)
        out.append((time.perf_counter() - t) * 1000.0)
        assert not reply.split(b":", 1)[1].startswith(b"error"), reply
        i += 1
        time.sleep(0.01)
    return out


def _summary(ms: list[float]) -> dict:
    if not ms:
        return {"n": 0}
    ms = sorted(ms)
    return {
        "n": len(ms),
        "p50_ms": round(ms[len(ms) // 2], 2),
        "p99_ms": round(ms[min(len(ms) - 1, int(0.99 * len(ms)))], 2),
        "max_ms": round(ms[-1], 2),
    }


def small_requests(args) -> dict:
    """Issue 39 item 5 (head-of-line blocking): one client renders ``renders`` frames of a
    ``actors``-sphere scene at ``size``²; another sends small requests meanwhile. Their latency
    (p50 / p99 / max) with the server idle (baseline, same run) and during the renders."""
    import threading

    out: dict = {"scenario": "small-requests", "actors": args.actors, "size": args.size, "renders": args.renders}
    with start_server(port=0) as srv:
        with connect(srv.port, timeout=600) as r, connect(srv.port, timeout=600) as q:
            ask(r, b"1:vset /camera/0/size 64 64")
            ask(r, b"2:vget /sceneforge/render 0 lit")
            _spawn_spheres(r, args.actors)
            ask(r, b"3:vset /camera/0/size %d %d" % (args.size, args.size))
            t = time.perf_counter()
            ask(r, b"4:vget /sceneforge/render 0 lit")  # warm (the frame at this size)
            out["one_render_s"] = round(time.perf_counter() - t, 2)
            out["idle"] = _summary(_latencies(q, args.idle_seconds))
            done = threading.Event()

            def renders() -> None:
                t0 = time.perf_counter()
                for _ in range(args.renders):
                    r.sendall(frame(b"5:vget /sceneforge/render 0 lit"))
                for _ in range(args.renders):
                    recv_frame(r, max_frame=2**31)
                out["renders_s"] = round(time.perf_counter() - t0, 2)
                done.set()

            th = threading.Thread(target=renders)
            th.start()
            time.sleep(0.2)  # the first render is running
            out["during_renders"] = _summary(_latencies(q, 600.0, until=done.is_set))
            th.join()
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="scenario", required=True)
    a = sub.add_parser("world-ids")
    a.add_argument("--rounds", type=int, default=60)
    a.add_argument("--mib", type=float, default=1.0)
    a.set_defaults(func=world_ids)
    a = sub.add_parser("slowloris")
    a.add_argument("--sockets", type=int, default=63)
    a.add_argument("--hold", type=float, default=20.0)
    a.add_argument("--server-args", nargs="*")
    a.set_defaults(func=slowloris)
    a = sub.add_parser("pipeline")
    a.add_argument("--clients", type=int, default=4)
    a.add_argument("--requests", type=int, default=8)
    a.add_argument("--mib", type=float, default=60.0)
    a.add_argument("--size", type=int, default=2048)
    a.add_argument("--actors", type=int, default=0, help="spheres in the scene (a slower render)")
    a.add_argument("--renders", type=int, default=8, help="lit renders queued before the attack")
    a.add_argument("--server-args", nargs="*")
    a.set_defaults(func=pipeline)
    a = sub.add_parser("cycles-kill")
    a.add_argument("--size", type=int, default=1536)
    a.add_argument("--samples", type=int, default=64)
    a.add_argument("--wait", type=float, default=30.0)
    a.set_defaults(func=cycles_kill)
    a = sub.add_parser("big-frame")
    a.add_argument("--size", type=int, default=8192)
    a.add_argument("--kinds", default="lit,normal,depth,object_mask")
    a.add_argument("--server-args", nargs="*")
    a.set_defaults(func=big_frame)
    a = sub.add_parser("small-requests")
    a.add_argument("--actors", type=int, default=16384)
    a.add_argument("--size", type=int, default=1024)
    a.add_argument("--renders", type=int, default=4)
    a.add_argument("--idle-seconds", type=float, default=3.0)
    a.set_defaults(func=small_requests)
    args = p.parse_args(argv)
    print(json.dumps(args.func(args)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
