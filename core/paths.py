"""Names that become paths, and paths that must stay inside an output directory.

Why: an environment file is user input, and its names (environment ``name``, triple ``id``)
become directory names of the dataset. ``id: ../../../escaped_triple`` used to write outside
``--out`` with exit 0. Two defences, both here so every writer uses the same rules:

* :func:`check_component` — a name used as one path component must be 1-128 characters of
  ``[A-Za-z0-9_.-]``, not start with ``.`` or ``-`` (no ``..``, no hidden files, no options);
* :func:`confined` — a relative path joined to an output root must not leave it, neither by
  ``..`` nor through a symlinked directory that already exists inside the root and points out.

And the converse for what a dataset's own tables and records name (issue 39: a ``metadata.csv``
row ``file_name=../../x/victim.jpg`` made ``degrade`` write PNGs next to the victim, and a scene
record's ``files.image: /etc/hostname`` was read): :func:`inside` — a path read from a dataset
must resolve, symlinks followed, to a file below the dataset root, or the command stops with one
line naming where the value came from. Every reader of dataset tables uses it (degrade,
render-record, probe, export, preview).

And for names that arrive from elsewhere and become paths below a directory we write (issue 48:
a bucket's keys ``h/../../../../x.txt`` and ``h//etc/y`` made a resume from the bucket write four
levels above its staging directory and at an absolute path): :func:`relative_key` — a key must be
a plain relative path (no empty, ``.`` or ``..`` component, no NUL, not absolute), checked for
every key before the first byte is written, then joined with :func:`confined`.

And where sceneforge keeps what it fetches, builds and installs: :func:`cache_root`
(``$SCENEFORGE_CACHE``, else ``~/.cache/sceneforge``), the one definition that the asset library
(``built/``, ``looks/``), the pretrained weights (``weights/``) and the Cycles renderer
(``renderers/cycles``) all use.

>>> check_component("rock_truck", "triple id")
'rock_truck'
>>> confined(Path("/data/out"), "desert/ego/rock_truck/img_0000.jpg")   # doctest: +SKIP
>>> inside(Path("/data/out"), "desert/ego/img_0000.jpg", "samples.parquet row 1 file_name")  # doctest: +SKIP
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from sceneforge.core.errors import ConfigError, PathSecurityError

_COMPONENT = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.\-]{0,127}$")


def cache_root(cache_dir: str | os.PathLike | None = None) -> Path:
    """``cache_dir`` if given, else ``$SCENEFORGE_CACHE``, else ``~/.cache/sceneforge``."""
    if cache_dir is not None:
        return Path(cache_dir)
    return Path(os.environ.get("SCENEFORGE_CACHE") or Path.home() / ".cache" / "sceneforge")


def check_component(name: str, where: str) -> str:
    """``name`` if it is safe as a single path component, else ConfigError naming ``where``."""
    if not isinstance(name, str) or not _COMPONENT.match(name):
        raise ConfigError(
            f"{where} {str(name)[:60]!r}: use 1-128 letters, digits, '_', '-', '.' "
            "(not starting with '.' or '-'); it becomes a directory name"
        )
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


def relative_key(key, what: str) -> str:
    """``key`` if it is a plain relative path (``a/b/c.png``), else PathSecurityError naming ``what``.

    Why: object-store keys, archive members and table fields are strings someone else chose;
    ``a//b``, ``./a``, ``a/../../b`` and ``/abs`` must not be normalised into something that
    happens to work (a key that needs normalising was not written by us)."""
    if not isinstance(key, str) or not key or "\x00" in key:
        raise PathSecurityError(f"{what} {str(key)[:80]!r}: not a relative path")
    parts = key.split("/")
    bad = next((p for p in parts if p in ("", ".", "..")), None)
    if bad is not None:
        shown = "an empty" if bad == "" else repr(bad)
        raise PathSecurityError(
            f"{what} {key[:120]!r}: {shown} path component ({'absolute or ' if key.startswith('/') else ''}"
            "leaves its directory); refused, nothing written"
        )
    return key


def inside(root: str | os.PathLike, rel, what: str) -> Path:
    """``root / rel`` if it resolves (symlinks followed) to a path below ``root``, else
    PathSecurityError naming ``what`` (the table/record, row and field the value came from).

    Why: dataset tables and scene records are files anyone can edit or hand over; their paths are
    data, not permission to read or write elsewhere. Refused: non-strings and empty values,
    absolute paths, ``..`` that climbs out, and symlinks whose target lies outside ``root``
    (``a/../b`` that stays inside is fine). The path need not exist (variants are checked
    before they are written).
    """
    root = Path(root)
    text = rel if isinstance(rel, str) else None
    if isinstance(rel, os.PathLike):
        text = os.fspath(rel)
    if not text or "\x00" in text:
        raise PathSecurityError(f"{what} {str(rel)[:80]!r}: not a file path (expected a path relative to {root})")
    if Path(text).is_absolute():
        raise PathSecurityError(f"{what} {text[:80]!r}: absolute path; dataset paths must be relative to {root}")
    real_root = os.path.realpath(root)
    target = os.path.realpath(os.path.join(real_root, text))
    if not target.startswith(real_root.rstrip(os.sep) + os.sep):
        raise PathSecurityError(
            f"{what} {text[:80]!r}: resolves to {target[:120]}, outside the dataset {root}; dataset paths must stay inside it"
        )
    return root / text
