"""A study that makes its own data: `environments` → one `sparrta` dataset per (environment,
task) through the render farm's runner (a real render server), recorded in study.json with its
`generate` config and data fingerprint, then probed. And the device choice: `auto` is the CPU
here, and `cuda` without a GPU is one line, exit 2."""

from __future__ import annotations

import json

import pandas as pd
import pytest
import torch
import yaml

from sceneforge.core.errors import ConfigError
from sceneforge.study.run import resolve_device
from study_helpers import BACKBONES, run_study


@pytest.mark.render
def test_a_study_generates_its_datasets_with_generates_defaults_and_probes_them(tmp_path):
    cfg = tmp_path / "s.yaml"
    raw = {"backbones": [BACKBONES[1]], "environments": ["desert"], "tasks": ["ego"], "n": 32, "seed": 3}
    raw.update(layers=[1], epochs=2, patience=0, threads=1, data={"image_size": 32})
    cfg.write_text(yaml.safe_dump(raw))
    out = tmp_path / "out"
    r = run_study(str(cfg), "--out", str(out), "--quiet", "--no-fetch")
    assert r.returncode == 0, r.stderr
    table = pd.read_parquet(out / "data" / "desert_ego" / "samples.parquet")
    assert len(table) == 32 and set(table["env"]) == {"desert"} and set(table["task"]) == {"ego"}
    job = json.loads((out / "data" / "desert_ego" / "job.json").read_text())
    from sceneforge.scenarios.sparrta.config import SparrtaConfig

    # the data policy is `generate`'s default wherever the study config is silent
    default = SparrtaConfig.from_dict({}, "t").camera_policy  # (left out of job.json at its default)
    assert job["config"].get("camera_policy", default) == default
    head = json.loads((out / "study.json").read_text())
    d = head["datasets"]["desert_ego"]
    assert d["generate"] == {"image_size": 32, "envs": ["desert"], "tasks": ["ego"], "n": 32, "seed": 3}
    assert d["images"] == 32 and len(d["fingerprint"]) == 16
    df = pd.read_csv(out / "leaderboard.csv")
    assert set(df["kind"]) == {"random", "layout"} and set(df["env"]) == {"desert"}
    assert len(df[df["kind"] == "random"]) == 3  # one backbone x one layer x three heads
    n_train = int((table["split"] == "train").sum())
    assert set(df["n_train"]) == {n_train}  # n_train omitted: every train row
    again = run_study(str(cfg), "--out", str(out), "--quiet", "--no-fetch")  # all done: nothing regenerated or retrained
    assert again.returncode == 0 and "generating" not in again.stdout and "features of" not in again.stdout


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the CPU fallback")
def test_device_auto_is_the_cpu_here_and_cuda_without_one_is_refused(tmp_path):
    assert resolve_device("auto") == "cpu" and resolve_device("cpu") == "cpu"
    with pytest.raises(ConfigError, match="torch sees no CUDA device"):
        resolve_device("cuda")
    with pytest.raises(ConfigError, match="torch sees no CUDA device"):
        resolve_device("cuda:0")
    for bad in ("tpu", "cuda:x", "cuda:", "gpu"):
        with pytest.raises(ConfigError, match="expected auto, cpu, cuda or cuda:N"):
            resolve_device(bad)
    cfg = tmp_path / "s.yaml"
    cfg.write_text(yaml.safe_dump({"backbones": [BACKBONES[0]], "datasets": [str(tmp_path)], "layers": [1]}))
    r = run_study(str(cfg), "--out", str(tmp_path / "out"), "--device", "cuda")
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "no CUDA device" in r.stderr, r.stderr


def test_a_backbone_moved_with_to_gives_the_same_tokens_on_the_cpu():
    from sceneforge.probing.backbones import create_backbone

    bb = create_backbone("timm:vit_tiny_patch16_224", "random", dict(BACKBONES[0]["model_args"]))
    x = torch.rand(2, 3, 32, 32)
    before = bb.extract(x, [2])[2].patches
    assert bb.to("cpu").device == "cpu" and not bb.amp
    assert torch.equal(bb.extract(x, [2])[2].patches, before)
