"""Levels of detail kept on disk beside the built assets, as a game engine's derived-data cache.

Decimating every level of every asset of an environment costs seconds of CPU (city: 99 levels of
37 assets, 6.9 s on the 2-core machine), and every render server computed them again in its own
process: a farm of two workers twice, a 32-sample ``sceneforge demo`` more than its renders. A
level is a pure function of the mesh, its triangle budget and the decimation code, so it is kept
in ``<cache>/lods/`` under a key made of all three and read back by later processes.

* **Exact**: the file holds the level's arrays losslessly and its ``meta``; its materials are
  the full mesh's own (decimation keeps them: the file stores their indices), so a level read
  back is the level computed, array for array (``tests/assets_manifest/test_lod_cache.py``) and
  images stay byte-identical whichever process computed it.
* **Keyed by content**: a hash of the mesh's geometry (vertices, faces, colours, normals, UVs,
  face materials), the budget, and a fingerprint of the code that decimates (the source of
  ``lod.py``, ``decimate.py``, ``normalize.py``, the versions of ``fast-simplification`` and
  numpy): a rebuilt asset or changed decimation never reads a stale level.
* **Best effort**: an unreadable or corrupt file is recomputed and replaced; a cache that cannot
  be written (read-only, full disk) only costs the recomputation. Files are written atomically
  (temp + rename), so two servers filling the same level leave one whole file.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
from pathlib import Path
from typing import Callable

import numpy as np

from sceneforge.assets_manifest import decimate, lod, normalize
from sceneforge.core.atomic import atomic_path
from sceneforge.core.meshes import RenderMesh

log = logging.getLogger(__name__)

SUBDIR = "lods"
LAYOUT = 1  # file layout version (part of the key)


@functools.lru_cache(maxsize=1)
def code_fingerprint() -> str:
    """Hash of what a level depends on besides the mesh: the decimation code and its libraries."""
    h = hashlib.blake2b(digest_size=16)
    h.update(f"layout {LAYOUT}".encode())
    for mod in (lod, decimate, normalize):
        h.update(Path(mod.__file__).read_bytes())
    try:
        from importlib.metadata import version

        h.update(f"fast-simplification {version('fast-simplification')}".encode())
    except Exception:  # noqa: BLE001 - not installed: decimation is unavailable anyway
        h.update(b"fast-simplification none")
    h.update(f"numpy {np.__version__}".encode())
    return h.hexdigest()


def mesh_key(mesh: RenderMesh) -> str:
    """Hash of the geometry a level is computed from."""
    h = hashlib.blake2b(digest_size=16)
    for name in ("vertices", "faces", "colors", "normals", "uvs", "face_materials"):
        a = getattr(mesh, name)
        h.update(name.encode())
        if a is not None:
            a = np.ascontiguousarray(a)
            h.update(f"{a.dtype.str}{a.shape}".encode())
            h.update(a.tobytes())
    h.update(f"materials {len(mesh.materials)}".encode())
    return h.hexdigest()


class LodCache:
    """``get(asset_id, mesh, budget, compute)``: the level from disk, else ``compute()`` stored."""

    def __init__(self, root: Path | None):
        self.root = Path(root) / SUBDIR if root is not None else None
        self._keys: dict[int, tuple[RenderMesh, str]] = {}  # id(mesh) -> (mesh, key): hash once per mesh

    def path(self, asset_id: str, mesh: RenderMesh, budget: int) -> Path | None:
        if self.root is None:
            return None
        got = self._keys.get(id(mesh))
        if got is None or got[0] is not mesh:
            got = self._keys[id(mesh)] = (mesh, mesh_key(mesh))
        key = hashlib.blake2b(f"{got[1]} {int(budget)} {code_fingerprint()}".encode(), digest_size=12).hexdigest()
        safe = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in asset_id)[:80]
        return self.root / f"{safe}-{int(budget)}-{key}.npz"

    def get(self, asset_id: str, mesh: RenderMesh, budget: int, compute: Callable[[], RenderMesh]) -> RenderMesh:
        path = self.path(asset_id, mesh, budget)
        if path is not None and path.exists():
            try:
                return read_level(path, mesh)
            except Exception as e:  # noqa: BLE001 - a damaged cache entry is recomputed
                log.warning("level of detail %s unreadable (%s): recomputing it", path, e)
        level = compute()
        if path is not None and level is not mesh:
            try:
                write_level(path, level, mesh)
            except Exception as e:  # noqa: BLE001 - a cache that cannot be written costs time only
                log.debug("level of detail not cached at %s: %s", path, e)
        return level


def write_level(path: Path, level: RenderMesh, full: RenderMesh) -> None:
    """Store ``level``'s arrays and meta; its materials as indices into ``full.materials``
    (ValueError when it has one ``full`` lacks: then it is not cached)."""
    index = []
    for m in level.materials:
        k = next((j for j, f in enumerate(full.materials) if f is m), None)
        if k is None:
            raise ValueError("a level has a material its full mesh lacks")
        index.append(k)
    arrays = {
        "vertices": level.vertices,
        "faces": level.faces,
        "colors": level.colors,
        "material_index": np.asarray(index, dtype=np.int64),
        "meta": np.frombuffer(json.dumps(level.meta, sort_keys=True).encode(), dtype=np.uint8),
    }
    for k in ("normals", "uvs", "face_materials"):
        if getattr(level, k) is not None:
            arrays[k] = getattr(level, k)
    with atomic_path(path) as tmp, open(tmp, "wb") as fh:
        np.savez(fh, **arrays)  # uncompressed: read back in a millisecond, levels are small


def read_level(path: Path, full: RenderMesh) -> RenderMesh:
    with np.load(path, allow_pickle=False) as z:
        opt = {k: z[k] for k in ("normals", "uvs", "face_materials") if k in z}
        mats = tuple(full.materials[int(k)] for k in z["material_index"])
        meta = json.loads(bytes(z["meta"]).decode())
        return RenderMesh(z["vertices"], z["faces"], z["colors"], meta=meta, materials=mats, **opt)
