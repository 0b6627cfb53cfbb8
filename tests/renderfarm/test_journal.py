"""Journal, manifest and shard layout: the bookkeeping resume depends on."""

from __future__ import annotations

import sqlite3

import pytest

from sceneforge.core.errors import ConfigError
from sceneforge.scenarios.contract import JobPlan, ShardResult, get_scenario
from sceneforge.renderfarm.journal import Journal
from sceneforge.renderfarm.manifest import default_shard_size, make_shards, open_manifest


def test_shards_cover_every_index_once_in_order():
    for n, size in [(1, 1), (10, 3), (64, 32), (1000, 16)]:
        shards = make_shards(n, size)
        flat = [i for s in shards for i in s.indices]
        assert flat == list(range(n))
        assert [s.shard_id for s in shards] == list(range(len(shards)))
        assert max(len(s.indices) for s in shards) == min(size, n)


def test_default_shard_size_depends_on_n_only():
    assert default_shard_size(8) == 1
    assert default_shard_size(640) == 10
    assert default_shard_size(75000) == 32


def test_journal_records_survive_reopen(tmp_path):
    path = tmp_path / "j.sqlite"
    with Journal(path) as j:
        j.add_shards(make_shards(10, 4))
        j.finish_shard(ShardResult(0, done=[0, 1, 2], skipped=[3], rejections={"r": 2}), {}, "w0")
        j.finish_shard(ShardResult(1, done=[4, 5, 7], failed={6: "boom"}), {6: 3}, "w1")
    with Journal(path) as j:  # a resumed job re-adds shards: existing rows are kept
        j.add_shards(make_shards(10, 4))
        assert [s.shard_id for s in j.unfinished()] == [1, 2]  # failed shards are retried
        assert j.failures() == {6: (3, "boom")}
        assert [r.rejections for r in j.results()] == [{"r": 2}, {}]
        assert [r.status for r in j.rows()] == ["done", "failed", "pending"]
    assert sqlite3.connect(path).execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_finishing_a_retried_shard_clears_its_old_failures(tmp_path):
    with Journal(tmp_path / "j.sqlite") as j:
        j.add_shards(make_shards(4, 4))
        j.finish_shard(ShardResult(0, done=[0, 1, 2], failed={3: "boom"}), {3: 3}, "w0")
        j.finish_shard(ShardResult(0, done=[3], skipped=[0, 1, 2]), {}, "w0")
        assert j.failures() == {} and j.unfinished() == []


def test_readonly_journal_missing_is_a_clear_error(tmp_path):
    with pytest.raises(ConfigError, match="no farm journal"):
        Journal(tmp_path / "nope.sqlite", readonly=True)


def test_manifest_refuses_a_different_config(tmp_path):
    plan = JobPlan(10, "a" * 64)
    m = open_manifest(tmp_path, "scen", plan, None)
    assert m.shard_size == default_shard_size(10)
    assert open_manifest(tmp_path, "scen", plan, 5).shard_size == m.shard_size  # layout is fixed
    with pytest.raises(ConfigError, match="different config"):
        open_manifest(tmp_path, "scen", JobPlan(10, "b" * 64), None)
    with pytest.raises(ConfigError, match="different config"):
        open_manifest(tmp_path, "scen", JobPlan(11, "a" * 64), None)
    with pytest.raises(ConfigError, match="not 'other'"):
        open_manifest(tmp_path, "other", plan, None)


def test_get_scenario_finds_the_class_an_import_path_defines():
    assert get_scenario("farm_toy_cpu").__name__ == "FarmToyCpu" and get_scenario("farm_toy_cpu").NEEDS_SERVER is False
    with pytest.raises(ConfigError, match="no such module"):
        get_scenario("scenarios.does_not_exist")
    with pytest.raises(ConfigError, match="defines no Scenario class"):
        get_scenario("json")
