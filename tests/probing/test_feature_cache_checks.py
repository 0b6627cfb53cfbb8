"""Issue 48 items 7-8: a feature cache entry is checked when it is opened. The cache key hashes
the inputs (backbone, weights, layer, preprocessing, image bytes), not the entry's contents, so
a damaged or replaced entry used to be read as it was: a truncated or zero-byte ``.npy``, an
object array or a bad ``meta.json`` were tracebacks, and NaN features, a doubled width, fewer
rows or a 10⁶ grid gave rc 0 and a report on garbage. Each is now one line naming the entry."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

from sceneforge.core.errors import ConfigError
from sceneforge.probing.backbones import create_backbone
from sceneforge.probing.data import load_datasets
from sceneforge.probing.features import extract_features

# the probing conftest's tiny ViT (not imported: another directory's `conftest` can be first on sys.path)
TINY_VIT = {"img_size": 32, "patch_size": 8, "depth": 3, "embed_dim": 32, "num_heads": 2}


def _backbone():
    return create_backbone("timm:vit_small_patch16_224", weights="random", model_kwargs=TINY_VIT)


def _load(path):
    return np.load(path, allow_pickle=False)


def _save(path, array) -> None:
    with open(path, "wb") as f:  # np.save(path) would append .npy to a temp name; write in place
        np.save(f, array, allow_pickle=True)


def _truncate(path) -> None:
    path.write_bytes(path.read_bytes()[:1000])


def _meta(entry, **changes) -> None:
    meta = json.loads((entry / "meta.json").read_text())
    meta.update(changes)
    (entry / "meta.json").write_text(json.dumps(meta))


DAMAGE = {
    "truncated": (lambda e: _truncate(e / "patches.npy"), "patches.npy is not a readable"),
    "zero bytes": (lambda e: (e / "prefix.npy").write_bytes(b""), "prefix.npy is not a readable"),
    "object array": (lambda e: _save(e / "patches.npy", np.array([{"x": 1}] * 3, dtype=object)), "patches.npy is not a readable"),
    "fewer rows": (lambda e: _save(e / "patches.npy", _load(e / "patches.npy")[:-1]), "patches.npy has 79 rows, meta.json says"),
    "bad meta": (lambda e: (e / "meta.json").write_text("{not json"), "meta.json is not readable JSON"),
    "meta fewer rows": (lambda e: _meta(e, n=79), "meta.json says 79 images, 80 were asked for"),
    "nan": (lambda e: _save(e / "patches.npy", _with_nan(_load(e / "patches.npy"))), "patches.npy row 7 has non-finite values"),
    "doubled width": (
        lambda e: _save(e / "patches.npy", np.concatenate([_load(e / "patches.npy")] * 2, axis=2)),
        "patches.npy has shape [80, 16, 64], meta.json recorded [80, 16, 32]",
    ),
    "million grid": (lambda e: _meta(e, grid=[1000, 1000]), "16 patches per image, meta.json's grid [1000, 1000] has 1000000"),
    "float32": (lambda e: _save(e / "prefix.npy", _load(e / "prefix.npy").astype(np.float32)), "prefix.npy is float32"),
}


def _with_nan(a: np.ndarray) -> np.ndarray:
    a = np.array(a)
    a[7, 3, 5] = np.nan
    return a


@pytest.fixture
def cached(image_data, tmp_path):
    """(paths, cache dir, the layer-3 entry) after one real extraction."""
    paths = load_datasets(image_data)["path"].tolist()
    cache = tmp_path / "cache"
    feats = extract_features(_backbone(), paths, [3], cache, batch_size=40, progress=False)
    return paths, cache, cache / feats[3].key


@pytest.mark.parametrize("damage", list(DAMAGE))
def test_a_damaged_cache_entry_is_refused_in_one_line(cached, damage):
    paths, cache, entry = cached
    spoil, words = DAMAGE[damage]
    spoil(entry)
    bb = _backbone()
    with pytest.raises(ConfigError) as e:
        extract_features(bb, paths, [3], cache, batch_size=40, progress=False)
    message = str(e.value)
    assert words in message and f"feature cache {entry}" in message and "delete" in message, message
    assert "\n" not in message
    assert bb.forward_calls == 0  # a cache hit: refused, not silently re-extracted


def test_an_intact_entry_opens_and_deleting_a_damaged_one_re_extracts(cached):
    paths, cache, entry = cached
    again = extract_features(_backbone(), paths, [3], cache, batch_size=40, progress=False)[3]
    assert again.patches.shape == (80, 16, 32) and again.grid == (4, 4)
    DAMAGE["nan"][0](entry)
    shutil.rmtree(entry)  # what the message says to do
    bb = _backbone()
    fresh = extract_features(bb, paths, [3], cache, batch_size=40, progress=False)[3]
    assert bb.forward_calls == 2 and np.isfinite(np.asarray(fresh.patches)).all()
