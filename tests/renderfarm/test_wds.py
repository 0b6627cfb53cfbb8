"""``--format wds``: WebDataset shards read back by the ``webdataset`` library itself, the same
bytes at any worker count; SpaRRTa's shards carry image + json + mask per sample."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys

import pytest

from sceneforge.core.errors import ConfigError
from sceneforge.renderfarm import run_job

wds = pytest.importorskip("webdataset")


def shard_hashes(out) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted((out / "wds").glob("*.tar"))}


def read_back(out) -> list[dict]:
    """Every sample, through webdataset's own reader (no code of ours)."""
    urls = [str(p) for p in sorted((out / "wds").glob("shard-*.tar"))]
    return list(wds.WebDataset(urls, shardshuffle=False, empty_check=False))


def test_shards_are_the_same_bytes_at_any_worker_count_and_load_with_webdataset(tmp_path, toy_config):
    one = run_job("farm_toy_cpu", toy_config, tmp_path / "one", workers=1, progress=False, wds_shard_size=10)
    two = run_job("farm_toy_cpu", toy_config, tmp_path / "two", workers=2, shard_size=3, progress=False, wds_shard_size=10)
    assert one["wds"] == two["wds"] == {"shards": 5, "samples": 48, "dir": "wds"}
    assert shard_hashes(tmp_path / "one") == shard_hashes(tmp_path / "two") and len(shard_hashes(tmp_path / "one")) == 5
    samples = read_back(tmp_path / "two")
    assert [s["__key__"] for s in samples] == [f"{i:06d}" for i in range(48)]
    assert all(json.loads(s["json"])["index"] == i for i, s in enumerate(samples))
    assert samples[5]["png"] == (tmp_path / "one" / "images" / "img_00005.png").read_bytes()


def test_a_scenario_without_wds_samples_is_refused_up_front(tmp_path):
    with pytest.raises(ConfigError, match="--format wds: scenario .*farm_toy_render cannot be packed"):
        run_job("farm_toy_render", {"n": 2, "seed": 1, "size": 16}, tmp_path, wds_shard_size=4, progress=False)
    assert not (tmp_path / "job.json").exists()


@pytest.mark.render
def test_generate_format_wds_image_json_mask_per_sample(tmp_path):
    out = tmp_path / "wds_run"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "sceneforge.cli",
            "generate",
            "--env",
            "desert",
            "--task",
            "ego",
            "--n",
            "6",
            "--size",
            "64",
            "--masks",
            "--format",
            "wds",
            "--wds-shard-size",
            "4",
            "--out",
            str(out),
            "--quiet",
            "--no-fetch",
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    samples = read_back(out)
    assert [sorted(k for k in s if not k.startswith("__")) for s in samples] == [["jpg", "json", "mask.png", "params.json"]] * 6
    assert len(shard_hashes(out)) == 2
    rows = [json.loads(s["json"]) for s in samples]
    assert [r["index"] for r in rows] == list(range(6)) and all(r["label"] and r["split"] for r in rows)
    assert samples[0]["jpg"] == (out / rows[0]["file_name"]).read_bytes()
