"""A render-server scenario for farm tests: real UnrealCV commands against the worker's server.

Per sample (RNG from ``SeedSequence([seed, index])``): place one asset at a random pose, aim the
camera at it from a random spot, render ``object_mask`` and reject the view if the object covers
too few pixels (rule ``too_small``), then render ``lit`` and write ``img_NNNNN.png`` + a JSON record
(atomic renames; complete samples are skipped). Uses only stock UnrealCV commands through the
official ``unrealcv`` client, so it would also run against a real UE5 server. ``fail_on`` lists
indices that always raise (for the failure-reporting test).

A shard first destroys every ``toy_*`` object the server still holds: a shard that died mid-sample
(its client timed out under load, its worker was killed while the server lived on) leaves its
object spawned, and a retry on that server would otherwise render it too, or fail to spawn its
name again, and write other bytes than a clean server (as the real scenarios reset their scene).
"""

from __future__ import annotations

import hashlib
import io
import json
import math
import os
import time
from pathlib import Path

import numpy as np
from PIL import Image

from sceneforge.core.errors import ConfigError
from sceneforge.scenarios.contract import JobPlan, Scenario, Shard, ShardResult

ASSETS = ("rock", "barrel", "tree")
MIN_PIXELS = 30


def plan(config: dict) -> JobPlan:
    n = config.get("n")
    if not isinstance(n, int) or n < 1:
        raise ConfigError(f"toy render config: n must be a positive int, got {n!r}")
    keys = {k: config.get(k) for k in ("n", "seed", "size")}
    fp = hashlib.sha256(json.dumps(keys, sort_keys=True).encode()).hexdigest()
    return JobPlan(n_samples=n, fingerprint=fp, description="farm toy (render)")


def run(config: dict, shard: Shard, out_dir: Path, *, server: str) -> ShardResult:
    import unrealcv

    t0 = time.perf_counter()
    res = ShardResult(shard.shard_id)
    host, port = server.rsplit(":", 1)
    client = unrealcv.Client((host, int(port)))
    if not client.connect(timeout=10):
        raise ConnectionError(f"cannot connect to {server}")
    try:
        size = int(config.get("size", 48))
        _request(client, f"vset /camera/0/size {size} {size}")
        _request(client, "vset /camera/0/fov 40")
        for stale in _toy_objects(client):  # what a shard that died mid-sample left on this server
            _request(client, f"vset /object/{stale}/destroy")
        for index in shard.indices:
            png, rec = _paths(Path(out_dir), index)
            if png.exists() and rec.exists():
                res.skipped.append(index)
                continue
            if index in config.get("fail_on", ()):
                raise RuntimeError(f"toy render sample {index} always fails")
            record, lit, rejected = _sample(client, config, index)
            _write(png, lit)
            _write(rec, json.dumps(record, sort_keys=True).encode())
            if rejected:
                res.rejections["too_small"] = res.rejections.get("too_small", 0) + rejected
            res.done.append(index)
    finally:
        client.disconnect()
    res.seconds = time.perf_counter() - t0
    return res


def _sample(client, config: dict, index: int) -> tuple[dict, bytes, int]:
    rng = np.random.default_rng(np.random.SeedSequence([int(config.get("seed", 0)), index]))
    asset = ASSETS[int(rng.integers(len(ASSETS)))]
    name = f"toy_{index}"
    _request(client, f"vset /objects/spawn {asset} {name}")
    try:
        for attempt in range(20):
            pose = _pose(rng)
            _request(client, "vset /object/{}/location {:.3f} {:.3f} 0".format(name, *pose["object"]))
            _request(client, "vset /camera/0/location {:.3f} {:.3f} {:.3f}".format(*pose["camera"]))
            _request(client, "vset /camera/0/rotation {:.3f} {:.3f} 0".format(*pose["aim"]))
            mask = _decode(client.request("vget /camera/0/object_mask png"))
            covered = int((mask.reshape(-1, 3).max(axis=1) > 0).sum())
            if covered >= MIN_PIXELS:
                lit = client.request("vget /camera/0/lit png")
                record = {"index": index, "asset": asset, "pixels": covered, **pose}
                return record, _check_png(lit), attempt
        raise RuntimeError(f"sample {index}: object never covered {MIN_PIXELS} px in 20 tries")
    finally:
        _request(client, f"vset /object/{name}/destroy")


def _toy_objects(client) -> list[str]:
    reply = _request(client, "vget /objects")
    return [name for name in reply.split() if name.startswith("toy_")]


def _pose(rng: np.random.Generator) -> dict:
    obj = rng.uniform(-300, 300, 2)
    dist, yaw = rng.uniform(300, 800), rng.uniform(-180, 180)
    cam = (obj[0] - dist * math.cos(math.radians(yaw)), obj[1] - dist * math.sin(math.radians(yaw)), rng.uniform(100, 400))
    pitch = -math.degrees(math.atan2(cam[2] - 50, dist))
    return {
        "object": [round(float(v), 3) for v in obj],
        "camera": [round(float(v), 3) for v in cam],
        "aim": [round(pitch, 3), round(float(yaw), 3)],
    }


def _request(client, command: str) -> str:
    reply = client.request(command)
    if reply is None or (isinstance(reply, str) and reply.startswith("error")):
        raise RuntimeError(f"{command!r} -> {reply!r}")
    return reply


def _decode(png: bytes) -> np.ndarray:
    return np.asarray(Image.open(io.BytesIO(_check_png(png))).convert("RGB"))


def _check_png(data) -> bytes:
    if not isinstance(data, bytes) or not data.startswith(b"\x89PNG"):
        raise RuntimeError(f"expected PNG bytes, got {str(data)[:80]!r}")
    return data


def _paths(out_dir: Path, index: int) -> tuple[Path, Path]:
    return out_dir / "images" / f"img_{index:05d}.png", out_dir / "records" / f"rec_{index:05d}.json"


def _write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def finalize(config: dict, out_dir: Path) -> dict:
    out_dir = Path(out_dir)
    lines = [(out_dir / "records" / f"rec_{i:05d}.json").read_text() for i in range(config["n"])]
    _write(out_dir / "index.jsonl", ("\n".join(lines) + "\n").encode())
    return {"records": len(lines)}


class FarmToyRender(Scenario):
    """The module's steps as the runner calls them (found by import path: unregistered)."""

    def plan(self) -> JobPlan:
        return plan(self.config)

    def run(self, shard: Shard, out_dir: Path, *, server: str) -> ShardResult:
        return run(self.config, shard, out_dir, server=server)

    def finalize(self, out_dir: Path) -> dict:
        return finalize(self.config, out_dir)
