"""A study stopped with SIGTERM (a scheduler, `kill`, `timeout`) mid-extraction takes Ctrl-C's path:
its feature build folder is removed at once (not left, ~1 GB per 5,000 ViT-S images, for the next
start to sweep), it exits 130 with one "interrupted" line, and the same command resumes to the rows
an uninterrupted run writes."""

from __future__ import annotations

import os
import signal
import subprocess
import time

from study_helpers import BACKBONES, ROOT, make_image_dataset, run_study, study_cmd, write_config


def test_sigterm_mid_extraction_removes_the_build_folder_and_the_study_resumes(tmp_path):
    # one dataset big enough that its extraction lasts long enough to be caught (~1-2 s)
    make_image_dataset(tmp_path / "data", envs=("desert",), tasks=("ego",), n=(1500, 250, 250), seed=3)
    data = [str(tmp_path / "data" / "desert_ego")]
    cfg = write_config(tmp_path / "study.yaml", data, backbones=BACKBONES[:1], reports=False, layout=False)
    out, cache = tmp_path / "out", tmp_path / "out" / "cache"
    env = dict(os.environ, HF_HUB_OFFLINE="1")
    proc = subprocess.Popen(study_cmd(str(cfg), "--out", str(out), "--quiet"), cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
    deadline = time.monotonic() + 120
    try:
        while not (cache.is_dir() and any(p.name.startswith(".tmp-") for p in cache.iterdir())):
            assert proc.poll() is None, f"the study ended before its extraction was caught: {proc.stderr.read()[-500:]}"
            assert time.monotonic() < deadline, "no feature build folder appeared in 120 s"
            time.sleep(0.002)
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130, err
    assert err.strip().splitlines()[-1] == "sceneforge study: interrupted"
    assert not [p.name for p in cache.iterdir() if p.name.startswith(".tmp-")]  # removed by the study itself
    assert not (out / "results.jsonl").is_file() or "random" not in (out / "results.jsonl").read_text()
    r = run_study(str(cfg), "--out", str(out), "--quiet")  # resumes: extracts again, trains, writes the rows
    assert r.returncode == 0, r.stderr
    ref = tmp_path / "ref"
    assert run_study(str(cfg), "--out", str(ref), "--quiet").returncode == 0
    assert (out / "results.jsonl").read_bytes() == (ref / "results.jsonl").read_bytes()
