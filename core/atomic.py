"""Atomic file writes: a killed process never leaves a truncated file under its final name.

Every writer in the project (dataset images and tables, farm manifests, probe reports, mesh
caches, videos, the server's file outputs) goes through these helpers: the data is written to a
hidden temporary name in the *same directory* (same file system, so ``os.replace`` is atomic)
and renamed into place. On failure the temporary file is removed and the error names the final
path in one line (a full disk says "No space left on device", not a traceback).
"""

from __future__ import annotations

import json
import os
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

from sceneforge.core.errors import SceneforgeError


def temp_path(path: Path) -> Path:
    """A hidden sibling of ``path`` unique to this process and thread (never the final name)."""
    import threading

    path = Path(path)
    suffix = f".tmp{os.getpid()}.{threading.get_ident() % 100000}"
    name = f".{path.name}"
    # keep the temp name below NAME_MAX (255) even for long final names
    if len(name.encode()) + len(suffix) > 250:
        name = name.encode()[: 250 - len(suffix)].decode(errors="ignore")  # bytes: NAME_MAX counts bytes
    return path.with_name(name + suffix)


@contextmanager
def atomic_path(path: Path, *, mkdir: bool = True) -> Iterator[Path]:
    """Yield a temporary path to write; on success it is renamed to ``path``, on error removed.

    >>> with atomic_path(out / "video.mp4") as tmp:     # doctest: +SKIP
    ...     encoder.write(tmp)
    """
    path = Path(path)
    if mkdir:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise SceneforgeError(f"cannot create directory {path.parent}: {e.strerror or e}") from None
    tmp = temp_path(path)
    try:
        yield tmp
        os.replace(tmp, path)
    except OSError as e:
        _remove(tmp)
        raise SceneforgeError(f"cannot write {path}: {e.strerror or e}") from None
    except BaseException:
        _remove(tmp)
        raise


def atomic_write_bytes(path: Path, data: bytes) -> Path:
    """Write ``data`` to ``path`` atomically; returns ``path``."""
    with atomic_path(path) as tmp:
        with open(tmp, "wb") as fh:
            fh.write(data)
    return Path(path)


def atomic_write_text(path: Path, text: str) -> Path:
    """Write UTF-8 ``text`` to ``path`` atomically."""
    return atomic_write_bytes(path, text.encode("utf-8"))


def atomic_write_json(path: Path, obj: Any, *, indent: int | None = 2, sort_keys: bool = True) -> Path:
    """Canonical JSON (sorted keys, trailing newline) written atomically: stable bytes."""
    text = json.dumps(obj, indent=indent, sort_keys=sort_keys, allow_nan=False, default=_jsonable) + "\n"
    return atomic_write_text(path, text)


def _jsonable(v: Any) -> Any:
    """numpy scalars/arrays and paths as plain JSON values."""
    if hasattr(v, "tolist"):
        return v.tolist()
    if isinstance(v, (Path, os.PathLike)):
        return os.fspath(v)
    raise TypeError(f"{type(v).__name__} is not JSON serialisable")


def _remove(tmp: Path) -> None:
    try:
        if tmp.is_dir():
            import shutil

            shutil.rmtree(tmp, ignore_errors=True)
        else:
            tmp.unlink(missing_ok=True)
    except OSError:
        pass
