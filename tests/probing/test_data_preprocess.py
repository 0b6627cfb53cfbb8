"""Dataset reading (validation, recursion, content hash) and preprocessing arithmetic."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from PIL import Image

from sceneforge.core.errors import ConfigError
from sceneforge.probing.data import content_hash, find_datasets, load_datasets
from sceneforge.probing.preprocess import Preprocess

from conftest import make_image_dataset


def test_parent_directory_finds_every_dataset(image_data):
    assert [d.name for d in find_datasets(image_data)] == ["desert_ego", "forest_ego"]
    table = load_datasets(image_data)
    assert len(table) == 2 * 40
    assert set(table["env"]) == {"desert", "forest"}
    assert all(p.startswith(str(image_data.resolve())) for p in table["path"])


def test_csv_only_dataset_is_read(tmp_path):
    make_image_dataset(tmp_path, envs=("city",))
    (tmp_path / "city_ego" / "metadata.parquet").unlink()
    assert len(load_datasets(tmp_path / "city_ego")) == 40


def test_generate_layout_samples_parquet_with_triple_id(tmp_path):
    """`sceneforge generate` writes samples.parquet (preferred) with triple_id (docs/datasets.md)."""
    make_image_dataset(tmp_path, envs=("city",))
    d = tmp_path / "city_ego"
    table = pd.read_parquet(d / "metadata.parquet").rename(columns={"triple": "triple_id"})
    table.iloc[:10].to_parquet(d / "samples.parquet", index=False)
    loaded = load_datasets(d)
    assert len(loaded) == 10 and (loaded["triple"] == "city_t0").all()


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda t: t.drop(columns=["split", "env"]), "missing column\\(s\\) split, env"),
        (lambda t: t.drop(columns=["triple"]), "missing column\\(s\\) triple \\(or triple_id\\)"),
        (lambda t: t.assign(label="up"), "column 'label' has unknown value\\(s\\) \\['up'\\]"),
        (lambda t: t.assign(split="dev"), "column 'split' has unknown value"),
        (lambda t: t.assign(file_name="images/nope.png"), "image file\\(s\\) listed in metadata are missing"),
        (lambda t: t.iloc[:0], "no rows"),
    ],
)
def test_bad_metadata_is_one_clear_error_naming_the_file(image_data, change, message):
    path = image_data / "desert_ego" / "metadata.parquet"
    change(pd.read_parquet(path)).to_parquet(path, index=False)
    with pytest.raises(ConfigError, match=message) as err:
        load_datasets(image_data)
    assert "\n" not in str(err.value)


def test_missing_data_dir(tmp_path):
    with pytest.raises(ConfigError, match="no such file"):
        load_datasets(tmp_path / "nothing")
    with pytest.raises(ConfigError, match="no samples.parquet, metadata.parquet, metadata.csv found"):
        load_datasets(tmp_path)


def test_content_hash_follows_pixels_and_order_not_labels(image_data):
    table = load_datasets(image_data)
    paths = table["path"].tolist()
    h = content_hash(paths)
    assert content_hash(paths) == h
    assert content_hash(paths[::-1]) != h
    Image.fromarray(np.zeros((32, 32, 3), np.uint8)).save(paths[3])
    assert content_hash(paths) != h


def test_preprocess_resize_crop_normalise():
    pre = Preprocess(mean=(0.5, 0.5, 0.5), std=(0.25, 0.25, 0.25), interpolation="bilinear", resize_shorter=40, crop_hw=(32, 32))
    img = Image.fromarray(np.full((50, 100, 3), 255, np.uint8))
    out = pre(img)
    assert out.shape == (3, 32, 32) and out.dtype == np.float32
    assert np.allclose(out, (1.0 - 0.5) / 0.25)


def test_preprocess_from_timm_config_uses_crop_pct():
    pre = Preprocess.from_timm(
        {"input_size": (3, 224, 224), "mean": (0, 0, 0), "std": (1, 1, 1), "interpolation": "bicubic", "crop_pct": 0.875}
    )
    assert pre.resize_shorter == 256 and pre.crop_hw == (224, 224)
    assert (
        pre.key()
        != Preprocess.from_timm(
            {"input_size": (3, 224, 224), "mean": (0, 0, 0), "std": (1, 1, 1), "interpolation": "bilinear", "crop_pct": 0.875}
        ).key()
    )


def test_center_crop_pads_small_images():
    pre = Preprocess(mean=(0, 0, 0), std=(1, 1, 1), interpolation="nearest", crop_hw=(8, 8))
    out = pre(Image.fromarray(np.full((4, 4, 3), 255, np.uint8)))
    assert out.shape == (3, 8, 8) and out[:, 0, 0].sum() == 0 and out[:, 4, 4].min() == 1.0
