"""Feature cache: shapes per layer, values, cache hits without a forward pass, partial reuse,
keys that change with weights/preprocessing/pixels, and interrupted writes leaving nothing."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

from sceneforge.core.errors import ConfigError
from sceneforge.probing.backbones import create_backbone
from sceneforge.probing.data import load_datasets
from sceneforge.probing.features import extract_features
from sceneforge.probing.preprocess import load_batch

from conftest import TINY_VIT


def tiny_vit():
    return create_backbone("timm:vit_small_patch16_224", weights="random", model_kwargs=TINY_VIT)


@pytest.fixture
def paths(image_data):
    return load_datasets(image_data)["path"].tolist()


def test_shapes_dtype_and_values_per_layer(paths, tmp_path):
    bb = tiny_vit()
    feats = extract_features(bb, paths, [1, 3], tmp_path / "cache", batch_size=16, progress=False)
    assert bb.forward_calls == 5  # ceil(80 / 16), both layers from the same passes
    for layer in (1, 3):
        f = feats[layer]
        assert f.patches.shape == (80, 16, 32) and f.prefix.shape == (80, 1, 32)
        assert f.patches.dtype == np.float16 and isinstance(f.patches, np.memmap)
        assert f.grid == (4, 4)
    direct = bb.extract(torch.from_numpy(load_batch(paths[17:19], bb.preprocess)), [3])[3]
    assert np.allclose(feats[3].patches[17:19], direct.patches.numpy(), atol=2e-2, rtol=1e-2)


def test_second_run_is_a_cache_hit_without_forward(paths, tmp_path):
    extract_features(tiny_vit(), paths, [1, 3], tmp_path / "c", batch_size=32, progress=False)
    again = tiny_vit()  # a fresh process would build the same backbone
    feats = extract_features(again, paths, [3, 1], tmp_path / "c", batch_size=32, progress=False)
    assert again.forward_calls == 0
    assert feats[1].patches.shape == (80, 16, 32)


def test_only_missing_layers_are_extracted(paths, tmp_path):
    extract_features(tiny_vit(), paths, [1], tmp_path / "c", batch_size=40, progress=False)
    bb = tiny_vit()
    seen = []
    orig = bb._forward
    bb._forward = lambda x, layers: seen.append(list(layers)) or orig(x, layers)
    extract_features(bb, paths, [1, 2], tmp_path / "c", batch_size=40, progress=False)
    assert seen == [[2], [2]]
    assert len([d for d in (tmp_path / "c").iterdir()]) == 2


def test_key_changes_with_weights_preprocessing_and_pixels(paths, tmp_path):
    from PIL import Image

    base = extract_features(tiny_vit(), paths, [1], tmp_path / "c", progress=False)[1].key
    other = create_backbone("timm:vit_small_patch16_224", weights="random", model_kwargs={**TINY_VIT, "qkv_bias": False})
    assert extract_features(other, paths, [1], tmp_path / "c", progress=False)[1].key != base
    bb = tiny_vit()
    bb.preprocess = dataclasses.replace(bb.preprocess, interpolation="nearest")
    assert extract_features(bb, paths, [1], tmp_path / "c", progress=False)[1].key != base
    Image.fromarray(np.zeros((32, 32, 3), np.uint8)).save(paths[0])
    assert extract_features(tiny_vit(), paths, [1], tmp_path / "c", progress=False)[1].key != base


def test_interrupted_extraction_leaves_no_entry(paths, tmp_path):
    bb = tiny_vit()
    orig = bb._forward

    def dies_on_third(x, layers):
        if bb.forward_calls == 3:
            raise KeyboardInterrupt
        return orig(x, layers)

    bb._forward = dies_on_third
    with pytest.raises(KeyboardInterrupt):
        extract_features(bb, paths, [1, 3], tmp_path / "c", batch_size=16, progress=False)
    assert list((tmp_path / "c").iterdir()) == []  # no partial entry, no temp dir
    fresh = tiny_vit()
    extract_features(fresh, paths, [1, 3], tmp_path / "c", batch_size=16, progress=False)
    assert fresh.forward_calls == 5


def test_entry_bytes_is_what_an_entry_takes_and_layer_shapes_what_it_holds(paths, tmp_path):
    from sceneforge.probing.timm_backbone import shape_backbone
    from sceneforge.probing.features import BLOCK, entry_bytes, layer_shapes

    bb = tiny_vit()
    shapes = layer_shapes(bb, [1, 3])
    assert bb.forward_calls == 0  # a probe, not an extraction
    # the architecture alone (timm on the meta device: no weights, nothing run) gives the same shapes
    assert layer_shapes(shape_backbone("timm:vit_small_patch16_224", TINY_VIT), [1, 3]) == shapes
    assert shape_backbone("hf:facebook/dinov2-base") is None  # not built without its config: the plan says so
    feats = extract_features(bb, paths, [1, 3], tmp_path / "c", progress=False)
    for layer in (1, 3):
        tokens, prefix, width = shapes[layer]
        assert feats[layer].patches.shape == (80, tokens, width) and feats[layer].prefix.shape == (80, prefix, width)
        files = list((tmp_path / "c" / feats[layer].key).iterdir())
        assert sorted(f.name for f in files) == ["meta.json", "patches.npy", "prefix.npy"]
        assert entry_bytes(80, tokens, prefix, width) == sum(-(-f.stat().st_size // BLOCK) * BLOCK for f in files)


def test_before_extract_sees_only_the_missing_layers_and_can_refuse_before_anything_is_written(paths, tmp_path):
    seen = []

    def refuse(missing):
        seen.append(list(missing))
        raise ConfigError("no room")

    with pytest.raises(ConfigError, match="no room"):
        extract_features(tiny_vit(), paths, [1, 3], tmp_path / "c", progress=False, before_extract=refuse)
    assert seen == [[1, 3]] and list((tmp_path / "c").iterdir()) == []  # nothing written, no temp dir
    extract_features(tiny_vit(), paths, [1], tmp_path / "c", progress=False)
    bb = tiny_vit()
    extract_features(bb, paths, [1, 3], tmp_path / "c", progress=False, before_extract=seen.append)
    assert seen[-1] == [3] and bb.forward_calls > 0
    extract_features(tiny_vit(), paths, [1, 3], tmp_path / "c", progress=False, before_extract=seen.append)
    assert len(seen) == 2  # a full cache hit asks nothing


def test_drop_entries_deletes_only_those_keys_and_a_killed_deletion_never_looks_complete(paths, tmp_path):
    from sceneforge.probing.features import drop_entries, sweep_trash

    cache = tmp_path / "c"
    feats = extract_features(tiny_vit(), paths, [1, 2, 3], cache, progress=False)
    (cache / "notes.txt").write_text("the user's")
    freed = drop_entries(cache, [feats[1].key, feats[2].key, "f" * 32])
    assert freed > 80 * 16 * 32 * 2 * 2  # two layers of fp16 patches
    assert sorted(p.name for p in cache.iterdir()) == sorted([feats[3].key, "notes.txt"])
    # what a kill between the rename and the removal leaves: trash, swept on the next start
    trash = cache / f".trash-{feats[1].key}-12345"
    trash.mkdir()
    (trash / "patches.npy").write_bytes(b"\x93NUMPY half")
    assert sweep_trash(cache) == 1 and not trash.exists() and (cache / "notes.txt").is_file()
    # what a non-atomic deletion (meta.json first) would leave: a key directory without meta.json;
    # it is not taken as complete, and a new extraction replaces it
    (cache / feats[1].key).mkdir()
    (cache / feats[1].key / "patches.npy").write_bytes(b"\x93NUMPY half")
    bb = tiny_vit()
    again = extract_features(bb, paths, [1, 3], cache, progress=False)
    assert bb.forward_calls > 0 and again[1].patches.shape == (80, 16, 32)
    assert np.array_equal(np.asarray(again[3].patches), np.asarray(feats[3].patches))


KILLED_MID_EXTRACTION = """
import os, signal, sys, time
from sceneforge.probing.backbones import create_backbone
from sceneforge.probing.features import extract_features
bb = create_backbone("timm:vit_small_patch16_224", weights="random", model_kwargs={kwargs!r})
orig = bb._forward
def slow(x, layers):
    out = orig(x, layers)
    if bb.forward_calls == 2:  # the first batch is written: the build folder exists
        print("building", flush=True)
        time.sleep(600)
    return out
bb._forward = slow
extract_features(bb, {paths!r}, [1, 3], {cache!r}, batch_size=16, progress=False)
"""


def test_a_build_left_by_a_kill_9_is_swept_and_live_or_foreign_ones_are_kept(paths, tmp_path):
    """kill -9 skips the ``finally`` that removes a build folder (a layer of tokens, ~1 GB at
    study scale): the next extraction on this host removes it once its process is gone; a live
    process's build, another host's and an old host-less name stay."""
    import os
    import signal
    import socket
    import subprocess
    import sys

    from sceneforge.probing.features import stale_builds

    cache = tmp_path / "c"
    script = KILLED_MID_EXTRACTION.format(kwargs=TINY_VIT, paths=paths, cache=str(cache))
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "building"
        builds = [d for d in cache.iterdir() if d.name.startswith(".tmp-")]
        assert len(builds) == 2 and all(d.name.endswith(f"-{socket.gethostname()}-{proc.pid}") for d in builds)
        assert stale_builds(cache) == []  # its writer is alive: not stale
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    assert sorted(stale_builds(cache)) == sorted(builds)  # the writer is gone; the folders stayed
    key = builds[0].name[len(".tmp-") :].split("-")[0]
    live = cache / f".tmp-{key}-{socket.gethostname()}-{os.getppid()}"  # a running process's
    foreign = cache / f".tmp-{key}-another-host.example-{proc.pid}"  # a shared cache's other node
    legacy = cache / f".tmp-{key}-{proc.pid}"  # sceneforge <= 0.7.0's name: no host, not judged
    for d in (live, foreign, legacy):
        d.mkdir()
    bb = tiny_vit()
    feats = extract_features(bb, paths, [1, 3], cache, batch_size=16, progress=False)
    assert bb.forward_calls == 5 and feats[3].patches.shape == (80, 16, 32)
    assert not any(d.exists() for d in builds)
    assert live.is_dir() and foreign.is_dir() and legacy.is_dir()
