"""A scenario whose samples cost nothing (``NEEDS_SERVER = False``, writes no file): a job of it
measures the farm itself — dispatch, IPC or Ray calls, journal commits — per work item.
Used by benchmarks/farm_scaling.py."""

from __future__ import annotations

import hashlib
from pathlib import Path

from sceneforge.scenarios.contract import JobPlan, Scenario, Shard, ShardResult


def plan(config: dict) -> JobPlan:
    n = int(config["n"])
    return JobPlan(n_samples=n, fingerprint=hashlib.sha256(f"noop{n}".encode()).hexdigest(), description="noop")


def run(config: dict, shard: Shard, out_dir: Path, *, server: str, progress=None) -> ShardResult:
    return ShardResult(shard.shard_id, done=list(shard.indices))


def finalize(config: dict, out_dir: Path) -> dict:
    return {}


class FarmNoop(Scenario):
    """The module's steps as the runner calls them (found by import path: unregistered)."""

    NEEDS_SERVER = False

    def plan(self) -> JobPlan:
        return plan(self.config)

    def run(self, shard: Shard, out_dir: Path, *, server: str, progress=None) -> ShardResult:
        return run(self.config, shard, out_dir, server=server, progress=progress)

    def finalize(self, out_dir: Path) -> dict:
        return finalize(self.config, out_dir)
