"""Optional extras (``pyproject.toml``'s ``[project.optional-dependencies]``) and the one line a
command says when one is missing.

Why: the base install (README command 1) has no torch. A new user who ran ``sceneforge demo`` and
then the probe it suggests got ``ModuleNotFoundError: No module named 'torch'`` as a traceback
(issue 47). Every command that needs an extra now says, in one line and exit 2 (a
:class:`MissingExtra` is a :class:`ConfigError`), which install command adds it::

    sceneforge probe: error: needs the probe extra (torch, timm not installed): pip install -e ".[probe]" ...

Commands check up front (:func:`require_extra`, nothing imported, a few ms); the CLI also turns any
``ModuleNotFoundError`` of an extra's module into the same line (:func:`missing_extra_line`), so a
benchmark or a code path nobody checked says it too. Dependency-free, like the rest of core.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

from sceneforge.core.errors import ConfigError

# extra -> the top-level modules it installs that our code imports (pyproject.toml keeps the pins)
EXTRAS: dict[str, tuple[str, ...]] = {
    "probe": ("torch", "torchvision", "timm", "transformers", "safetensors", "onnx"),
    "ray": ("ray",),
    "s3": ("s3fs", "fsspec", "aiobotocore"),
}


class MissingExtra(ConfigError):
    """A command needs an optional extra that is not installed (exit 2, one line)."""


def importable(module: str) -> bool:
    """True when ``import module`` would find it (nothing is imported). A module set to None in
    ``sys.modules`` (how Python blocks an import) counts as missing."""
    if module in sys.modules:
        return sys.modules[module] is not None
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def install_command(extra: str) -> str:
    """How to add ``extra`` here: from a source checkout (an editable install, README command 1)
    ``pip install -e ".[extra]"`` (the checkout's path when it is not the current directory),
    else from PyPI ``pip install "sceneforge[extra]"``."""
    root = source_checkout()
    if root is None:
        return f'pip install "sceneforge[{extra}]"'
    where = "." if root == Path.cwd().resolve() else str(root)
    return f'pip install -e "{where}[{extra}]"'


def source_checkout() -> Path | None:
    """The source checkout this package runs from (an editable install: ``pyproject.toml`` beside
    ``core/``), else None (a wheel in site-packages)."""
    root = Path(__file__).resolve().parents[1]
    return root if (root / "pyproject.toml").is_file() and (root / "core" / "extras.py").is_file() else None


def missing(extra: str) -> list[str]:
    """The modules of ``extra`` that are not installed (empty: the extra is there)."""
    return [m for m in EXTRAS[extra] if not importable(m)]


def require_extra(extra: str, modules: tuple[str, ...] | None = None) -> None:
    """Raise :class:`MissingExtra` (one line naming the install command) unless every module of
    ``extra`` (or just ``modules`` of it) is installed."""
    absent = [m for m in (modules or EXTRAS[extra]) if not importable(m)]
    if absent:
        raise MissingExtra(needs_line(extra, absent))


def needs_line(extra: str, absent: list[str]) -> str:
    """``needs the probe extra (torch not installed): pip install -e ".[probe]" ...``"""
    how = install_command(extra)
    if source_checkout() is not None:
        how += f' (in the source checkout; from PyPI: pip install "sceneforge[{extra}]")'
    return f"needs the {extra} extra ({', '.join(absent)} not installed): {how}"


def missing_extra_line(error: ModuleNotFoundError) -> str | None:
    """The one line for a ``ModuleNotFoundError`` of a module an extra installs (``torch``,
    ``torch.nn``, ``ray``), or None when the module is no extra's, or is installed (then the
    error is a real bug: let its traceback show)."""
    top = (error.name or "").split(".")[0]
    for extra, modules in EXTRAS.items():
        if top in modules and not importable(top):
            return needs_line(extra, [top])
    return None
