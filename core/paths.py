"""Names that become paths, and paths that must stay inside an output directory.

Why: an environment file is user input, and its names (environment ``name``, triple ``id``)
become directory names of the dataset. ``id: ../../../escaped_triple`` used to write outside
``--out`` with exit 0. Two defences, both here so every writer uses the same rules:

* :func:`check_component` — a name used as one path component must be 1-128 characters of
  ``[A-Za-z0-9_.-]``, not start with ``.`` or ``-`` (no ``..``, no hidden files, no options);
* :func:`confined` — a relative path joined to an output root must not leave it, neither by
  ``..`` nor through a symlinked directory that already exists inside the root and points out.

And where sceneforge keeps what it fetches, builds and installs: :func:`cache_root`
(``$SCENEFORGE_CACHE``, else ``~/.cache/sceneforge``), the one definition that the asset library
(``built/``, ``looks/``), the pretrained weights (``weights/``) and the Cycles renderer
(``renderers/cycles``) all use.

>>> check_component("rock_truck", "triple id")
'rock_truck'
>>> confined(Path("/data/out"), "desert/ego/rock_truck/img_0000.jpg")   # doctest: +SKIP
"""
from __future__ import annotations

import os
import re
from pathlib import Path

from core.errors import ConfigError, PathSecurityError

_COMPONENT = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.\-]{0,127}$")


def cache_root(cache_dir: str | os.PathLike | None = None) -> Path:
    """``cache_dir`` if given, else ``$SCENEFORGE_CACHE``, else ``~/.cache/sceneforge``."""
    if cache_dir is not None:
        return Path(cache_dir)
    return Path(os.environ.get("SCENEFORGE_CACHE") or Path.home() / ".cache" / "sceneforge")


def check_component(name: str, where: str) -> str:
    """``name`` if it is safe as a single path component, else ConfigError naming ``where``."""
    if not isinstance(name, str) or not _COMPONENT.match(name):
        raise ConfigError(f"{where} {str(name)[:60]!r}: use 1-128 letters, digits, '_', '-', '.' "
                          "(not starting with '.' or '-'); it becomes a directory name")
    return name


def confined(root: Path, rel: str | os.PathLike) -> Path:
    """``root / rel`` after checking that it stays inside ``root``.

    Refuses absolute paths, ``..`` components, and existing symlinks on the way whose target
    lies outside ``root`` (a symlink inside ``root`` pointing inside ``root`` is fine).
    """
    root = Path(root)
    parts = Path(rel).parts
    if not parts or Path(rel).is_absolute() or ".." in parts:
        raise PathSecurityError(f"{rel}: must be a relative path below {root} without '..'")
    real_root = os.path.realpath(root)
    here = root
    for part in parts:
        here = here / part
        if os.path.islink(here):
            target = os.path.realpath(here)
            if target != real_root and not target.startswith(real_root.rstrip(os.sep) + os.sep):
                raise PathSecurityError(f"{here} is a symlink to {target}, outside the output directory {root}")
    return root.joinpath(*parts)
