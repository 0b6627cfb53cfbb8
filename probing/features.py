"""On-disk feature cache: extract once per (backbone, weights, layer, preprocessing, images).

Layout: ``<cache_dir>/<key>/{patches.npy, prefix.npy, meta.json}``; arrays are fp16 ``.npy``
opened with ``mmap_mode="r"``, so a 5,000-image ViT-B layer (~1.5 GB) is not read into memory
until a head touches it. A layer directory is built under a temporary name and ``os.replace``d
into place with ``meta.json`` written last: an interrupted extraction leaves no entry that looks
complete, and a concurrent writer of the same key simply loses the rename.

The key hashes the inputs, not the contents, so an entry is checked every time it is opened
(issue 48: a truncated or zero-byte ``.npy``, an object array or a bad ``meta.json`` were
tracebacks; NaN features, a doubled width, fewer rows or a 10⁶ grid gave a report on garbage):
``meta.json`` a mapping with a 2-int ``grid`` and ``n``; both arrays fp16, 3-D, ``n`` rows (the
number of images asked for), ``grid`` patches, one width (``meta.json``'s ``patches_shape`` and
``prefix_shape`` when it has them) and every value finite (read once, in chunks). A failed check
is one line naming the file and what is wrong, and says to delete the entry to extract again.

Disk: an entry is ``n × (tokens + prefix) × width × 2`` bytes (fp16) plus two ``.npy`` headers
and ``meta.json`` (:func:`entry_bytes`; the shapes from :func:`layer_shapes`, one blank image
through the model). ``before_extract`` lets a caller refuse before anything is written (the
study checks the free space there). :func:`drop_entries` deletes entries so that a kill midway
never leaves one that looks complete: each is first renamed (atomically) to ``.trash-<key>-<pid>``
and only then removed; :func:`sweep_trash` removes what a killed deletion left, and the build
folder (``.tmp-<key>-<host>-<pid>``) of an extraction killed on this host (kill -9, OOM: no
``finally`` ran) once its process is gone (:func:`stale_builds`): a live writer's, another host's
(a cache on a shared file system under Ray) and an old unnamed one are left alone.

Example::

    feats = extract_features(bb, table["path"].tolist(), layers=[6, 12], cache_dir="cache/")
    feats[12].patches.shape    # (N, P, D) float16 memmap
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import socket
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np

from sceneforge.core.errors import ConfigError
from sceneforge.probing.data import content_hash
from sceneforge.probing.preprocess import load_batch

log = logging.getLogger(__name__)
CACHE_VERSION = 1


@dataclass
class LayerFeatures:
    """Cached tokens of one layer for every image, in the order of the ``paths`` given."""

    patches: np.ndarray  # (N, P, D) float16
    prefix: np.ndarray  # (N, K, D) float16, CLS + registers (K = 0 for CNNs)
    grid: tuple[int, int]
    key: str


def cache_key(backbone, layer: int, data_hash: str) -> str:
    """Everything that changes the numbers goes in; nothing else (labels, splits) does."""
    ident = {
        "v": CACHE_VERSION,
        "spec": backbone.spec,
        "weights": backbone.weights_hash,
        "layer": layer,
        "preprocess": backbone.preprocess.key(),
        "data": data_hash,
    }
    if getattr(backbone, "amp", False):  # half-precision forward (Backbone.to on a GPU): other numbers
        ident["amp"] = True  # (left out otherwise, so every float32 entry keeps its key)
    return hashlib.sha256(json.dumps(ident, sort_keys=True).encode()).hexdigest()[:32]


def extract_features(
    backbone,
    paths: list[str],
    layers: list[int],
    cache_dir: str | Path,
    batch_size: int = 64,
    progress: bool = True,
    before_extract: Callable[[list[int]], None] | None = None,
) -> dict[int, LayerFeatures]:
    """Return cached features for ``layers``, extracting only the layers not cached yet.

    All missing layers come from the same forward passes (one pass per batch).
    ``before_extract(missing_layers)`` runs before anything of them is written (it may raise:
    e.g. not enough disk for them); it is not called on a full cache hit.
    """
    cache_dir = Path(cache_dir)
    cache_dir.mkdir(parents=True, exist_ok=True)
    data_hash = content_hash(paths)
    keys = {n: cache_key(backbone, n, data_hash) for n in layers}
    missing = [n for n in layers if not (cache_dir / keys[n] / "meta.json").is_file()]
    if missing:
        sweep_trash(cache_dir)  # a killed run's leftovers: their disk is free again before the check below
        if before_extract is not None:
            before_extract(missing)
        log.info("extracting layers %s of %s for %d images", missing, backbone.spec, len(paths))
        _extract(backbone, paths, {n: cache_dir / keys[n] for n in missing}, batch_size, progress)
    else:
        log.info("feature cache hit for layers %s", layers)
    return {n: open_layer(cache_dir / keys[n], len(paths)) for n in layers}


CHECK_CHUNK_BYTES = 64 * 2**20  # finiteness is checked this many bytes at a time (memory stays flat)


def open_layer(path: Path, n: int | None = None) -> LayerFeatures:
    """The cached layer at ``path``, checked (module docstring); ``n``: the rows it must have."""
    path = Path(path)
    redo = f"delete {path} to extract it again"

    def bad(what: str) -> ConfigError:
        return ConfigError(f"feature cache {path}: {what}; {redo}")

    try:
        meta = json.loads((path / "meta.json").read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise bad(f"meta.json is not readable JSON ({type(e).__name__}: {str(e)[:100]})") from None
    grid = meta.get("grid") if isinstance(meta, dict) else None
    rows = meta.get("n") if isinstance(meta, dict) else None
    if not (isinstance(grid, list) and len(grid) == 2 and all(_whole(g) and g > 0 for g in grid)):
        raise bad(f"meta.json grid {str(grid)[:60]}: expected [rows, columns] of patches")
    if not (_whole(rows) and rows >= 0):
        raise bad(f"meta.json n {str(rows)[:40]}: expected the number of images")
    if n is not None and rows != n:
        raise bad(f"meta.json says {rows} images, {n} were asked for")
    arrays = {}
    for name in ("patches", "prefix"):
        try:
            a = np.load(path / f"{name}.npy", mmap_mode="r", allow_pickle=False)
        except (OSError, ValueError, EOFError) as e:  # truncated, zero bytes, an object array, not .npy
            raise bad(f"{name}.npy is not a readable array ({type(e).__name__}: {str(e)[:100]})") from None
        if not isinstance(a, np.ndarray) or a.dtype != np.float16 or a.ndim != 3:
            kind = f"{getattr(a, 'dtype', type(a).__name__)} of shape {getattr(a, 'shape', '?')}"
            raise bad(f"{name}.npy is {kind}; expected 3-D float16")
        if a.shape[0] != rows:
            raise bad(f"{name}.npy has {a.shape[0]} rows, meta.json says {rows} images")
        recorded = meta.get(f"{name}_shape")
        if recorded is not None and list(a.shape) != recorded:
            raise bad(f"{name}.npy has shape {list(a.shape)}, meta.json recorded {recorded}")
        arrays[name] = a
    patches, prefix = arrays["patches"], arrays["prefix"]
    if patches.shape[1] != grid[0] * grid[1]:
        raise bad(f"patches.npy has {patches.shape[1]} patches per image, meta.json's grid {grid} has {grid[0] * grid[1]}")
    if prefix.shape[2] != patches.shape[2]:
        raise bad(f"prefix.npy is {prefix.shape[2]} wide, patches.npy {patches.shape[2]}")
    for name, a in arrays.items():
        row_bytes = max(1, a[0].nbytes) if len(a) else 1
        step = max(1, CHECK_CHUNK_BYTES // row_bytes)
        for start in range(0, len(a), step):
            chunk = a[start : start + step]
            if not np.isfinite(chunk).all():
                i = start + int(np.argmax(~np.isfinite(chunk).reshape(len(chunk), -1).all(axis=1)))
                raise bad(f"{name}.npy row {i} has non-finite values (NaN or inf)")
    return LayerFeatures(patches, prefix, (int(grid[0]), int(grid[1])), path.name)


def _whole(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


TMP = ".tmp-"


def _build_name(key: str) -> str:
    """The folder an entry is built in: key, host and pid, so that a sweep can tell a build whose
    process died on this host (safe to remove) from a live one or another host's."""
    return f"{TMP}{key}-{socket.gethostname()}-{os.getpid()}"


def _extract(backbone, paths: list[str], targets: dict[int, Path], batch_size: int, progress: bool) -> None:
    tmp = {n: d.with_name(_build_name(d.name)) for n, d in targets.items()}
    writers: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    try:
        for start, tokens in _batches(backbone, paths, list(targets), batch_size, progress):
            for n, tok in tokens.items():
                if n not in writers:
                    writers[n] = _open_writers(tmp[n], len(paths), tok)
                end = start + tok.patches.shape[0]
                writers[n][0][start:end] = tok.patches.float().numpy()
                writers[n][1][start:end] = tok.prefix.float().numpy()
        for n, d in targets.items():
            _finish(tmp[n], d, writers.pop(n), backbone, n, tokens[n].grid, len(paths))
    finally:
        writers.clear()
        for t in tmp.values():
            shutil.rmtree(t, ignore_errors=True)


def _open_writers(tmp: Path, n: int, tok) -> tuple[np.ndarray, np.ndarray]:
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    _, p, d = tok.patches.shape
    k = tok.prefix.shape[1]
    patches = np.lib.format.open_memmap(tmp / "patches.npy", "w+", np.float16, (n, p, d))
    prefix = np.lib.format.open_memmap(tmp / "prefix.npy", "w+", np.float16, (n, k, d))
    return patches, prefix


def _finish(tmp: Path, final: Path, arrays, backbone, layer: int, grid, n: int) -> None:
    shapes = [list(a.shape) for a in arrays]
    for a in arrays:
        a.flush()
    del arrays
    meta = {
        "spec": backbone.spec,
        "weights_hash": backbone.weights_hash,
        "layer": layer,
        "preprocess": json.loads(backbone.preprocess.key()),
        "grid": list(grid),
        "n": n,
        "patches_shape": shapes[0],  # checked on every open (open_layer)
        "prefix_shape": shapes[1],
    }
    (tmp / "meta.json").write_text(json.dumps(meta, indent=1))
    if final.is_dir() and not (final / "meta.json").is_file():
        # not an entry (a complete one always has meta.json: it is renamed into place whole):
        # what an older, non-atomic deletion left; it would block the rename below
        shutil.rmtree(final, ignore_errors=True)
    try:
        os.replace(tmp, final)
    except OSError:  # another process finished the same key first: keep theirs
        log.info("cache entry %s appeared meanwhile; keeping it", final.name)


BLOCK = 4096  # a file's size on disk is rounded up to the file system's block (4 KiB on ext4, xfs, tmpfs)
NPY_HEADER = 128  # numpy's .npy v1 header of a 3-D float16 array (padded to 64 bytes, 128 in practice)
META_BYTES = 1024  # meta.json: ~0.4 KB


def _on_disk(size: int) -> int:
    return -(-size // BLOCK) * BLOCK


def entry_bytes(n: int, tokens: int, prefix: int, width: int) -> int:
    """Bytes one cache entry (one layer, ``n`` images) takes on disk: fp16 patches
    ``n × tokens × width × 2`` and prefix ``n × prefix × width × 2``, each with its .npy header,
    plus meta.json, each rounded up to a 4 KiB block."""
    return _on_disk(NPY_HEADER + 2 * n * tokens * width) + _on_disk(NPY_HEADER + 2 * n * prefix * width) + _on_disk(META_BYTES)


def layer_shapes(backbone, layers: list[int]) -> dict[int, tuple[int, int, int]]:
    """``{layer: (tokens, prefix, width)}`` of one image at the model's input size: a blank image
    through the model (not counted in ``forward_calls``; a model on the ``meta`` device computes
    shapes only: nothing is allocated or run)."""
    import torch

    h, w = backbone.preprocess.input_hw
    if backbone.device == "meta":
        with torch.inference_mode():
            out = backbone._forward(torch.zeros(1, 3, h, w, device="meta"), list(layers))
    else:
        out = backbone.extract(torch.zeros(1, 3, h, w), list(layers))
        backbone.forward_calls -= 1  # a probe, not an extraction
    return {n: (int(t.patches.shape[1]), int(t.prefix.shape[1]), int(t.patches.shape[2])) for n, t in out.items()}


TRASH = ".trash-"


def drop_entries(cache_dir: str | Path, keys: list[str]) -> int:
    """Delete the cache entries ``keys`` (nothing else); returns the bytes freed. Each entry is
    renamed to ``.trash-<key>-<pid>`` first (one atomic step: the entry is either complete in
    place or gone from its key), then removed: a kill midway leaves only trash, never an entry
    that looks complete (:func:`sweep_trash` removes it later)."""
    cache_dir = Path(cache_dir)
    freed = 0
    for key in keys:
        entry = cache_dir / key
        if not entry.is_dir():
            continue
        trash = cache_dir / f"{TRASH}{key}-{os.getpid()}"
        shutil.rmtree(trash, ignore_errors=True)
        freed += sum(f.stat().st_size for f in entry.iterdir() if f.is_file())
        os.replace(entry, trash)
        shutil.rmtree(trash, ignore_errors=True)
    return freed


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's live process
        return True
    return True


def stale_builds(cache_dir: str | Path) -> list[Path]:
    """Build folders (``.tmp-<key>-<host>-<pid>``) of extractions that were killed on this host:
    the name's host is this one and its pid is not running. A kill -9 (or the OOM killer) skips
    the ``finally`` that removes a build, and the folder holds up to a whole layer's tokens
    (~1 GB for 5,000 ViT-S images), which the study's disk check would count as used. Live
    builds (this process's included), another host's and the host-less names of sceneforge
    ≤ 0.7.0 are not listed: removing a live writer's folder would break its extraction."""
    cache_dir = Path(cache_dir)
    if not cache_dir.is_dir():
        return []
    host, me, out = socket.gethostname(), os.getpid(), []
    for d in cache_dir.iterdir():
        if not (d.name.startswith(TMP) and d.is_dir()):
            continue
        rest = d.name[len(TMP) :]
        key, _, owner = rest.partition("-")
        name_host, _, pid = owner.rpartition("-")
        if len(key) != 32 or not name_host or not pid.isdigit():
            continue  # not ours to judge (an old name without a host, a user's folder)
        if name_host == host and int(pid) != me and not _pid_alive(int(pid)):
            out.append(d)
    return out


def sweep_trash(cache_dir: str | Path) -> int:
    """Remove what killed runs left: a :func:`drop_entries` killed midway (``.trash-*``) and the
    build folders of extractions killed on this host (:func:`stale_builds`); returns how many
    folders were removed. Never an entry: entries are complete or absent."""
    cache_dir = Path(cache_dir)
    if not cache_dir.is_dir():
        return 0
    left = [d for d in cache_dir.iterdir() if d.name.startswith(TRASH) and d.is_dir()]
    left += stale_builds(cache_dir)
    for d in left:
        log.info("removing %s (left by a killed run)", d)
        shutil.rmtree(d, ignore_errors=True)
    return len(left)


def _batches(backbone, paths: list[str], layers: list[int], batch_size: int, progress: bool):
    """Yield (start, tokens) per batch; the next batch is decoded while the model runs."""
    import torch
    from tqdm import tqdm

    starts = list(range(0, len(paths), batch_size))
    pre = backbone.preprocess
    with (
        ThreadPoolExecutor(max_workers=1) as pool,
        tqdm(total=len(paths), desc=f"extract {backbone.spec}", unit="img", disable=not progress) as bar,
    ):
        future = pool.submit(load_batch, paths[0:batch_size], pre) if starts else None
        for i, start in enumerate(starts):
            batch = future.result()
            if i + 1 < len(starts):
                nxt = starts[i + 1]
                future = pool.submit(load_batch, paths[nxt : nxt + batch_size], pre)
            yield start, backbone.extract(torch.from_numpy(batch), layers)
            bar.update(len(batch))
