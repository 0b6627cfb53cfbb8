"""Probing on real rendered images: `sceneforge generate` (embedded renderer) → `sceneforge probe`.

A random tiny ViT cannot be expected to beat chance on 64 training images, so this checks the
pipeline on the real on-disk layout (samples.parquet, triple_id, jpg, 224², both tasks), not
accuracy; learning is checked on the marker task (test_heads.py)."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from sceneforge.cli import main


@pytest.mark.render
def test_probe_on_generated_dataset(tmp_path):
    data = tmp_path / "data"
    assert main(["generate", "--env", "desert", "--task", "both", "--n", "40", "--out", str(data), "--quiet"]) == 0
    out = tmp_path / "runs"
    args = [
        "probe",
        "--data",
        str(data),
        "--backbone",
        "timm:vit_small_patch16_224",
        "--weights",
        "random",
        "--model-arg",
        "depth=2",
        "--model-arg",
        "embed_dim=48",
        "--model-arg",
        "num_heads=2",
        "--layers",
        "1,2",
        "--out",
        str(out),
        "--epochs",
        "4",
        "--warmup",
        "1",
        "--lrs",
        "1e-3",
        "--dropouts",
        "0.2",
        "--quiet",
        "--threads",
        "1",
        "--min-test",
        "0",
    ]
    assert main(args) == 0
    runs = [json.loads(line) for line in (out / "runs.jsonl").read_text().splitlines()]
    assert {(r["env"], r["task"]) for r in runs} == {("desert", "ego"), ("desert", "allo")}
    assert {r["n_train"] + r["n_val"] + r["n_test"] for r in runs} == {40}
    summary = pd.read_csv(out / "summary.csv")
    assert len(summary) == 2 * 2 * 3
    info = json.loads((out / "run_info.json").read_text())
    assert info["layers"] == [1, 2]
    import numpy as np

    att = np.load(next((out / "attention").glob("efficient_L2_within_desert_ego.npz")))
    assert att["maps"].shape[1:] == (4, 14, 14)  # 4 queries over the 14x14 grid of a 224² image
    assert all(str(p).endswith(".jpg") for p in att["paths"])
