"""The isolated Blender environment for the Cycles renderer: where it lives, install, status.

``bpy`` (Blender as a Python module, PyPI) is GPL-3, ~970 MB, and pins numpy < 2, so it gets a
virtual environment of its own and is only ever imported by the worker process
(``worker.py``), never by sceneforge. Location: ``$SCENEFORGE_CYCLES_HOME`` if set, else
``renderers/cycles`` in sceneforge's cache (``core.paths.cache_root``: ``$SCENEFORGE_CACHE``,
else ``~/.cache/sceneforge``), beside the assets and weights. The environment counts as
installed once ``installed.json`` exists: it is written last, after ``import bpy`` succeeded in
the new venv, so an interrupted install is never mistaken for a working one.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from sceneforge.core.errors import ConfigError, RenderError
from sceneforge.core.paths import cache_root

BPY_REQUIREMENT = "bpy==5.0.1"
BPY_PYTHON = (3, 11)  # the only Python the bpy 5.0.1 wheels are built for
INSTALL_HINT = "run `sceneforge renderers install cycles` (creates an isolated ~1 GB Blender environment)"


def home() -> Path:
    """``$SCENEFORGE_CYCLES_HOME``, else ``$SCENEFORGE_CACHE/renderers/cycles``, else
    ``~/.cache/sceneforge/renderers/cycles``."""
    env = os.environ.get("SCENEFORGE_CYCLES_HOME")
    if env:
        return Path(env).expanduser()
    return cache_root() / "renderers" / "cycles"


def venv_python(root: Path | None = None) -> Path:
    root = root or home()
    return root / "venv" / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


@dataclass(frozen=True)
class CyclesInstall:
    root: Path
    python: Path
    blender: str
    requirement: str
    installed_at: str


def status(root: Path | None = None) -> CyclesInstall | None:
    """The installed environment, or None when absent or incomplete."""
    root = root or home()
    marker = root / "installed.json"
    py = venv_python(root)
    if not marker.is_file() or not py.exists():
        return None
    try:
        info = json.loads(marker.read_text())
    except (OSError, ValueError):
        return None
    return CyclesInstall(
        root, py, str(info.get("blender", "?")), str(info.get("requirement", "?")), str(info.get("installed_at", "?"))
    )


def require(root: Path | None = None) -> CyclesInstall:
    """The installed environment, or a RenderError saying how to install it (one line)."""
    inst = status(root)
    if inst is None:
        raise RenderError(f"the Cycles renderer is not installed at {root or home()}: {INSTALL_HINT}")
    return inst


def find_python311() -> str:
    """A Python 3.11 to build the venv from: this one if it is 3.11, else python3.11 on PATH."""
    if sys.version_info[:2] == BPY_PYTHON:
        return sys.executable
    found = shutil.which("python%d.%d" % BPY_PYTHON)
    if found:
        return found
    raise ConfigError(
        "the PyPI bpy 5.0.1 wheels need Python 3.11; install python3.11 "
        f"(this is Python {sys.version_info[0]}.{sys.version_info[1]})"
    )


def install(
    root: Path | None = None, *, requirement: str = BPY_REQUIREMENT, force: bool = False, echo: Callable[[str], None] = print
) -> CyclesInstall:
    """Create ``root/venv`` with ``requirement`` from the package index, verify, write the marker.

    ``echo`` receives progress lines (pip's own progress bar goes to the terminal). Idempotent:
    an existing complete install is kept unless ``force``.
    """
    root = root or home()
    if not force and (inst := status(root)) is not None:
        echo(f"cycles: already installed at {inst.root} (Blender {inst.blender}); --force reinstalls")
        return inst
    base_python = find_python311()
    t0 = time.monotonic()
    marker = root / "installed.json"
    marker.unlink(missing_ok=True)
    venv = root / "venv"
    if venv.exists():
        shutil.rmtree(venv)
    root.mkdir(parents=True, exist_ok=True)
    echo(f"cycles: [1/3] creating a virtual environment in {venv}")
    _run([base_python, "-m", "venv", str(venv)], "creating the virtual environment")
    py = venv_python(root)
    echo(f"cycles: [2/3] installing {requirement} from the package index (~300 MB download, ~1 GB on disk)")
    _run(
        [str(py), "-m", "pip", "install", "--disable-pip-version-check", requirement], f"pip install {requirement}", capture=False
    )
    echo("cycles: [3/3] checking that Blender starts")
    out = _run([str(py), "-I", "-c", "import bpy, numpy; print(bpy.app.version_string)"], "import bpy")
    blender = out.strip().splitlines()[-1] if out.strip() else "?"
    marker.write_text(
        json.dumps(
            {"blender": blender, "requirement": requirement, "installed_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
        )
        + "\n"
    )
    echo(f"cycles: installed Blender {blender} in {time.monotonic() - t0:.0f} s at {root}")
    return require(root)


def uninstall(root: Path | None = None) -> bool:
    root = root or home()
    if not root.exists():
        return False
    shutil.rmtree(root)
    return True


def _run(cmd: list[str], what: str, capture: bool = True) -> str:
    try:
        proc = subprocess.run(
            cmd,
            stdout=subprocess.PIPE if capture else None,
            stderr=subprocess.STDOUT if capture else None,
            text=True,
            check=False,
        )
    except OSError as e:
        raise RenderError(f"cycles install: {what} failed: {e}") from e
    if proc.returncode != 0:
        tail = " | ".join((proc.stdout or "").strip().splitlines()[-3:]) if capture else "see the output above"
        raise RenderError(f"cycles install: {what} failed (exit {proc.returncode}): {tail}")
    return proc.stdout or ""
