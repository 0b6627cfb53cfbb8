"""``--format wds``: the finished dataset packed into WebDataset tar shards.

Why: a training job reading 10⁵ small files from a bucket spends its time on requests; WebDataset
shards are sequential tar files of a few hundred MB that any loader streams (``webdataset``,
``torchdata``, ``datasets``' ``webdataset`` builder) without code of ours. Each sample is the
tar members ``KEY.<ext>`` that share its key: ``KEY.jpg`` (or ``.png``), ``KEY.json`` (its table
row), ``KEY.mask.png`` when masks were made, and whatever else the scenario adds.

Deterministic: samples go into shards in global index order, ``shard_size`` per shard, and every
tar header is fixed (mtime 0, uid/gid 0, no user names, mode 0644, ustar), so the shards are the
same bytes at any worker count and on any resume. A scenario opts in by defining
``wds_samples(out_dir)`` (a method of its Scenario class), an iterator of ``(key, {ext: Path | bytes})`` in index order.
"""

from __future__ import annotations

import io
import json
import tarfile
from collections.abc import Iterable
from pathlib import Path

from sceneforge.core.atomic import atomic_path, atomic_write_json
from sceneforge.core.errors import ConfigError
from sceneforge.renderfarm.manifest import JOB_FILE
from sceneforge.renderfarm.status import job_status
from sceneforge.scenarios.contract import get_scenario

WDS_DIR = "wds"
DEFAULT_SHARD_SIZE = 1000
Members = dict[str, "Path | bytes"]


def check_shard_size(shard_size: int) -> int:
    if not isinstance(shard_size, int) or shard_size < 1:
        raise ConfigError(f"--wds-shard-size must be an integer >= 1, got {shard_size!r}")
    return shard_size


def write_wds(
    samples: Iterable[tuple[str, Members]], out_dir: Path, shard_size: int = DEFAULT_SHARD_SIZE, subdir: str = WDS_DIR
) -> dict:
    """Write ``OUT/wds/shard-NNNNNN.tar`` (+ ``index.json``; ``subdir=""``: in ``OUT`` itself) and
    return their stats.

    Example::

        write_wds(scenario.wds_samples(out), out, shard_size=500)
        # then: webdataset.WebDataset("out/wds/shard-{000000..000009}.tar")
    """
    check_shard_size(shard_size)
    wdir = Path(out_dir) / subdir
    wdir.mkdir(parents=True, exist_ok=True)
    shards, batch, n = [], [], 0
    for key, members in samples:
        batch.append((key, members))
        n += 1
        if len(batch) == shard_size:
            shards.append(_write_shard(wdir, len(shards), batch))
            batch = []
    if batch:
        shards.append(_write_shard(wdir, len(shards), batch))
    names = {s["name"] for s in shards}
    for old in wdir.glob("shard-*.tar"):  # an earlier pack with another shard size
        if old.name not in names:
            old.unlink()
    index = {"format": "webdataset", "shard_size": shard_size, "samples": n, "shards": shards}
    atomic_write_json(wdir / "index.json", index)
    return {"shards": len(shards), "samples": n, "dir": subdir}


def _write_shard(wdir: Path, k: int, batch: list[tuple[str, Members]]) -> dict:
    name = f"shard-{k:06d}.tar"
    with atomic_path(wdir / name) as tmp, tarfile.open(tmp, "w", format=tarfile.USTAR_FORMAT) as tar:
        for key, members in batch:
            for ext in sorted(members):
                _add(tar, f"{key}.{ext}", members[ext])
    return {"name": name, "samples": len(batch), "first": batch[0][0], "last": batch[-1][0]}


def _add(tar: tarfile.TarFile, name: str, data: "Path | bytes") -> None:
    payload = data if isinstance(data, bytes) else Path(data).read_bytes()
    info = tarfile.TarInfo(name)
    info.size, info.mtime, info.mode = len(payload), 0, 0o644
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    tar.addfile(info, io.BytesIO(payload))


def samples_of(scenario):
    """The scenario's (a scenarios.contract.Scenario) ``wds_samples``; one line when it has none."""
    samples = getattr(scenario, "wds_samples", None)
    if samples is None:
        raise ConfigError(
            f"--format wds: scenario {scenario.NAME or scenario.path()} cannot be packed (it defines no wds_samples)"
        )
    return samples


def pack(scenario, out_dir: Path, shard_size: int) -> dict:
    """``--format wds`` for a finished job: the scenario's samples into shards."""
    return write_wds(samples_of(scenario)(Path(out_dir)), Path(out_dir), shard_size)


def read_index(out_dir: Path) -> dict:
    return json.loads((Path(out_dir) / WDS_DIR / "index.json").read_text())


def export_wds(data_dir: Path, out: Path, shard_size: int = DEFAULT_SHARD_SIZE) -> dict:
    """``sceneforge export --format wds DATA OUT``: a finished dataset's samples as WebDataset
    shards in ``OUT`` (``shard-NNNNNN.tar`` + ``index.json``), without re-rendering (issue 47: it
    needed a re-run of ``generate --format wds``). The same writer and the same samples
    (the scenario's ``wds_samples``, from ``DATA/job.json``'s config) as ``--format wds``, so the
    shards are the bytes ``generate --format wds --wds-shard-size N`` writes in ``DATA/wds``."""
    data_dir, out = Path(data_dir), Path(out)
    check_shard_size(shard_size)
    try:
        job = json.loads((data_dir / JOB_FILE).read_text())
    except (OSError, ValueError):
        raise ConfigError(f"{data_dir}: no readable {JOB_FILE} (a `sceneforge generate` output directory?)") from None
    counts = job_status(data_dir)["counts"]["shards"]
    if counts.get("pending") or counts.get("failed"):
        raise ConfigError(f"{data_dir}: the job is not finished (sceneforge farm status {data_dir}); rerun it to resume first")
    samples = samples_of(get_scenario(job["scenario"])(job.get("config") or {}))  # the config parsed once
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise ConfigError(f"{out}: exists and is not an empty directory")
    if out.resolve() == data_dir.resolve() or data_dir.resolve() in out.resolve().parents:
        raise ConfigError(f"{out}: inside the dataset {data_dir}; export to a directory of its own")
    return write_wds(samples(data_dir), out, shard_size, subdir="")
