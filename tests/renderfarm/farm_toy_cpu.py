"""A small but real scenario for testing the farm without a renderer (``NEEDS_SERVER = False``).

Each sample draws points with its own RNG (``SeedSequence([seed, index])``), rejection-samples
them against two named rules, paints a PNG and writes a JSON record — every file written to a
temp name and ``os.replace``d, complete samples skipped — so it exercises exactly the properties
the farm relies on (idempotent, atomic, per-sample RNG). ``finalize`` merges records in index
order. Config knobs for tests: ``fail_on`` (indices that always raise, or with ``fail_mode:
report`` are reported in ``failed`` and end the shard early), ``hang_on`` (indices that hang), ``sleep_s`` (per-sample
delay so a test can interrupt a run mid-way; never affects outputs).
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from pathlib import Path

import numpy as np
from PIL import Image

from sceneforge.core.errors import ConfigError
from sceneforge.scenarios.contract import JobPlan, Scenario, Shard, ShardResult


def plan(config: dict) -> JobPlan:
    n = config.get("n")
    if not isinstance(n, int) or n < 1:
        raise ConfigError(f"toy config: n must be a positive int, got {n!r}")
    keys = {k: config[k] for k in ("n", "seed", "size")}
    fp = hashlib.sha256(json.dumps(keys, sort_keys=True).encode()).hexdigest()
    return JobPlan(n_samples=n, fingerprint=fp, description="farm toy (cpu)")


def sample_paths(out_dir: Path, index: int) -> tuple[Path, Path]:
    return out_dir / "images" / f"img_{index:05d}.png", out_dir / "records" / f"rec_{index:05d}.json"


def run(config: dict, shard: Shard, out_dir: Path, *, server: str, progress=None) -> ShardResult:
    t0 = time.perf_counter()
    res = ShardResult(shard.shard_id)
    for index in shard.indices:
        png, rec = sample_paths(Path(out_dir), index)
        if png.exists() and rec.exists():
            res.skipped.append(index)
            continue
        if index in config.get("fail_on", ()):
            if config.get("fail_mode") == "report":  # like scenarios.sparrta: report, stop the shard
                res.failed[index] = f"toy sample {index} always fails"
                break
            raise RuntimeError(f"toy sample {index} always fails")
        if index in config.get("hang_on", ()):
            time.sleep(3600)  # a hung renderer, as far as the farm can tell
        time.sleep(float(config.get("sleep_s", 0.0)))
        record, image, rejections = make_sample(config, index)
        _write_png(png, image)
        _write_json(rec, record)
        for rule, count in rejections.items():
            res.rejections[rule] = res.rejections.get(rule, 0) + count
        res.done.append(index)
        if progress is not None:
            progress(1)
    res.seconds = time.perf_counter() - t0
    return res


def make_sample(config: dict, index: int) -> tuple[dict, np.ndarray, dict[str, int]]:
    rng = np.random.default_rng(np.random.SeedSequence([int(config.get("seed", 0)), index]))
    size = int(config.get("size", 32))
    rejections = {"too_close": 0, "off_canvas": 0}
    points = []
    while len(points) < 3:
        p = rng.normal(size / 2, size / 4, 2)
        if not (0 <= p[0] < size and 0 <= p[1] < size):
            rejections["off_canvas"] += 1
        elif any(np.hypot(*(p - q)) < size / 8 for q in points):
            rejections["too_close"] += 1
        else:
            points.append(p)
    image = np.zeros((size, size, 3), np.uint8)
    image[..., 2] = rng.integers(0, 64, (size, size))
    for k, (x, y) in enumerate(points):
        image[int(y), int(x)] = (255, 80 * k, 0)
    label = "left" if points[1][0] < points[0][0] else "right"
    return {"index": index, "points": np.round(points, 3).tolist(), "label": label}, image, rejections


def finalize(config: dict, out_dir: Path) -> dict:
    out_dir = Path(out_dir)
    lines = [(out_dir / "records" / f"rec_{i:05d}.json").read_text().strip() for i in range(config["n"])]
    tmp = out_dir / "index.jsonl.tmp"
    tmp.write_text("\n".join(lines) + "\n")
    os.replace(tmp, out_dir / "index.jsonl")
    return {"records": len(lines)}


def wds_samples(config: dict, out_dir: Path):
    """For ``--format wds``: each sample's image and record, in index order."""
    for i in range(config["n"]):
        png, rec = sample_paths(Path(out_dir), i)
        yield f"{i:06d}", {"png": png, "json": rec}


def _write_png(path: Path, image: np.ndarray) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    Image.fromarray(image).save(tmp, format="PNG")
    os.replace(tmp, path)


def _write_json(path: Path, record: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(record, sort_keys=True))
    os.replace(tmp, path)


class FarmToyCpu(Scenario):
    """The module's steps as the runner calls them (found by import path: unregistered)."""

    NEEDS_SERVER = False

    def plan(self) -> JobPlan:
        return plan(self.config)

    def run(self, shard: Shard, out_dir: Path, *, server: str, progress=None) -> ShardResult:
        return run(self.config, shard, out_dir, server=server, progress=progress)

    def finalize(self, out_dir: Path) -> dict:
        return finalize(self.config, out_dir)

    def wds_samples(self, out_dir: Path):
        return wds_samples(self.config, out_dir)
