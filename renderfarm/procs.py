"""Signalling helpers for workers and servers: never raise for a process that is already gone."""

from __future__ import annotations

import os
import signal
from pathlib import Path


def send_signal(pid: int | None, sig: int = signal.SIGKILL) -> None:
    """Signal one process (default SIGKILL)."""
    try:
        if pid:
            os.kill(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def kill_group(pgid: int | None) -> None:
    """SIGKILL a whole process group (a worker leads its own; its server is in it)."""
    if not pgid:
        return
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def is_our_server(pid: int | None) -> bool:
    """Guard against pid reuse: only kill a process that looks like a sceneforge server."""
    if not pid:
        return False
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False
    return b"sceneforge" in cmdline  # `sceneforge serve`, `python -m sceneforge.engine.server`
