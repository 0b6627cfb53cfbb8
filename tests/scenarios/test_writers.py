"""Writers: atomic files, SpaRRTa params schema, splits, the table (pandas + HF datasets)."""

import io
import json
import os
from collections import Counter

import numpy as np
import pytest
from PIL import Image

from sceneforge.core.errors import ConfigError, SceneforgeError
from sceneforge.engine.world import Camera, Rotator
from sceneforge.scenarios.output.writers import (
    SPLIT_PATTERN,
    assign_splits,
    atomic_write_bytes,
    atomic_write_json,
    display_label,
    dumps,
    encode_image,
    flatten,
    intrinsics,
    npy_bytes,
    params_json,
    write_table,
)


def test_atomic_write_leaves_no_temp_and_replaces(tmp_path):
    p = tmp_path / "a" / "f.bin"
    atomic_write_bytes(p, b"one")
    atomic_write_bytes(p, b"two")
    assert p.read_bytes() == b"two" and sorted(os.listdir(p.parent)) == ["f.bin"]


def test_atomic_write_failure_is_one_clear_error(tmp_path):
    (tmp_path / "f.bin").mkdir()  # a directory where the file should go: os.replace fails
    with pytest.raises(SceneforgeError, match="cannot write"):
        atomic_write_bytes(tmp_path / "f.bin", b"x")
    assert os.listdir(tmp_path) == ["f.bin"]  # temp cleaned up


def test_json_is_canonical(tmp_path):
    assert dumps({"b": 1, "a": np.float32(0.5)}) == '{\n  "a": 0.5,\n  "b": 1\n}\n'
    with pytest.raises(ValueError):
        dumps({"x": float("nan")})
    atomic_write_json(tmp_path / "x.json", {"k": (1, 2)})
    assert json.loads((tmp_path / "x.json").read_text()) == {"k": [1, 2]}


def test_fast_json_equals_the_reference_encoder():
    """writers.dumps (hand-written fast paths: float vectors, pre-encoded nodes) writes exactly
    what json.dumps(sort_keys, indent=2) writes, for the value types the datasets hold."""
    from sceneforge.scenarios.output.writers import reference_dumps

    rng = np.random.default_rng(5)
    values = [
        [0.1, 2.0, -3.5e-7, 1e300],
        [1, 2.5],
        [True, 0.5],
        [np.float64(0.25), 1.5],
        (0.5, 0.75),
        [[1.0, 2.0], [3.0, 4.0]],
        [],
        [None, 1.0],
        ["a", 1.0],
        rng.normal(size=7).tolist(),
        {"k": [0.1, 0.2], "j": {"x": [3.0]}},
        [-0.0, 0.0],
    ]
    for v in values:
        assert dumps({"v": v}) == reference_dumps({"v": v}), v
    for bad in ([1.0, float("inf")], [float("nan")]):
        with pytest.raises(ValueError):
            dumps({"v": bad})


@pytest.mark.parametrize("fmt", ["jpg", "png"])
def test_encode_image_roundtrip_and_determinism(fmt):
    rgb = np.random.default_rng(0).integers(0, 255, (32, 48, 3), dtype=np.uint8)
    data = encode_image(rgb, fmt)
    assert data == encode_image(rgb, fmt)
    back = np.asarray(Image.open(io.BytesIO(data)))
    assert back.shape == rgb.shape
    if fmt == "png":
        assert np.array_equal(back, rgb)


def test_encode_image_rejects_bad_input():
    with pytest.raises(ConfigError, match="image_format"):
        encode_image(np.zeros((4, 4, 3), np.uint8), "gif")
    with pytest.raises(ConfigError, match="uint8"):
        encode_image(np.zeros((4, 4), np.float32))


def test_npy_bytes_roundtrip():
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    assert np.array_equal(np.load(io.BytesIO(npy_bytes(a))), a)


def test_intrinsics_match_sparrta_lens():
    cam = Camera(fov_deg=53.13010235415598, width=224, height=224)
    k = intrinsics(cam)
    assert k["focal_length_mm"] == pytest.approx(50.0) and k["sensor_width_mm"] == 50.0
    assert k["hfov_deg"] == pytest.approx(k["vfov_deg"])
    wide = intrinsics(Camera(fov_deg=90, width=200, height=100))
    assert wide["sensor_height_mm"] == 25.0 and wide["focal_length_mm"] == pytest.approx(25.0)


def test_params_json_schema():
    cam = Camera((1, 2, 3), Rotator(-10, 20, 0), 53.13, 224, 224)
    p = params_json(
        "desert",
        "rock_truck",
        cam,
        {
            "/sceneforge/source": {"cls": "rock", "location": (1, 2, 0), "rotation": (0, 45, 0)},
            "/sceneforge/target": {"cls": "fire_hydrant", "location": (3, 4, 0), "rotation": (0, 0, 0)},
        },
        {"task": "ego", "label": "left"},
    )
    assert p["environment"] == "desert" and p["triple_id"] == "rock_truck" and p["task"] == "ego"
    assert p["camera"]["label"] == "Camera" and p["camera"]["location"] == {"x": 1, "y": 2, "z": 3}
    assert p["camera"]["rotation"] == {"pitch": -10, "yaw": 20, "roll": 0}
    assert set(p["camera"]["intrinsics"]) == {"sensor_width_mm", "sensor_height_mm", "focal_length_mm", "hfov_deg", "vfov_deg"}
    assert p["actors"]["/sceneforge/source"]["label"] == "Rock"
    assert p["actors"]["/sceneforge/target"]["label"] == "FireHydrant"
    assert p["actors"]["/sceneforge/source"]["rotation"]["yaw"] == 45
    assert display_label("trash_bin") == "TrashBin"


def test_splits_are_stratified_and_balanced():
    labels = [("front", "back", "left", "right")[i % 4] for i in range(403)]
    splits = assign_splits(labels)
    by = Counter(zip(splits, labels))
    for split in ("train", "val", "test"):
        counts = [by[(split, lab)] for lab in ("front", "back", "left", "right")]
        assert max(counts) - min(counts) <= 1, (split, counts)
    total = Counter(splits)
    assert total["train"] == pytest.approx(0.8 * 403, abs=4) and total["val"] == pytest.approx(40, abs=4)
    assert splits == assign_splits(labels) and SPLIT_PATTERN.count("train") == 8


def test_flatten():
    assert flatten("cam", {"loc": {"x": 1}, "fov": 2}) == {"cam_loc_x": 1, "cam_fov": 2}


def test_table_loads_with_pandas_and_hf_datasets(tmp_path):
    rows = []
    for i in range(6):
        rel = f"desert/ego/rock_truck/img_{i:04d}.png"
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_bytes(encode_image(np.full((8, 8, 3), i * 30, np.uint8), "png"))
        (tmp_path / rel.replace("img_", "mask_")).write_bytes(encode_image(np.zeros((8, 8, 3), np.uint8), "png"))
        rows.append({"index": i, "label": ("front", "back", "left", "right")[i % 4], "x": i / 3, "file_name": rel})
    write_table(rows, tmp_path)
    import pandas as pd

    df = pd.read_parquet(tmp_path / "samples.parquet")
    assert list(df.columns)[0] == "file_name" and df["x"].iloc[1] == 1 / 3
    assert pd.read_csv(tmp_path / "metadata.csv")["label"].tolist() == df["label"].tolist()
    from datasets import load_dataset

    ds = load_dataset("imagefolder", data_dir=str(tmp_path), split="train", cache_dir=str(tmp_path / ".hf"))
    assert len(ds) == 6 and ds[2]["label"] == "left"  # masks are not picked up
    assert np.asarray(ds[3]["image"])[0, 0, 0] == 90
    pq = load_dataset("parquet", data_files=str(tmp_path / "samples.parquet"), split="train", cache_dir=str(tmp_path / ".hf"))
    assert pq["index"] == list(range(6))


def test_dumps_writes_the_bytes_of_the_standard_encoder():
    """``dumps`` joins strings itself; its bytes are ``json.dumps(sort_keys, indent=2)``'s for
    every kind of value, numpy scalars and subclasses included, and it raises where that raises."""
    from collections import OrderedDict

    import numpy as np

    from sceneforge.scenarios.output.writers import PreEncoded, dumps, nested_json, reference_dumps

    rng = np.random.default_rng(3)
    value = {
        "b": [1, 2.5, -0.0, 1e-07, 1e22, 123456789012345678901234567890, True, False, None],
        "a": {
            "nested": [[1.0, 2.0], [], {}, (3, "x")],
            'é☃ "q"\n': "tab\there",
            "np": [np.float32(0.1), np.int64(7), np.float64(2.5), np.bool_(True)],
        },
        "ordered": OrderedDict([("z", 1), ("y", [1.5])]),
        "ints": {"1": 1},
        "vec": rng.normal(size=5).tolist(),
        "mat": rng.normal(size=(3, 3)).tolist(),
        "empty_list": [],
        "empty_dict": {},
        "s": "plain",
    }
    assert dumps(value) == reference_dumps(value)
    for top in (1.5, "x", None, [], {}, [1, [2, [3, {"k": [4.5]}]]], (1.0, 2.0)):
        assert dumps(top) == reference_dumps(top)
    for bad in ({"x": float("nan")}, {"x": [float("inf")]}, {"x": object()}, {1: "a", "b": 2}):
        for encode in (dumps, reference_dumps):
            with pytest.raises((ValueError, TypeError)):
                encode(bad)
    static = {"pose": [1.0, 2.0], "name": "a"}
    node = PreEncoded(static, extra=3)
    node.static = (static, {k: nested_json(v, 3) for k, v in static.items()}, 2)  # its values sit 3 deep
    doc = {"objects": [node]}
    assert dumps(doc) == reference_dumps(doc)
    node["pose"] = [9.0, 9.0]  # changed after its text was made: encoded afresh
    assert dumps(doc) == reference_dumps(doc) and "9.0" in dumps(doc)
    assert dumps({"deeper": doc}) == reference_dumps({"deeper": doc})  # another depth: texts not used


def test_splits_by_scene_keep_a_scene_together_and_stay_balanced():
    """SpaRRTa-style units: labels cycle with the index, 4 samples per scene; three triples of
    167/167/166 samples (where per-label splitting put a scene's samples into two splits)."""
    labels, scenes = [], []
    for triple, n in (("a", 167), ("b", 167), ("c", 166)):
        for i in range(n):
            labels.append(("front", "back", "left", "right")[i % 4])
            scenes.append((triple, i // 4))
    old = assign_splits(labels)
    straddling = {s for s in set(scenes) if len({sp for sp, sc in zip(old, scenes) if sc == s}) > 1}
    assert straddling  # the old rule did split scenes apart
    new = assign_splits(labels, scenes)
    for s in set(scenes):
        assert len({sp for sp, sc in zip(new, scenes) if sc == s}) == 1, s
    by = Counter(zip(new, labels))
    for split in ("train", "val", "test"):
        counts = [by[(split, lab)] for lab in ("front", "back", "left", "right")]
        assert max(counts) - min(counts) <= 3, (split, counts)  # only the partial last scenes differ
    total = Counter(new)
    assert total["train"] == pytest.approx(400, abs=8) and total["test"] == pytest.approx(50, abs=6)
    assert new == assign_splits(labels, scenes)
    with pytest.raises(ValueError, match="group keys"):
        assign_splits(labels, scenes[:-1])
