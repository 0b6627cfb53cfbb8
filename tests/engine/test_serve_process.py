"""``sceneforge serve`` as a process: binding, signals, start-up failures, import weight, the
--assets flag and CLI errors (split from test_server.py, which covers the protocol and commands).
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time

import pytest

from sceneforge.engine.protocol import frame, recv_frame
from sceneforge.engine.server.launch import start_server

pytestmark = pytest.mark.filterwarnings("error")


# --- process behaviour -----------------------------------------------------------------------
def _listening_addresses(port: int) -> list[str]:
    with open("/proc/net/tcp") as f:
        rows = f.read().splitlines()[1:]
    return [r.split()[1] for r in rows if r.split()[1].endswith(f":{port:04X}") and r.split()[3] == "0A"]


def test_binds_loopback_by_default_and_stops_on_sigterm(tmp_path):
    t0 = time.monotonic()
    with start_server(port=0, output_dir=tmp_path) as srv:
        startup = time.monotonic() - t0
        assert _listening_addresses(srv.port) == ["0100007F:%04X" % srv.port]
        code = srv.stop()
    assert code == 0 and not srv.alive()
    assert "listening on 127.0.0.1:" in srv.log_tail()
    assert startup < 60  # generous: the suite runs on loaded shared cores (measured in docs)


def test_sigterm_while_clients_are_busy(tmp_path):
    with start_server(port=0, output_dir=tmp_path) as srv:
        socks = []
        for i in range(3):
            s = socket.create_connection(("127.0.0.1", srv.port), timeout=30)
            recv_frame(s)
            s.sendall(b"".join(frame(b"%d:vset /objects/spawn primitive_cube" % j) for j in range(200)))
            socks.append(s)
        assert srv.stop() == 0
        [s.close() for s in socks]
    assert "Traceback" not in srv.log_tail(100_000)


def test_sigint_max_frame_and_host_warning(tmp_path):
    with start_server(port=0, host="127.0.0.2", extra_args=["--max-frame", "100"]) as srv:
        assert srv.address.startswith("127.0.0.2:")
        with socket.create_connection(("127.0.0.2", srv.port), timeout=30) as s:
            recv_frame(s)
            s.sendall(frame(b"1:vget /objects"))
            assert recv_frame(s) == b"1:"
            s.sendall(frame(b"2:" + b"x" * 99))
            assert b"exceeds the 100-byte limit" in recv_frame(s)
        srv.proc.send_signal(signal.SIGINT)
        assert srv.proc.wait(30) == 0
    assert "reachable from other machines" in srv.log_tail()


def _serve_children() -> set[int]:
    """Live `sceneforge serve` children of this test process (from /proc)."""
    out = set()
    for d in os.listdir("/proc"):
        try:
            with open(f"/proc/{d}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            with open(f"/proc/{d}/cmdline", "rb") as f:
                cmd = f.read()
        except (OSError, ValueError):
            continue
        if int(fields[1]) == os.getpid() and fields[0] != "Z" and b"serve" in cmd:
            out.add(int(d))
    return out


def test_start_server_failure_is_one_line_and_leaves_no_process():
    from sceneforge.core.errors import ConnectionFailed

    before = _serve_children()
    with pytest.raises(ConnectionFailed, match=r"exit code 2\).*--threads must be >= 1") as e:
        start_server(port=0, extra_args=["--threads", "0"])  # the later flag wins in argparse
    assert "\n" not in str(e.value)
    with pytest.raises(ConnectionFailed, match="within 0s"):
        start_server(port=0, timeout=0.0)  # still starting when the deadline passes: killed
    assert _serve_children() <= before


def test_serve_import_path_stays_light():
    """`sceneforge serve` must start fast: no ML stack, renderer or OpenCV at import."""
    code = (
        "import sys, sceneforge.cli as c; c.build_parser(); import engine.server.app, engine.client, "
        "sceneforge.engine.server.launch; heavy = [m for m in ('torch', 'timm', 'transformers', 'ray', 'moderngl', "
        "'cv2', 'trimesh') if m in sys.modules]; print(heavy)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "[]", out.stdout + out.stderr


USER_PACK = """pack: mypack
version: 1
defaults: {license: cc0-1.0, attribution: "test", source: "test", units: cm, up: "+z", forward: "+x"}
assets:
  - {id: my_barrel, class: barrel, procedural: {generator: barrel, params: {color: [10, 200, 10]}}}
"""


def test_assets_flag_adds_a_user_pack_and_rejects_a_broken_one(tmp_path):
    from sceneforge.engine.client import RenderClient

    pack = tmp_path / "mypack.yaml"
    pack.write_text(USER_PACK)
    with start_server(port=0, assets=[pack]) as srv, RenderClient(srv.address) as c:
        assert c.text("vset /objects/spawn barrel b") == "b"  # the class now resolves to the user asset
        assert c.text("vget /object/b/uclass_name") == "my_barrel"
        assert c.text("vset /objects/spawn proc_rock_a r") == "r"  # the default library is still there
    pack.write_text(USER_PACK.replace("class: barrel", "klass: barrel"))
    bad = subprocess.run(
        [sys.executable, "-m", "sceneforge.cli", "serve", "--port", "0", "--assets", str(pack)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert bad.returncode == 2 and "mypack.yaml" in bad.stderr and len(bad.stderr.strip().splitlines()) == 1


def test_cli_reports_bad_arguments_and_busy_port(server, tmp_path):
    (tmp_path / "afile").write_text("x")
    for args, message in (
        (["--port", "70000"], "--port must be in 0..65535"),
        (["--threads", "0"], "--threads must be >= 1"),
        (["--output-dir", str(tmp_path / "afile")], "exists and is not a directory"),
        (["--port", "0", "--ready-file", str(tmp_path / "afile" / "r")], "cannot write --ready-file"),
    ):
        bad = subprocess.run([sys.executable, "-m", "sceneforge.cli", "serve", *args], capture_output=True, text=True, timeout=60)
        assert bad.returncode == 2 and message in bad.stderr, (args, bad.stderr)
    busy = subprocess.run(
        [sys.executable, "-m", "sceneforge.cli", "serve", "--port", str(server.port)], capture_output=True, text=True, timeout=60
    )
    assert busy.returncode == 2 and f"cannot listen on 127.0.0.1:{server.port}" in busy.stderr
    assert len(busy.stderr.strip().splitlines()) == 1
