"""Start the render server (``python -m sceneforge.engine.server``) in a subprocess and wait until it listens.

Used by tests, the demo, dataset generation and render-farm workers: each gets its own server
on a free port (``--port 0``), learns the port from ``--ready-file``, and stops it with SIGTERM
(then SIGKILL after a grace period).

>>> from engine.server.launch import start_server
>>> with start_server(port=0, output_dir="/tmp/out") as srv:   # doctest: +SKIP
...     print(srv.address)                                        # "127.0.0.1:PORT"
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from sceneforge.core.errors import ConnectionFailed

log = logging.getLogger(__name__)


class ServerProcess:
    """A running render server subprocess (``python -m sceneforge.engine.server``); a context manager that stops it on exit."""

    def __init__(self, proc: subprocess.Popen, host: str, port: int, log_path: Path, workdir: Path):
        self.proc, self.host, self.port = proc, host, port
        self.log_path = log_path  # the server's stderr (logging), for post-mortems
        self._workdir = workdir
        self._final_log = ""

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def pid(self) -> int:
        return self.proc.pid

    def alive(self) -> bool:
        return self.proc.poll() is None

    def log_tail(self, n: int = 2000) -> str:
        """The end of the server's log (kept in memory once :meth:`stop` removed the temp dir)."""
        try:
            return self.log_path.read_text(errors="replace")[-n:]
        except OSError:
            return self._final_log[-n:]

    def stop(self, grace: float = 10.0) -> int:
        """SIGTERM, wait ``grace`` seconds, then SIGKILL; returns the exit code."""
        if self.alive():
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(grace)
            except subprocess.TimeoutExpired:
                log.warning("server pid %d ignored SIGTERM for %.0fs; killing it", self.pid, grace)
                self.proc.kill()
                self.proc.wait()
        self._remove_workdir()
        return self.proc.returncode

    def _remove_workdir(self) -> None:
        """The ready file and log live in a private temp dir: remove it once the server is gone
        (they used to accumulate: 242 ``/tmp/sceneforge-serve-*`` seen)."""
        import shutil

        try:
            self._final_log = self.log_path.read_text(errors="replace")[-1_000_000:]
        except OSError:
            pass
        shutil.rmtree(self._workdir, ignore_errors=True)

    def __enter__(self) -> "ServerProcess":
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


def serve_command(
    port: int,
    output_dir: str | os.PathLike | None,
    assets,
    threads: int,
    ready_file: Path,
    host: str = "127.0.0.1",
    licenses=None,
    renderer: str | None = None,
) -> list[str]:
    """The argv of ``python -m sceneforge.engine.server`` with everything it serves passed as arguments."""
    cmd = [
        sys.executable,
        "-m",
        "sceneforge.engine.server",
        "--host",
        host,
        "--port",
        str(port),
        "--threads",
        str(threads),
        "--ready-file",
        str(ready_file),
        "--exit-with-parent",
    ]
    if output_dir is not None:
        cmd += ["--output-dir", str(output_dir)]
    if assets:
        cmd += ["--assets", *[str(a) for a in assets]]
    if licenses:
        cmd += ["--licenses", ",".join(licenses) if not isinstance(licenses, str) else licenses]
    if renderer:
        cmd += ["--renderer", renderer]
    return cmd


def _wait_ready(proc: subprocess.Popen, ready: Path, log_path: Path, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not ready.exists():
        if proc.poll() is not None or time.monotonic() > deadline:
            tail = log_path.read_text(errors="replace")[-1500:]
            raise ConnectionFailed(
                f"the render server did not become ready within {timeout:.0f}s "
                f"(exit code {proc.poll()}): " + " | ".join(tail.strip().splitlines()[-8:])
            )
        time.sleep(0.02)


def start_server(
    port: int = 0,
    output_dir: str | os.PathLike | None = None,
    assets=None,
    threads: int = 1,
    env: dict | None = None,
    timeout: float = 60.0,
    host: str = "127.0.0.1",
    extra_args: list[str] | None = None,
    licenses=None,
    renderer: str | None = None,
) -> ServerProcess:
    """Launch a server and block until it listens (or raise ConnectionFailed with its log).

    ``extra_args`` go to ``python -m sceneforge.engine.server`` verbatim (e.g. ``["--max-frame", "4096"]``).
    """
    workdir = Path(tempfile.mkdtemp(prefix="sceneforge-serve-"))
    ready, log_path = workdir / "ready", workdir / "server.log"
    cmd = serve_command(port, output_dir, assets, threads, ready, host, licenses, renderer) + list(extra_args or [])
    with open(log_path, "wb") as log_file:
        proc = subprocess.Popen(
            cmd, stdin=subprocess.DEVNULL, stdout=log_file, stderr=subprocess.STDOUT, env={**os.environ, **(env or {})}
        )
    try:
        _wait_ready(proc, ready, log_path, timeout)
    except BaseException:  # timeout, dead server, or the caller interrupted: leave no orphan
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        import shutil

        shutil.rmtree(workdir, ignore_errors=True)  # the error message already carries the log tail
        raise
    bound = int(ready.read_text().strip())
    connect_host = "127.0.0.1" if host in ("0.0.0.0", "localhost") else host
    return ServerProcess(proc, connect_host, bound, log_path, workdir)
