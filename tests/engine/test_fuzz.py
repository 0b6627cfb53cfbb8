"""Protocol fuzz: thousands of random and malformed frames against a real server.

Bounded in count (3000 frames) and time (60 s, whichever comes first). Afterwards the server must
still answer ``vget /unrealcv/status`` and its RSS must not have grown without bound. Commands
that render are left out on purpose: they are slow, and image sizes are capped elsewhere.
"""

from __future__ import annotations

import random
import re
import socket
import struct
import time

import pytest

from sceneforge.core.errors import ProtocolError
from sceneforge.engine.protocol import MAGIC, frame, recv_frame
from sceneforge.engine.server.launch import start_server

N_FRAMES, TIME_LIMIT_S = 3000, 60.0
TOKENS = [
    "0",
    "1",
    "-1",
    "7",
    "1e309",
    "nan",
    "inf",
    "-0",
    "3.5",
    "primitive_cube",
    "primitive",
    "a" * 300,
    "..",
    "../x.png",
    "/",
    "{}",
    "[]",
    "[",
    '{"name":1}',
    "ü",
    "名字",
    "\x00",
    "99999999999999999999",
    "x.png",
    "a,b,,c",
    "\t",
    "r.setres",
    "640x480w",
    "0x0",
]
PATH_TOKENS = ["0", "1", "2", "fz", "fz", "primitive_cube_0", "-1", "ü", "..", "a" * 300, "%s", "0x1"]
RENDERING = ("lit", "object_mask", "depth", "normal", "/sceneforge/render", "visibility", "/sceneforge/info")


def _rss_kb(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))


def _templates(sock: socket.socket) -> list[str]:
    sock.sendall(frame(b"0:vget /unrealcv/commands"))
    lines = recv_frame(sock).decode().split(":", 1)[1].splitlines()
    return [t for t in lines if not any(r in t for r in RENDERING)]


def _command(rng: random.Random, templates: list[str]) -> bytes:
    t = rng.choice(templates).split()
    words = [
        rng.choice(TOKENS + ["fz"]) if w.startswith("[") else re.sub(r"\[\w+\]", lambda _: rng.choice(PATH_TOKENS), w) for w in t
    ]
    if rng.random() < 0.3:
        words += [rng.choice(TOKENS) for _ in range(rng.randint(1, 4))]
    if rng.random() < 0.2:
        words = words[: rng.randint(0, len(words))]
    if rng.random() < 0.05:
        words = [words[0] if words else "vset", "/sceneforge/spawn", "[" * rng.randint(100, 20000)]
    text = " ".join(words).encode("utf-8")
    return text + (bytes([rng.randrange(128, 256)]) if rng.random() < 0.05 else b"")


def _frame(rng: random.Random, i: int, templates: list[str]) -> tuple[bytes, str]:
    """(bytes to send, kind) where kind says what the server must do."""
    roll = rng.random()
    if roll < 0.6:
        return frame(b"%d:%s" % (i, _command(rng, templates))), "reply"
    if roll < 0.75:
        return frame(bytes(rng.randrange(256) for _ in range(rng.randint(0, 64)))), "reply"
    if roll < 0.82:
        return struct.pack("<II", rng.randrange(1 << 32) | 1, 8) + b"0:status", "close"  # bad magic (odd ≠ MAGIC)
    if roll < 0.88:
        return struct.pack("<II", MAGIC, rng.randrange(1 << 27, 1 << 32)), "close"  # over the limit
    if roll < 0.94:
        full = frame(b"%d:vget /objects" % i)
        return full[: rng.randint(1, len(full) - 1)], "hangup"  # truncated, then the client leaves
    return bytes(rng.randrange(256) for _ in range(rng.randint(1, 32))), "hangup"


def _connect(port: int) -> socket.socket:
    s = socket.create_connection(("127.0.0.1", port), timeout=30)
    assert recv_frame(s).startswith(b"connected")
    return s


def _exchange(sock: socket.socket, data: bytes, kind: str) -> bytes | None:
    """Send one fuzz item; returns the reply, or None if the connection is now closed."""
    sock.sendall(data)
    if kind == "hangup":
        return None
    reply = recv_frame(sock)
    if kind == "close":
        assert reply.startswith(b"error")
        with pytest.raises(ProtocolError):
            recv_frame(sock)  # and then the server hangs up
        return None
    m = re.match(rb"^(\d{1,18}):", data[8:])  # a well-framed request: its id is echoed
    expected = b"%d:" % int(m.group(1)) if m else b"error request is not of the form"
    assert reply.startswith(expected), (data[8:60], reply[:80])
    return reply


@pytest.fixture(scope="module")
def fuzz_server(tmp_path_factory):
    with start_server(port=0, output_dir=tmp_path_factory.mktemp("fuzz-out")) as srv:
        yield srv


def test_fuzzed_frames_never_take_the_server_down(fuzz_server):
    rng = random.Random(1234)
    sock = _connect(fuzz_server.port)
    templates = _templates(sock)
    t0, sent, rss, internal = time.monotonic(), 0, [], []
    for i in range(1, N_FRAMES + 1):
        if time.monotonic() - t0 > TIME_LIMIT_S:
            break
        data, kind = _frame(rng, i, templates)
        reply = _exchange(sock, data, kind)
        if reply is not None and b":error internal" in reply[:30]:
            internal.append((data[8:90], reply[:200]))
        if reply is None:
            sock.close()
            sock = _connect(fuzz_server.port)
        sent += 1
        if i in (500, N_FRAMES // 2, N_FRAMES - 1):
            rss.append(_rss_kb(fuzz_server.pid))
    sock.sendall(frame(b"1:vget /unrealcv/status"))
    assert recv_frame(sock).startswith(b"1:Is Listening")
    sock.close()
    assert fuzz_server.alive() and sent >= 300, f"only {sent} frames in {TIME_LIMIT_S}s"
    # The first half fills the server's caches (textured meshes, HDRI light, surfaces of the assets
    # the fuzzer happens to spawn and render: ~80-100 MB with the PBR library); a leak would keep
    # growing through the second half as fast as through the first.
    assert rss[-1] - rss[1] < 48 * 1024, f"server RSS grew {rss} kB in the second half"
    assert not internal, f"handler bugs (internal errors): {internal[:5]}"


def test_status_after_abrupt_disconnects(fuzz_server):
    for _ in range(50):
        s = socket.create_connection(("127.0.0.1", fuzz_server.port))
        s.close()  # before (or while) the greeting is sent
    s = _connect(fuzz_server.port)
    s.sendall(frame(b"5:vget /unrealcv/status"))
    assert recv_frame(s).startswith(b"5:Is Listening")
    s.close()


def _render_command(rng: random.Random, i: int) -> bytes:
    kinds = ["lit", "object_mask", "depth", "plane_depth", "normal", "instance_id", "", "foo", "..", "lit "]
    pick = lambda: rng.choice(["0", "1", "-1", "x", "99", "00"])  # noqa: E731
    options = [
        f"vget /camera/{pick()}/{rng.choice(kinds[:5])} {rng.choice(['png', 'bmp', 'npy', 'x.exr', '', 'a/b.png', '../c.npy'])}",
        f"vget /sceneforge/render {pick()} {','.join(rng.sample(kinds, rng.randint(1, 4)))}",
        f"vget /sceneforge/visibility {pick()} {','.join(rng.choice(['fz', 'ghost', '', 'fz,fz']) for _ in range(2))}",
        f"vset /camera/0/size {rng.randint(-2, 96)} {rng.randint(-2, 96)}",
        f"vset /objects/spawn {rng.choice(['primitive_cube', 'primitive', 'rock'])} fz",
        f"vset /object/fz/location {rng.uniform(-500, 500):.1f} {rng.uniform(-500, 500):.1f} 0",
        "vset /object/fz/destroy",
        "vget /sceneforge/info",
    ]
    return b"%d:%s" % (i, rng.choice(options).encode())


@pytest.mark.render
def test_fuzzed_render_commands(fuzz_server):
    """Render-path commands with random cameras, kinds, names and formats (images kept small)."""
    rng = random.Random(99)
    sock = _connect(fuzz_server.port)
    sock.sendall(frame(b"0:vset /camera/0/size 64 48"))
    recv_frame(sock)
    t0, internal = time.monotonic(), []
    for i in range(1, 301):
        if time.monotonic() - t0 > TIME_LIMIT_S:
            break
        payload = _render_command(rng, i)
        reply = _exchange(sock, frame(payload), "reply")
        if reply is not None and b":error internal" in reply[:30]:
            internal.append((payload, reply[:200]))
    assert not internal, f"handler bugs (internal errors): {internal[:5]}"
    sock.sendall(frame(b"1:vget /unrealcv/status"))
    assert recv_frame(sock).startswith(b"1:Is Listening")
    sock.close()


@pytest.mark.slow
def test_fuzz_soak(fuzz_server):
    """30 000 frames: RSS must level off (compare the second half with the first)."""
    rng = random.Random(7)
    sock = _connect(fuzz_server.port)
    templates, rss = _templates(sock), []
    for i in range(1, 30001):
        data, kind = _frame(rng, i, templates)
        if _exchange(sock, data, kind) is None:
            sock.close()
            sock = _connect(fuzz_server.port)
        if i % 10000 == 0:
            rss.append(_rss_kb(fuzz_server.pid))
    sock.close()
    assert rss[-1] - rss[0] < 32 * 1024, f"server RSS kept growing {rss} kB"
