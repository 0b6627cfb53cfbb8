"""``sceneforge export --format hf``: a DatasetDict that Hugging Face ``datasets`` opens by itself."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from PIL import Image

from sparrta_helpers import generate
from sceneforge.cli import main
from sceneforge.scenarios.sampling.relations import LABELS

datasets = pytest.importorskip("datasets")


@pytest.mark.render
def test_export_hf_splits_labels_and_embedded_images_load_without_our_code(server, tmp_path, capsys):
    data = tmp_path / "data"
    generate(
        {
            "envs": ["desert"],
            "tasks": ["ego"],
            "n": 12,
            "seed": 1,
            "masks": True,
            "split_pattern": ["train", "val", "test"],
            "samples_per_scene": 1,
        },
        data,
        server=server.address,
    )
    df = pd.read_parquet(data / "samples.parquet")
    assert main(["export", "--format", "hf", str(data), str(tmp_path / "hf")]) == 0
    dd = datasets.load_from_disk(str(tmp_path / "hf"))
    want = {"train": "train", "validation": "val", "test": "test"}
    assert {k: len(v) for k, v in dd.items()} == {k: int((df["split"] == s).sum()) for k, s in want.items()}
    assert dd["train"].features["label"].names == list(LABELS)
    assert isinstance(dd["train"].features["image"], datasets.Image)
    assert isinstance(dd["train"].features["mask"], datasets.Image)
    for name, split in want.items():
        part = df[df["split"] == split]
        ds = dd[name]
        assert [LABELS[v] for v in ds["label"]] == part["label"].tolist()
        row = ds.cast_column("image", datasets.Image(decode=False))[0]
        assert row["image"]["bytes"] == (data / part["file_name"].iloc[0]).read_bytes()  # embedded, not a path
        assert np.array_equal(np.asarray(ds[0]["mask"]), np.asarray(Image.open(data / part["mask_file"].iloc[0])))
    pq = datasets.load_dataset("parquet", data_dir=str(tmp_path / "hf" / "data"))
    assert {k: len(v) for k, v in pq.items()} == {k: len(v) for k, v in dd.items()}
    assert pq["test"].features["label"].names == list(LABELS)  # the features travel in the shards

    (tmp_path / "busy").mkdir()
    (tmp_path / "busy" / "x").write_text("x")
    assert main(["export", "--format", "hf", str(data), str(tmp_path / "busy")]) == 2
    assert "not an empty directory" in capsys.readouterr().err
