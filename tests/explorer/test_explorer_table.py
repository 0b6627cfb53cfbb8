"""The explorer's files, without a browser: index, shards, thumbnails, maps that agree with the labels."""

from __future__ import annotations

import json
import math
import os
import re

import pandas as pd
import pytest
from PIL import Image

from explorer_helpers import generate_small
from sceneforge.core.errors import ConfigError, SceneforgeError
from sceneforge.explorer import build_explorer, read_dataset
from sceneforge.scenarios.sampling.relations import relation


@pytest.fixture(scope="module")
def dataset(server, tmp_path_factory):
    return generate_small(tmp_path_factory.mktemp("explore-table") / "data", server.address)


def _script(path, name):
    return json.loads(re.match(rf"window\.{name} = (.*);\n$", path.read_text(), re.S).group(1))


@pytest.mark.render
def test_index_counts_thumbnails_and_depth_are_written_once(dataset, tmp_path):
    page = build_explorer(dataset, tmp_path / "ex")
    out = page.parent
    df = pd.read_parquet(dataset / "samples.parquet")
    meta, index = _script(out / "data/meta.js", "SF_META"), _script(out / "data/index.js", "SF_INDEX")
    assert meta["n"] == len(df) and meta["root"] == os.path.relpath(dataset, out)
    labels = [meta["facets"]["label"][c] for c in index["facets"]["label"]]
    assert labels == df["label"].tolist()
    assert index["numbers"]["angle"] == pytest.approx(df["angle_deg"].round(3).tolist())
    thumbs = sorted((out / "thumbs").iterdir())
    assert len(thumbs) == len(df) and all(Image.open(t).size == (112, 112) for t in thumbs)
    assert len(list((out / "depth").iterdir())) == len(df)
    stamp = {t.name: t.stat().st_mtime_ns for t in thumbs}
    build_explorer(dataset, tmp_path / "ex")  # a rebuild keeps what is made
    assert {t.name: t.stat().st_mtime_ns for t in (out / "thumbs").iterdir()} == stamp
    assert '<script src="data/index.js">' in page.read_text()
    assert not re.search(
        r"https?://", page.read_text() + (out / "app.js").read_text().replace("http://www.w3.org/2000/svg", "")
    )  # offline: no CDN, no remote URL


@pytest.mark.render
def test_top_down_maps_agree_with_the_labelling_rule(dataset):
    """Every sample's map geometry, run through SpaRRTa's rule, gives the sample's label; the
    observer's sector is the page's frame (front centred on source - observer)."""
    table = read_dataset(dataset)
    for i in range(len(table)):
        d = table.details(i)
        m = d["map"]
        observer = m["human"] if m["observer"] == "human" else m["camera"]["xy"]
        assert relation(observer, m["source"], m["target"], m["margin_deg"]) == d["label"]
        bearing = math.degrees(math.atan2(m["target"][1] - m["source"][1], m["target"][0] - m["source"][0]))
        f = math.degrees(math.atan2(m["source"][1] - observer[1], m["source"][0] - observer[0]))
        centre = {"front": 0, "right": 90, "back": 180, "left": -90}[d["label"]]
        off = (bearing - f - centre + 180) % 360 - 180
        assert abs(off) < 45 - m["margin_deg"]  # inside the drawn sector
        roles = {o["role"] for o in m["objects"]}
        assert {"source", "target"} <= roles and all(len(o["foot"]) == 4 for o in m["objects"])
        assert set(d["boxes"]) >= {"source", "target"}


def test_a_directory_that_is_no_dataset_is_one_line(tmp_path):
    with pytest.raises(ConfigError, match="no samples.parquet"):
        read_dataset(tmp_path)
    with pytest.raises(ConfigError, match="no such dataset"):
        read_dataset(tmp_path / "missing")


@pytest.mark.render
def test_a_table_path_out_of_the_dataset_is_refused(dataset, tmp_path):
    """samples.parquet is data: a file_name climbing out of the dataset is one line, nothing read."""
    import shutil

    copy = tmp_path / "copy"
    shutil.copytree(dataset, copy)
    df = pd.read_parquet(copy / "samples.parquet")
    df.loc[0, "file_name"] = "../../../etc/hostname"
    df.to_parquet(copy / "samples.parquet")
    with pytest.raises(SceneforgeError, match="outside the dataset"):
        read_dataset(copy)


@pytest.mark.render
def test_a_probe_run_links_its_predictions(server, tmp_path):
    """``sceneforge probe`` writes the selected head's prediction for every test image
    (``predictions/<run>.csv``), and ``browse --predictions RUN_DIR`` turns them into the
    ``prediction``/``correct`` facets: the misclassified samples one click away (issue 36)."""
    from sceneforge.cli import main
    from sceneforge.renderfarm import run_job

    dataset = tmp_path / "data"  # the demo's split by scene: every split has rows at this size
    config = {
        "envs": ["desert"],
        "tasks": ["ego"],
        "n": 24,
        "seed": 1,
        "split_pattern": ["train", "test", "val", "train", "test"],
    }
    assert not run_job("sparrta", config, dataset, backend="inline", server=server.address, progress=False)["failed"]
    tiny = {"img_size": 32, "patch_size": 8, "depth": 3, "embed_dim": 32, "num_heads": 2}
    run = tmp_path / "run"
    args = [
        "probe",
        "--data",
        str(dataset),
        "--backbone",
        "timm:vit_small_patch16_224",
        "--weights",
        "random",
        *[a for k, v in tiny.items() for a in ("--model-arg", f"{k}={v}")],
        "--out",
        str(run),
        "--epochs",
        "2",
        "--warmup",
        "1",
        "--lrs",
        "1e-2",
        "--dropouts",
        "0.0",
        "--heads",
        "linear,efficient",
        "--layers",
        "1",
        "--quiet",
        "--threads",
        "1",
        "--min-test",
        "0",
    ]
    assert main(args) == 0
    files = sorted((run / "predictions").glob("*.csv"))
    assert files and all(f.name.startswith(("linear_L1_within_", "efficient_L1_within_")) for f in files)
    pred = pd.concat([pd.read_csv(f) for f in files])
    records = [json.loads(line) for line in (run / "runs.jsonl").read_text().splitlines()]
    for (head, env, task), rows in pred.groupby(["head", "env", "task"]):
        chosen = [r for r in records if r["selected"] and (r["head"], r["env"], r["task"]) == (head, env, task)]
        assert any(abs(r["test_acc"] - rows["correct"].mean()) < 1e-9 for r in chosen), (head, env, task)
        assert (rows["correct"] == (rows["label"] == rows["prediction"])).all()
    with pytest.raises(ConfigError, match="2 probe runs .*--run HEAD:LAYER:PROTOCOL"):
        read_dataset(dataset, predictions=run)
    table = read_dataset(dataset, predictions=run, run="efficient:1:within")
    mine = pred[pred["head"] == "efficient"]
    correct = table.facets["correct"]
    assert correct.count("no") == int((mine["correct"] == 0).sum()) and correct.count("yes") == int(mine["correct"].sum())
    assert correct.count("none") == len(correct) - len(mine)  # train/val images have no test prediction
    with pytest.raises(ConfigError, match="--run linear:9:within: not among"):
        read_dataset(dataset, predictions=run, run="linear:9:within")
