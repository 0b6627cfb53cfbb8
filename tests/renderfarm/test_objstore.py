"""``--out s3://bucket/prefix`` against a real S3 API server on 127.0.0.1 (moto's server mode):
objects appear only complete, a kill -9 then a resume from another machine (no staging left)
neither loses nor duplicates a sample, and the bucket holds the same bytes as a local run."""

from __future__ import annotations

import io
import logging
import json
import shutil
import signal
import sqlite3
import socket
import tempfile

import pytest

from farm_helpers import start_job, wait_for
from sceneforge.core.errors import ConfigError
from sceneforge.renderfarm import run_job

moto_server = pytest.importorskip("moto.server")
pytest.importorskip("s3fs")


@pytest.fixture(scope="module")
def s3(tmp_path_factory):
    """A moto S3 server on 127.0.0.1 (a free port) and the environment that points s3fs at it."""
    logging.getLogger("werkzeug").setLevel(logging.WARNING)  # one line per request otherwise
    server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    env = {
        "AWS_ACCESS_KEY_ID": "test",
        "AWS_SECRET_ACCESS_KEY": "test",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_ENDPOINT_URL": f"http://{host}:{port}",
    }
    yield env
    server.stop()


@pytest.fixture
def bucket(s3, monkeypatch, tmp_path):
    """A fresh bucket; staging directories under this test's tmp dir."""
    import fsspec

    for k, v in s3.items():
        monkeypatch.setenv(k, v)
    monkeypatch.setenv("SCENEFORGE_FARM_STAGING", str(tmp_path / "staging"))
    monkeypatch.setenv("SCENEFORGE_PUBLISH_EVERY_S", "0.2")
    fs = fsspec.filesystem("s3", skip_instance_cache=True, use_listings_cache=False)
    name = f"b{tmp_path.name.lower().replace('_', '-')[-40:]}"
    fs.mkdir(name)
    return fs, name


def bucket_digest(fs, root: str) -> dict[str, str]:
    """sha256 of every dataset object under ``root`` (farm objects excluded), by relative key."""
    import hashlib

    return {
        k[len(root) + 1 :]: hashlib.sha256(fs.cat_file(k)).hexdigest()
        for k in sorted(fs.find(root))
        if not k[len(root) + 1 :].startswith(".farm/")
    }


def assert_complete_objects(fs, root: str) -> int:
    """Every image decodes and every record parses; every shard the bucket's journal calls done
    has all its samples there. Returns the number of images."""
    from PIL import Image

    keys = set(fs.find(root))
    pngs = [k for k in keys if k.endswith(".png")]
    for k in pngs:
        Image.open(io.BytesIO(fs.cat_file(k))).load()
    for k in keys:
        if k.endswith(".json"):
            json.loads(fs.cat_file(k))
    assert not [k for k in keys if k.rsplit("/", 1)[-1].startswith(".") or k.endswith(".tmp")]
    if f"{root}/.farm/journal.sqlite" in keys:
        local = tempfile.NamedTemporaryFile(suffix=".sqlite")  # a WAL-mode file: not deserializable
        local.write(fs.cat_file(f"{root}/.farm/journal.sqlite"))
        local.flush()
        db = sqlite3.connect(local.name)
        for (indices,) in db.execute("SELECT indices FROM shards WHERE status = 'done'"):
            for i in json.loads(indices):
                assert f"{root}/images/img_{i:05d}.png" in keys and f"{root}/records/rec_{i:05d}.json" in keys
    return len(pngs)


def test_s3_out_kill_then_resume_elsewhere_equals_local(bucket, tmp_path, cpu_reference):
    fs, name = bucket
    config, reference = cpu_reference
    url = f"s3://{name}/runs/toy"
    job = start_job("farm_toy_cpu", url, {**config, "sleep_s": 0.05}, "--workers", "2", "--shard-size", "4")
    wait_for(
        lambda: len(fs.find(f"{name}/runs/toy/images")) >= 8 if fs.exists(f"{name}/runs/toy/images") else False,
        120,
        "published images",
    )
    job.send_signal(signal.SIGKILL)
    job.wait(30)
    published = assert_complete_objects(fs, f"{name}/runs/toy")
    assert 8 <= published < 48  # killed mid-job
    shutil.rmtree(tmp_path / "staging")  # resume on "another machine"
    summary = run_job("farm_toy_cpu", config, url, workers=2, progress=False)
    assert summary["finalized"] and summary["failed"] == {} and summary["published"]["url"] == url
    assert assert_complete_objects(fs, f"{name}/runs/toy") == 48
    assert bucket_digest(fs, f"{name}/runs/toy") == reference  # nothing lost, nothing extra
    assert not fs.exists(f"{name}/runs/toy/.farm/lock")


def test_inline_to_s3_resumes_in_place(bucket, cpu_reference):
    fs, name = bucket
    config, reference = cpu_reference
    url = f"s3://{name}/inline"
    run_job("farm_toy_cpu", {**config}, url, backend="inline", progress=False)
    assert bucket_digest(fs, f"{name}/inline") == reference
    again = run_job("farm_toy_cpu", config, url, backend="inline", progress=False)
    assert again["published"]["objects"] <= 2  # finalize's rewritten index and the run's .farm/summary.json only
    assert bucket_digest(fs, f"{name}/inline") == reference


def test_a_lock_held_by_another_host_is_one_line(bucket):
    fs, name = bucket
    fs.pipe(f"{name}/held/.farm/lock", json.dumps({"host": socket.gethostname() + "-other", "pid": 1}).encode())
    with pytest.raises(ConfigError, match=r"another farm job holds s3://.*/held/\.farm/lock \(host .*-other"):
        run_job("farm_toy_cpu", {"n": 4, "seed": 1, "size": 16}, f"s3://{name}/held", progress=False)


# --- issue 48 item 1: a bucket's keys are data; none may write outside the staging directory ----
def test_resume_from_a_bucket_refuses_keys_that_leave_the_prefix_and_writes_nothing(bucket, tmp_path, monkeypatch):
    """A bucket holding ``h/job.json`` plus ``h/../../../../x.txt`` and ``h//<absolute path>/y.txt``:
    the resume on another machine (a fresh staging dir) wrote ``x.txt`` four levels above the
    staging dir and ``y.txt`` at the absolute path. Now the first bad key is one line naming it,
    and nothing at all is fetched (every key is checked before the first download)."""
    from sceneforge.core.errors import PathSecurityError

    fs, name = bucket
    staging = tmp_path / "a" / "b" / "c" / "staging"  # four levels up from its job dir: still in tmp_path
    monkeypatch.setenv("SCENEFORGE_FARM_STAGING", str(staging))
    victim = tmp_path / "victim"
    fs.pipe(f"{name}/h/job.json", json.dumps({"scenario": "farm_toy_cpu"}).encode())
    fs.pipe(f"{name}/h/images/img_00000.png", b"not fetched either")
    fs.pipe(f"{name}/h/../../../../x.txt", b"escaped")
    fs.pipe(f"{name}/h/{victim}/y.txt", b"escaped")  # tmp_path is absolute: the key has 'h//tmp/...'
    for key in (f"{name}/h/../../../../x.txt", f"{name}/h/{victim}/y.txt"):
        assert fs.exists(key), key  # the store keeps them verbatim: the attack is real
    with pytest.raises(PathSecurityError, match=r"--out s3://.*/h: bucket object '.*': .* path component.*nothing written"):
        run_job("farm_toy_cpu", {"n": 4, "seed": 1, "size": 16}, f"s3://{name}/h", progress=False)
    assert not victim.exists() and not (tmp_path / "a" / "x.txt").exists()
    assert not [p for p in tmp_path.rglob("x.txt")] and not [p for p in tmp_path.rglob("y.txt")]
    staged = [p for p in staging.rglob("*") if p.is_file() and ".farm" not in p.parts]
    assert staged == []  # not even the good keys: checked before anything is written


@pytest.mark.parametrize(
    "url, words",
    [
        ("s3:///x", "expected PROTOCOL://BUCKET"),
        ("s3://", "expected PROTOCOL://BUCKET"),
        ("s3://bkt/a/../b", "no empty, '.' or '..' parts"),
        ("s3://no-such-bucket-h48/x", "cannot write no-such-bucket-h48/x/.farm/lock: .*does the bucket exist"),
    ],
)
def test_a_bad_or_missing_bucket_is_one_line(bucket, url, words):
    """Issue 48 item 7: ``--out s3:///x`` and a missing bucket were 47-72-line tracebacks."""
    with pytest.raises(ConfigError, match=words) as e:
        run_job("farm_toy_cpu", {"n": 4, "seed": 1, "size": 16}, url, progress=False)
    assert "\n" not in str(e.value)
