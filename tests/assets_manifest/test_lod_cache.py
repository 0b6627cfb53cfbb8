"""Levels of detail kept on disk (assets_manifest/lod_cache.py): read back exactly, keyed by
content, recomputed when damaged, harmless when the cache cannot be written."""

from __future__ import annotations

import logging

import numpy as np

import sceneforge.assets_manifest.lod as lod
from sceneforge.assets_manifest import AssetLibrary
from sceneforge.assets_manifest.lod_cache import SUBDIR, mesh_key

ASSET = "proc_bear"  # 4,000 triangles, 4 materials: every array a level carries
ARRAYS = ("vertices", "faces", "colors", "normals", "uvs", "face_materials")


def _same(a, b) -> None:
    for k in ARRAYS:
        x, y = getattr(a, k), getattr(b, k)
        assert (x is None) == (y is None), k
        if x is not None:
            assert x.dtype == y.dtype and np.array_equal(x, y), k
    assert a.meta == b.meta
    assert len(a.materials) == len(b.materials) and all(p is q for p, q in zip(a.materials, b.materials))


def test_a_level_read_by_another_library_is_the_level_computed(tmp_path, monkeypatch):
    first = AssetLibrary.procedural(cache_dir=tmp_path)
    full = first.mesh(ASSET)
    budget = max(300, full.n_triangles // 4)
    computed = first.mesh_lod(ASSET, budget)
    assert computed.n_triangles < full.n_triangles and computed.materials
    files = list((tmp_path / SUBDIR).glob(f"{ASSET}-{budget}-*.npz"))
    assert len(files) == 1

    def no_decimation(*a, **k):
        raise AssertionError("decimated again instead of reading the cached level")

    monkeypatch.setattr(lod, "simplified", no_decimation)
    second = AssetLibrary.procedural(cache_dir=tmp_path)  # another process, as far as caches go
    read = second.mesh_lod(ASSET, budget)
    monkeypatch.undo()
    # the same arrays, and the materials are the second library's own full mesh's (not copies)
    ref = lod.simplified(second.mesh(ASSET), budget)
    _same(read, ref)
    _same(computed, lod.simplified(full, budget))


def test_the_key_follows_the_geometry_and_the_budget(tmp_path):
    lib = AssetLibrary.procedural(cache_dir=tmp_path)
    full = lib.mesh(ASSET)
    lib.mesh_lod(ASSET, 1000)
    lib.mesh_lod(ASSET, 600)
    assert len(list((tmp_path / SUBDIR).glob(f"{ASSET}-*.npz"))) == 2
    moved = type(full)(
        full.vertices + np.float32(1.0),
        full.faces,
        full.colors,
        meta=full.meta,
        normals=full.normals,
        uvs=full.uvs,
        materials=full.materials,
        face_materials=full.face_materials,
    )
    assert mesh_key(moved) != mesh_key(full) and mesh_key(full) == mesh_key(lib.mesh(ASSET))


def test_a_damaged_level_is_recomputed_and_replaced(tmp_path, caplog):
    AssetLibrary.procedural(cache_dir=tmp_path).mesh_lod(ASSET, 1000)
    (path,) = (tmp_path / SUBDIR).glob(f"{ASSET}-1000-*.npz")
    path.write_bytes(path.read_bytes()[:200])  # a torn file
    lib = AssetLibrary.procedural(cache_dir=tmp_path)
    with caplog.at_level(logging.WARNING, logger="sceneforge.assets_manifest.lod_cache"):
        level = lib.mesh_lod(ASSET, 1000)
    assert "unreadable" in caplog.text and path.name in caplog.text
    _same(level, lod.simplified(lib.mesh(ASSET), 1000))
    caplog.clear()
    again = AssetLibrary.procedural(cache_dir=tmp_path)  # the file was replaced: read without a warning
    with caplog.at_level(logging.WARNING, logger="sceneforge.assets_manifest.lod_cache"):
        _same(again.mesh_lod(ASSET, 1000), lod.simplified(again.mesh(ASSET), 1000))
    assert "unreadable" not in caplog.text


def test_a_cache_that_cannot_be_written_costs_only_the_recomputation(tmp_path):
    """A file where the directory should be (as a full or read-only disk: the write fails)."""
    (tmp_path / SUBDIR).write_text("not a directory")
    lib = AssetLibrary.procedural(cache_dir=tmp_path)
    _same(lib.mesh_lod(ASSET, 1000), lod.simplified(lib.mesh(ASSET), 1000))
    assert (tmp_path / SUBDIR).read_text() == "not a directory"
