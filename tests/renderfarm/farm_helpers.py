"""Helpers for the render-farm tests: dataset hashing, job subprocesses, process checks.

A uniquely named module (not ``conftest``) so ``from farm_helpers import ...`` cannot pick up
another directory's conftest when the whole suite runs.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:  # the toy scenarios are imported by name, also in workers
    sys.path.insert(0, str(HERE))


def dataset_digest(out_dir: Path) -> dict[str, str]:
    """sha256 of every dataset file (farm bookkeeping under .farm/ excluded), by relative path."""
    out = {}
    for path in sorted(Path(out_dir).rglob("*")):
        rel = path.relative_to(out_dir)
        if path.is_file() and rel.parts[0] != ".farm":
            out[str(rel)] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


def start_job(scenario: str, out_dir: Path, config: dict, *extra: str) -> subprocess.Popen:
    """The job as a real subprocess in its own session (so a test can kill it like a user)."""
    cmd = [sys.executable, str(HERE / "farm_runner.py"), scenario, str(out_dir), json.dumps(config), *extra]
    return subprocess.Popen(cmd, start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def wait_for(predicate, timeout: float = 60.0, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def count_files(directory: Path, pattern: str = "*.png") -> int:
    return len(list(Path(directory).glob(pattern))) if Path(directory).exists() else 0


def live_workers(out_dir: Path) -> list[dict]:
    """Workers listed in .farm/workers.json that have a pid and a server pid (when started)."""
    try:
        data = json.loads((Path(out_dir) / ".farm" / "workers.json").read_text())
    except (OSError, ValueError):
        return []
    return [w for w in data["workers"] if w["pid"] and w["state"] in ("idle", "busy")]


def pid_alive(pid: int) -> bool:
    """True for a running (non-zombie) process."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"
