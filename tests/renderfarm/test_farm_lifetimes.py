"""Issue 13 items 6, 7, 9, 10 (farm side): run_job without a ``__main__`` guard fails in one line,
render servers and old workers never outlive their parents or overlap a resumed run, server temp
dirs are removed, and the health check needs a rendered frame."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import textwrap
import threading
import time

import pytest
from farm_helpers import HERE, pid_alive, wait_for

from sceneforge.core.errors import ConfigError
from sceneforge.engine.protocol import recv_frame, send_frame
from sceneforge.renderfarm.manifest import hold_worker_lock, wait_for_old_workers
from sceneforge.renderfarm.servers import ping, renders

ROOT = HERE.parents[1]


def _python(code: str, **kw) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": f"{ROOT}:{HERE}"}
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=300, env=env, **kw
    )


def test_run_job_without_main_guard_fails_in_one_line(tmp_path):
    """The docs' snippet pasted into a script without `if __name__ == "__main__":` (item 6)."""
    script = tmp_path / "snippet.py"
    script.write_text(
        textwrap.dedent(f"""\
        from pathlib import Path
        from sceneforge.renderfarm import run_job
        run_job("farm_toy_cpu", {{"n": 4, "seed": 1, "size": 8}}, Path({str(tmp_path / "out")!r}), workers=2, progress=False)
        print("FINISHED")
        """)
    )
    env = {**os.environ, "PYTHONPATH": f"{ROOT}:{HERE}"}
    p = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300, env=env, cwd=tmp_path)
    assert p.returncode != 0 and "FINISHED" not in p.stdout
    worker_lines = [l for l in p.stderr.splitlines() if l.startswith("sceneforge worker:")]
    assert worker_lines and all('if __name__ == "__main__":' in l for l in worker_lines)
    assert p.stderr.count("sceneforge.core.errors.ConfigError: run_job() was called again") == 1
    assert "bootstrapping phase" not in p.stderr  # no multiprocessing RuntimeError tracebacks


def test_server_dies_with_a_killed_parent_and_its_temp_dir_goes_on_stop(tmp_path):
    """kill -9 of the process that started a server (a farm worker) leaves no server (item 9);
    a stopped server leaves no /tmp/sceneforge-serve-* directory (item 10)."""
    p = subprocess.Popen(
        [
            sys.executable,
            "-c",
            textwrap.dedent("""\
        import sys, time
        from sceneforge.engine.server.launch import start_server
        srv = start_server(port=0)
        print(srv.pid, srv._workdir, flush=True)
        time.sleep(600)
        """),
        ],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    pid, workdir = p.stdout.readline().split()
    assert pid_alive(int(pid))
    p.kill()
    p.wait()
    wait_for(lambda: not pid_alive(int(pid)), timeout=15, what="the orphaned server to exit")

    from sceneforge.engine.server.launch import start_server

    with start_server(port=0) as srv:
        workdir = srv._workdir
        assert workdir.is_dir() and workdir.name.startswith("sceneforge-serve-")
    assert not workdir.exists() and "listening on" in srv.log_tail()


def test_resumed_run_waits_for_workers_of_the_killed_run(tmp_path):
    """A worker of an earlier run still holding its lock blocks a new run (item 9)."""
    out = tmp_path / "out"
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            textwrap.dedent(f"""\
        import time
        from pathlib import Path
        from sceneforge.renderfarm.manifest import hold_worker_lock
        lock = hold_worker_lock(Path({str(out)!r}))
        print("held", flush=True)
        time.sleep(1.5)
        """),
        ],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert holder.stdout.readline().strip() == "held"
    with pytest.raises(ConfigError, match="workers of an earlier run are still writing"):
        wait_for_old_workers(out, timeout_s=0.3)
    t0 = time.monotonic()
    wait_for_old_workers(out, timeout_s=30)  # returns once the old worker is gone
    assert holder.wait(10) == 0 and time.monotonic() - t0 < 30
    lock = hold_worker_lock(out)  # shared: live workers do not block each other
    lock2 = hold_worker_lock(out)
    lock.close(), lock2.close()


def test_health_check_needs_a_rendered_frame(server):
    """A server that answers the status but cannot render is unhealthy (item 7)."""
    assert ping(server.address) and renders(server.address)
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)

    def fake():  # greets and answers the status like UnrealCV, fails every render
        conn, _ = listener.accept()
        with conn:
            send_frame(conn, b"connected to fake")
            for _ in range(2):
                req = recv_frame(conn)
                rid = req.split(b":", 1)[0]
                send_frame(conn, rid + (b":Is Listening" if b"status" in req else b":error render failed"))

    t = threading.Thread(target=fake, daemon=True)
    t.start()
    assert not renders(f"127.0.0.1:{listener.getsockname()[1]}")
    t.join(10)
    listener.close()


def test_ray_init_failure_is_one_line_with_the_token_hint():
    """Item 6: `ray start` clusters with token auth failed --ray-address with a 60-line traceback."""
    from sceneforge.renderfarm.raypool import ray_init_message

    msg = ray_init_message("10.0.0.5:6379", RuntimeError("Failed to connect: UNAUTHENTICATED: invalid auth token\nmore"))
    assert "\n" not in msg and msg.startswith("--ray-address 10.0.0.5:6379: cannot connect")
    assert "RAY_AUTH_TOKEN" in msg
    plain = ray_init_message(None, ConnectionError("no cluster at auto"))
    assert "RAY_AUTH_TOKEN" not in plain and "no cluster at auto" in plain
