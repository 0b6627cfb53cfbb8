"""Issue 13 items 7 and 8: bounded world/actor/camera values, recovery after a failed render,
bounded spawn batches, a normal listen backlog, long file names, one slow client.

Each reproduction from the issue is a test: ``vset /sceneforge/world {"ground":{"extent":1e30}}``
used to reply ``ok`` and then break every render until a restart.
"""

from __future__ import annotations

import json
import socket
import threading

import pytest

from sceneforge.engine import limits
from sceneforge.engine.protocol import frame, recv_frame
from sceneforge.engine.server.catalog import AssetCatalog
from sceneforge.engine.server.commands.dispatch import dispatch
from sceneforge.engine.server.state import ServerState
from wire_helpers import ask, greeted


@pytest.fixture
def raw(server):
    s = greeted(server, timeout=60)
    assert ask(s, b"1:vset /sceneforge/reset") == b"1:ok"
    assert ask(s, b"2:vset /sceneforge/world {}") == b"2:ok"
    yield s
    ask(s, b'3:vset /sceneforge/camera 0 {"location":[0,0,0],"size":[640,480]}')
    s.close()


def _tiny_render(sock: socket.socket) -> bytes:
    return ask(sock, b'9:vget /sceneforge/render 0 lit,depth {"size":[16,16]}')


@pytest.mark.parametrize(
    "command, field",
    [
        ('vset /sceneforge/world {"ground":{"extent":1e30,"relief_amplitude":100}}', "world.ground.extent"),
        ('vset /sceneforge/world {"ground":{"extent":1e7}}', "world.ground.extent"),
        ('vset /sceneforge/world {"ground":{"relief_wavelength":0.01}}', "world.ground.relief_wavelength"),
        ('vset /sceneforge/world {"sun":{"intensity":1e12}}', "world.sun.intensity"),
        ('vset /sceneforge/world {"sun":{"pitch":400}}', "world.sun.pitch"),
        ('vset /sceneforge/world {"sky":{"ambient":-1}}', "world.sky.ambient"),
        ('vset /sceneforge/spawn [{"name":"a","asset":"primitive_cube","location":[1e30,0,0]}]', "location.x"),
        ('vset /sceneforge/spawn [{"name":"a","asset":"primitive_cube","scale":[1e-9,1,1]}]', "scale.x"),
        ('vset /sceneforge/spawn [{"name":"a","asset":"primitive_cube","rotation":[0,1e9,0]}]', "rotation.yaw"),
        ('vset /sceneforge/camera 0 {"location":[0,0,1e12]}', "location.z"),
        ("vset /object/missing/location 1e30 0 0", None),
        ("vset /camera/0/location 0 0 1e20", "camera location.z"),
    ],
)
def test_out_of_bounds_values_are_refused_and_server_stays_healthy(raw, command, field):
    reply = ask(raw, b"5:" + command.encode()).decode()
    assert reply.startswith("5:error "), reply
    assert "internal" not in reply and "\n" not in reply
    if field:
        assert field in reply, reply
    assert _tiny_render(raw).startswith(b"9:SFARR1")


def test_largest_allowed_ground_stays_bounded(raw):
    """extent 1e6 with relief used 5.6 GB: the grid is capped at MAX_GROUND_CELLS per side."""
    assert (
        ask(raw, b'5:vset /sceneforge/world {"ground":{"extent":1e6,"relief_amplitude":100,"relief_wavelength":3000}}') == b"5:ok"
    )
    assert _tiny_render(raw).startswith(b"9:SFARR1")
    info = json.loads(ask(raw, b"6:vget /sceneforge/info")[2:])
    assert info["triangles"] <= 2 * (limits.MAX_GROUND_CELLS + 8) ** 2


def test_failed_render_leaves_the_renderer_usable(monkeypatch):
    """A render that dies half-way (here: the ground grid allocation, as with extent 1e30) must
    not leave dead GL objects behind: the next render, after a reset, works."""
    from sceneforge.engine.server.gl import passes

    state = ServerState(AssetCatalog(None))
    real = passes.ground_grid
    calls = {"n": 0}

    def failing_once(ground):
        calls["n"] += 1
        if calls["n"] == 2:
            raise MemoryError("Maximum allowed size exceeded")
        return real(ground)

    monkeypatch.setattr(passes, "ground_grid", failing_once)
    try:
        cam = '{"size":[16,16]}'
        assert dispatch(state, f"vget /sceneforge/render 0 lit {cam}")[:6] == b"SFARR1"
        assert dispatch(state, 'vset /sceneforge/world {"ground":{"relief_amplitude":50}}') == "ok"
        failed = dispatch(state, f"vget /sceneforge/render 0 lit {cam}")
        assert failed.startswith("error render failed: out of memory"), failed
        assert dispatch(state, "vset /sceneforge/reset") == "ok"
        assert dispatch(state, "vset /sceneforge/world {}") == "ok"
        for _ in range(2):
            out = dispatch(state, f"vget /sceneforge/render 0 lit,object_mask {cam}")
            assert isinstance(out, bytes) and out[:6] == b"SFARR1", out
        assert dispatch(state, 'vset /sceneforge/world {"ground":{"relief_amplitude":50}}') == "ok"
        assert dispatch(state, f"vget /sceneforge/render 0 lit {cam}")[:6] == b"SFARR1"
    finally:
        state.close()


# --- item 8: spawn batches, backlog, file names, slow clients ---------------------------------
def _batch(n: int, dup_at: int | None = None) -> bytes:
    items = [{"name": f"o{i}", "asset": "primitive_cube", "location": [i * 10, 0, 0]} for i in range(n)]
    if dup_at is not None:
        items[dup_at]["name"] = "o0"
    return json.dumps(items, separators=(",", ":")).encode()


def test_spawn_batch_is_bounded_and_duplicates_found(raw):
    too_many = ask(raw, b"5:vset /sceneforge/spawn " + _batch(limits.MAX_SPAWN_BATCH + 1)).decode()
    assert too_many.startswith("5:error spawn:") and f"at most {limits.MAX_SPAWN_BATCH}" in too_many
    dup = ask(raw, b"6:vset /sceneforge/spawn " + _batch(limits.MAX_SPAWN_BATCH, dup_at=limits.MAX_SPAWN_BATCH - 1))
    assert dup.startswith(b"6:error spawn[4095]: duplicate name 'o0'"), dup[:80]
    assert ask(raw, b"7:vget /objects") == b"7:"  # all-or-nothing
    assert ask(raw, b"8:vset /sceneforge/spawn " + _batch(limits.MAX_SPAWN_BATCH)) == b"8:ok"
    assert len(ask(raw, b"9:vget /objects").split()) == limits.MAX_SPAWN_BATCH


def test_fifty_simultaneous_clients_all_get_a_greeting(server):
    """The listen backlog was 16: 15 of 50 clients connecting at once got no greeting."""
    greetings, errors = [], []
    barrier = threading.Barrier(50)

    def connect():
        try:
            barrier.wait(timeout=30)
            with socket.create_connection(("127.0.0.1", server.port), timeout=60) as s:
                greetings.append(recv_frame(s))
                barrier_done.wait(timeout=60)  # hold the connection until everyone is greeted
        except Exception as e:  # noqa: BLE001 - collected and asserted below
            errors.append(repr(e))

    barrier_done = threading.Event()
    threads = [threading.Thread(target=connect) for _ in range(50)]
    for t in threads:
        t.start()
    for _ in range(600):
        if len(greetings) + len(errors) >= 50:
            break
        threading.Event().wait(0.1)
    barrier_done.set()
    for t in threads:
        t.join(timeout=60)
    assert errors == []
    assert len(greetings) == 50 and all(g.startswith(b"connected to sceneforge") for g in greetings)


@pytest.mark.parametrize("length", [250, 251, 300])
def test_long_file_names_are_written_or_refused_in_one_line(raw, server_output_dir, length):
    name = "x" * (length - 4) + ".png"
    ask(raw, b'4:vset /sceneforge/camera 0 {"size":[8,8]}')
    reply = ask(raw, b"5:vget /camera/0/lit " + name.encode()).decode()
    if length <= 255:
        assert reply == f"5:{(server_output_dir / name).resolve()}", reply[:120]
        assert (server_output_dir / name).stat().st_size > 0
        assert not [p for p in server_output_dir.iterdir() if ".tmp" in p.name]
    else:
        assert reply.startswith("5:error file name") and "longer than 255" in reply, reply[:120]


def test_a_slow_client_does_not_block_others(server):
    """One client stalls mid-frame, another asks for a big render and never reads it: a third
    client is still served."""
    stalled = socket.create_connection(("127.0.0.1", server.port), timeout=30)
    recv_frame(stalled)
    stalled.sendall(frame(b"1:vget /unrealcv/status")[:5])  # half a header, then silence
    greedy = socket.create_connection(("127.0.0.1", server.port), timeout=30)
    recv_frame(greedy)
    greedy.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    greedy.sendall(frame(b'2:vget /sceneforge/render 0 lit,depth {"size":[512,512]}'))
    try:
        with socket.create_connection(("127.0.0.1", server.port), timeout=30) as other:
            recv_frame(other)
            for i in range(5):
                assert ask(other, f"{i}:vget /unrealcv/status".encode()).startswith(f"{i}:Is Listening".encode())
    finally:
        stalled.close()
        greedy.close()
