"""The server side of the Blender worker: start it, talk to it, restart it after a crash.

The worker runs ``worker.py`` with the isolated environment's Python (see ``install.py``). It is
persistent: meshes are uploaded once per worker and per frame only the scene references travel.
A worker that dies (crash, OOM kill) or stops answering within ``timeout_s`` is killed and
reported as a :class:`~core.errors.RenderError` carrying the tail of its log; the next request
starts a fresh one (which receives every mesh again).
"""

from __future__ import annotations

import ctypes
import logging
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from sceneforge.core.errors import RenderError
from sceneforge.engine.server.cycles import wire

log = logging.getLogger(__name__)
WORKER_SCRIPT = Path(__file__).with_name("worker.py")


PR_SET_PDEATHSIG = 1  # <linux/prctl.h>
try:  # loaded before any fork: the child only calls it (no dynamic loading after fork)
    _LIBC = ctypes.CDLL(None, use_errno=True) if sys.platform.startswith("linux") else None
except OSError:  # pragma: no cover - no libc handle: the worker's own parent watch remains
    _LIBC = None


def _die_with_parent(parent: int):
    """A ``preexec_fn``: the worker gets SIGKILL when the server thread that started it dies
    (even by ``kill -9``: the worker runs in its own session, so nothing else reaches it), and
    exits at once when the server is already gone."""

    def preexec() -> None:
        if _LIBC is not None:
            _LIBC.prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
        if os.getppid() != parent:
            os._exit(1)

    return preexec


class WorkerDied(RenderError):
    """The Blender worker exited or hung; the next request restarts it."""


class BlenderWorker:
    """One persistent Blender process; not thread-safe (the server calls it from one thread)."""

    def __init__(
        self,
        python: Path,
        settings: dict,
        *,
        timeout_s: float = 600.0,
        log_path: Path | None = None,
        start_timeout_s: float = 120.0,
    ) -> None:
        self.python = Path(python)
        self.settings = dict(settings)
        self.timeout_s = float(timeout_s)
        self.start_timeout_s = float(start_timeout_s)
        self.log_path = log_path
        self.proc: subprocess.Popen | None = None
        self.generation = 0  # bumped per start: callers re-upload meshes when it changes
        self.blender_version = ""
        self._req = self._rep = -1
        self._log_file = None
        self._tmp: str | None = None

    # --- lifecycle --------------------------------------------------------------------------
    def ensure(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            return
        if self.proc is not None:
            self._cleanup()
        self._start()

    def _start(self) -> None:
        req_r, req_w = os.pipe()
        rep_r, rep_w = os.pipe()
        if self.log_path is not None:
            self.log_path.parent.mkdir(parents=True, exist_ok=True)
            self._log_file = open(self.log_path, "ab")
        out = self._log_file if self._log_file is not None else subprocess.DEVNULL
        self._tmp = tempfile.mkdtemp(prefix="sceneforge-cycles-")  # frame files; removed in _cleanup
        env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV"))}
        env["PYTHONNOUSERSITE"] = "1"
        try:
            self.proc = subprocess.Popen(
                [str(self.python), "-E", "-s", "-u", str(WORKER_SCRIPT), str(req_r), str(rep_w), self._tmp],
                pass_fds=(req_r, rep_w),
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=out,
                cwd=str(WORKER_SCRIPT.parent),
                env=env,
                start_new_session=True,
                preexec_fn=_die_with_parent(os.getpid()),
            )
        except OSError as e:
            for fd in (req_r, req_w, rep_r, rep_w):
                os.close(fd)
            shutil.rmtree(self._tmp, ignore_errors=True)
            self._tmp = None
            raise RenderError(f"cannot start the Blender worker {self.python}: {e}") from e
        os.close(req_r)
        os.close(rep_w)
        self._req, self._rep = req_w, rep_r
        self.generation += 1
        reply, _ = self._call({"op": "hello", "settings": self.settings}, None, self.start_timeout_s)
        self.blender_version = reply.get("blender", "")
        log.info("Blender worker pid %s started (Blender %s)", self.proc.pid, self.blender_version)

    def close(self) -> None:
        """Stop the worker and delete its log (kept while it runs: errors quote its tail)."""
        if self.log_path is not None:
            self.log_path.unlink(missing_ok=True)
        if self.proc is None:
            return
        if self.proc.poll() is None:
            try:
                wire.write_message(self._req, {"op": "quit"})
                self.proc.wait(timeout=10)
            except (OSError, subprocess.TimeoutExpired):
                pass
        self._cleanup()

    def kill(self) -> None:
        """SIGKILL the worker now, from any thread (shutdown): a call waiting for it returns
        within a second with :class:`WorkerDied`; the owner's thread cleans up."""
        proc = self.proc
        if proc is not None and proc.poll() is None:
            try:
                proc.kill()
            except OSError:
                pass

    def _cleanup(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
        for fd in (self._req, self._rep):
            if fd >= 0:
                try:
                    os.close(fd)
                except OSError:
                    pass
        self._req = self._rep = -1
        if self._tmp is not None:
            shutil.rmtree(self._tmp, ignore_errors=True)
            self._tmp = None
        if self._log_file is not None:
            self._log_file.close()
            self._log_file = None
        self.proc = None

    # --- requests ---------------------------------------------------------------------------
    def call(self, header: dict, arrays: dict | None = None) -> tuple[dict, dict]:
        """One request → reply; a dead/hung worker raises :class:`WorkerDied` (restart next call)."""
        self.ensure()
        return self._call(header, arrays, self.timeout_s)

    def _call(self, header: dict, arrays: dict | None, timeout_s: float) -> tuple[dict, dict]:
        try:
            wire.write_message(self._req, header, arrays)
            reply, out = self._read(timeout_s)
        except (OSError, EOFError, TimeoutError) as e:
            code = None
            if self.proc is not None and not isinstance(e, TimeoutError):
                try:  # a closed pipe means it is exiting: wait briefly for its exit code
                    code = self.proc.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    pass
            tail = self.log_tail()
            self._cleanup()
            what = (
                "hung (no reply in %.0f s)" % timeout_s
                if isinstance(e, TimeoutError)
                else f"exited (code {code})"
                if code is not None
                else f"failed ({e})"
            )
            raise WorkerDied(
                f"the Blender worker {what} during {header.get('op')!r}; it restarts on the next "
                f"request{': ' + tail if tail else ''}"
            ) from None
        if not reply.get("ok"):
            raise RenderError(f"Blender worker: {reply.get('error', 'unknown error')}")
        return reply, out

    def _read(self, timeout_s: float) -> tuple[dict, dict]:
        deadline = time.monotonic() + timeout_s
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError
            ready, _, _ = select.select([self._rep], [], [], min(left, 1.0))
            if ready:
                return wire.read_message(self._rep)
            if self.proc is not None and self.proc.poll() is not None:
                raise EOFError("worker exited")

    def log_tail(self, lines: int = 3) -> str:
        if self.log_path is None or not self.log_path.exists():
            return ""
        try:
            with open(self.log_path, "rb") as fh:
                fh.seek(max(0, fh.seek(0, 2) - 4096))
                text = fh.read().decode("utf-8", "replace")
        except OSError:
            return ""
        keep = [ln.strip() for ln in text.splitlines() if ln.strip() and not ln.startswith(("Fra:", "| ")) and "CUEW" not in ln]
        return " | ".join(keep[-lines:])

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc is not None and self.proc.poll() is None else None


def decode_png(data: np.ndarray) -> np.ndarray:
    import io

    from PIL import Image

    with Image.open(io.BytesIO(data.tobytes())) as im:
        return np.asarray(im.convert("RGB"))
