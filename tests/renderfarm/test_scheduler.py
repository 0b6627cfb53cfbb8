"""The scheduler on a real local pool: per-sample progress is settled exactly once per sample."""

from __future__ import annotations

from farm_helpers import dataset_digest
from sceneforge.renderfarm.journal import Journal
from sceneforge.renderfarm.local import LocalPool, WorkerSpec
from sceneforge.renderfarm.manifest import make_shards
from sceneforge.renderfarm.scheduler import Scheduler


def test_progress_ticks_per_sample_and_adds_up(tmp_path, cpu_reference):
    config, reference = cpu_reference
    shards = make_shards(48, 12)
    updates: list[int] = []
    with Journal(tmp_path / "journal.sqlite") as journal:
        journal.add_shards(shards)
        scheduler = Scheduler(shards, journal, on_samples=updates.append)
        pool = LocalPool(WorkerSpec("farm_toy_cpu", config, str(tmp_path / "out"), str(tmp_path / "servers")), 2)
        try:
            results = scheduler.run(pool)
        finally:
            pool.close()
        assert journal.unfinished() == []
    assert sum(updates) == 48
    assert updates.count(1) >= 48  # one tick per sample from inside the shards (12 per shard)
    assert sorted(i for r in results for i in r.done) == list(range(48))
    samples = {k: v for k, v in reference.items() if k not in ("index.jsonl", "job.json")}  # no finalize, no claim here
    assert dataset_digest(tmp_path / "out") == samples
