"""``--format wds``: the finished dataset packed into WebDataset tar shards.

Why: a training job reading 10⁵ small files from a bucket spends its time on requests; WebDataset
shards are sequential tar files of a few hundred MB that any loader streams (``webdataset``,
``torchdata``, ``datasets``' ``webdataset`` builder) without code of ours. Each sample is the
tar members ``KEY.<ext>`` that share its key: ``KEY.jpg`` (or ``.png``), ``KEY.json`` (its table
row), ``KEY.mask.png`` when masks were made, and whatever else the scenario adds.

Deterministic: samples go into shards in global index order, ``shard_size`` per shard, and every
tar header is fixed (mtime 0, uid/gid 0, no user names, mode 0644, ustar), so the shards are the
same bytes at any worker count and on any resume. A scenario opts in by defining
``wds_samples(config, out_dir)``, an iterator of ``(key, {ext: Path | bytes})`` in index order.
"""

from __future__ import annotations

import io
import json
import tarfile
from collections.abc import Iterable
from pathlib import Path

from sceneforge.core.atomic import atomic_path, atomic_write_json
from sceneforge.core.errors import ConfigError

WDS_DIR = "wds"
DEFAULT_SHARD_SIZE = 1000
Members = dict[str, "Path | bytes"]


def check_shard_size(shard_size: int) -> int:
    if not isinstance(shard_size, int) or shard_size < 1:
        raise ConfigError(f"--wds-shard-size must be an integer >= 1, got {shard_size!r}")
    return shard_size


def write_wds(samples: Iterable[tuple[str, Members]], out_dir: Path, shard_size: int = DEFAULT_SHARD_SIZE) -> dict:
    """Write ``OUT/wds/shard-NNNNNN.tar`` (+ ``index.json``) and return their stats.

    Example::

        write_wds(module.wds_samples(config, out), out, shard_size=500)
        # then: webdataset.WebDataset("out/wds/shard-{000000..000009}.tar")
    """
    check_shard_size(shard_size)
    wdir = Path(out_dir) / WDS_DIR
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
    return {"shards": len(shards), "samples": n, "dir": WDS_DIR}


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


def pack(module, config: dict, out_dir: Path, shard_size: int) -> dict:
    """``--format wds`` for a finished job: the scenario's samples into shards."""
    samples = getattr(module, "wds_samples", None)
    if samples is None:
        raise ConfigError(f"--format wds: scenario {module.__name__} cannot be packed (it defines no wds_samples)")
    return write_wds(samples(config, Path(out_dir)), Path(out_dir), shard_size)


def read_index(out_dir: Path) -> dict:
    return json.loads((Path(out_dir) / WDS_DIR / "index.json").read_text())
