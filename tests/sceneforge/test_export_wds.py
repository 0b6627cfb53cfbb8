"""Issue 47 item 8: ``sceneforge export --format wds DATA OUT`` packs a finished dataset into
WebDataset shards without re-rendering: the same bytes ``generate --format wds`` writes, read
back by the reference ``webdataset`` reader."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys

import pytest

wds = pytest.importorskip("webdataset")


def cli(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "sceneforge.cli", *argv], capture_output=True, text=True, timeout=600)


def hashes(folder) -> dict:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.glob("shard-*.tar"))}


@pytest.mark.render
def test_export_wds_from_an_existing_dataset_is_generates_bytes_and_reads_back(tmp_path):
    data = tmp_path / "data"
    gen = ["generate", "--env", "desert", "--task", "ego", "--n", "5", "--size", "64", "--masks", "--quiet", "--no-fetch"]
    done = cli(*gen, "--format", "wds", "--wds-shard-size", "2", "--out", str(data))
    assert done.returncode == 0, done.stderr[-2000:]
    out = tmp_path / "wds_export"
    r = cli("export", "--format", "wds", str(data), str(out), "--wds-shard-size", "2")
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == f"{out}: 5 samples in 3 WebDataset shards (index.json)"
    assert hashes(out) == hashes(data / "wds") and len(hashes(out)) == 3  # no re-render: the same bytes
    samples = list(wds.WebDataset([str(p) for p in sorted(out.glob("shard-*.tar"))], shardshuffle=False, empty_check=False))
    rows = [json.loads(s["json"]) for s in samples]
    assert [r["index"] for r in rows] == list(range(5)) and all(r["label"] in ("front", "back", "left", "right") for r in rows)
    assert samples[0]["jpg"] == (data / rows[0]["file_name"]).read_bytes() and "mask.png" in samples[0]
    assert json.loads((out / "index.json").read_text())["samples"] == 5

    again = cli("export", "--format", "wds", str(data), str(out))  # OUT not empty: one line, exit 2
    assert again.returncode == 2 and again.stderr.strip().count("\n") == 0 and "not an empty directory" in again.stderr


def test_export_wds_refuses_a_directory_without_a_job_and_a_stray_shard_size(tmp_path):
    r = cli("export", "--format", "wds", str(tmp_path), str(tmp_path / "o"))
    assert r.returncode == 2 and "no readable job.json" in r.stderr and r.stderr.strip().count("\n") == 0
    r = cli("export", "--format", "hf", str(tmp_path), str(tmp_path / "o"), "--wds-shard-size", "3")
    assert r.returncode == 2 and "--wds-shard-size needs --format wds" in r.stderr
    assert not (tmp_path / "o").exists()
