"""``--workers auto`` (renderfarm.auto): free cores, memory and sample count decide."""

import pytest

from sceneforge.core.errors import ConfigError
from sceneforge.renderfarm.auto import WORKER_MEMORY_BYTES, auto_workers, resolve_workers, usable_cpus


@pytest.mark.parametrize(
    "cpus,load,memory,n,want",
    [
        (2, 8.0, None, 1000, 1),  # the loaded 2-core box: inline, two workers were slower
        (2, 0.1, None, 1000, 1),  # idle 2 cores: inline (its server takes both: inline_threads)
        (2, 0.6, None, 1000, 1),  # 1.4 cores free: one
        (4, 0.0, None, 1000, 3),  # idle 4 cores: 1.3 cores a worker
        (16, 0.5, None, 1000, 12),  # idle 16 cores (15.5 free)
        (16, 12.0, None, 1000, 3),  # busy 16 cores: only what is free
        (16, 0.0, 3 * WORKER_MEMORY_BYTES, 1000, 3),  # memory caps it
        (16, 0.0, None, 5, 5),  # never more workers than samples
        (1.5, 0.0, None, 10, 1),  # fractional cgroup quota
    ],
)
def test_auto_workers(cpus, load, memory, n, want):
    assert auto_workers(n, cpus=cpus, load=load, memory=memory) == want


def test_resolve_workers():
    assert resolve_workers(3, 100) == 3 and resolve_workers("2", 100) == 2
    assert 1 <= resolve_workers("auto", 100) <= 100 and resolve_workers(" AUTO ", 1) == 1
    assert usable_cpus() >= 1
    for bad in (0, -1, "many", None, 1.5):
        with pytest.raises(ConfigError, match="workers"):
            resolve_workers(bad, 10)


def test_cli_workers_auto_is_resolved_per_job(capsys):
    import argparse

    from sceneforge.commands.common import _workers, backend_of, resolve_auto_workers

    assert _workers("auto") == "auto" and _workers("3") == 3
    for bad in ("0", "two"):
        with pytest.raises(argparse.ArgumentTypeError):
            _workers(bad)
    args = argparse.Namespace(workers="auto", servers=None, ray_address=None, backend=None)
    resolve_auto_workers("sparrta", {"envs": ["desert"], "tasks": ["ego"], "n": 3}, args)
    assert isinstance(args.workers, int) and 1 <= args.workers <= 3
    assert backend_of(args) == ("inline" if args.workers == 1 else "local")
    assert "--workers auto:" in capsys.readouterr().err
    ray = argparse.Namespace(workers="auto", servers=None, ray_address="ray://x:1", backend="ray")
    resolve_auto_workers("sparrta", {"n": 3}, ray)
    assert ray.workers is None  # the cluster decides


@pytest.mark.parametrize(
    "cpus, load, want",
    [
        (2, 0.1, 2),  # idle 2-core box: the inline server takes both cores
        (2, 1.2, 1),  # one core busy elsewhere
        (2, 8.0, 1),  # loaded: never below 1
        (16, 0.0, 4),  # capped: more rasteriser threads do not pay for a 224² frame
    ],
)
def test_inline_threads(cpus, load, want):
    from sceneforge.renderfarm.auto import inline_threads

    assert inline_threads(cpus=cpus, load=load) == want
