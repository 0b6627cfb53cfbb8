"""The lookahead thread and the build-once cache (scenarios/pipeline/lookahead.py)."""

from __future__ import annotations

import sys
import threading
import time

import pytest

from sceneforge.scenarios.pipeline.lookahead import Lookahead, OnceCache, responsive


def test_once_cache_builds_each_key_once_across_threads():
    cache, calls, gate = OnceCache(4), [], threading.Event()

    def build():
        calls.append(threading.current_thread().name)
        gate.wait(5)  # the other threads ask while this one builds
        return object()

    got = []
    threads = [threading.Thread(target=lambda: got.append(cache.get("k", build))) for _ in range(4)]
    for t in threads:
        t.start()
    time.sleep(0.05)
    gate.set()
    for t in threads:
        t.join(5)
    assert len(calls) == 1 and len(got) == 4 and all(g is got[0] for g in got)
    assert "k" in cache


def test_once_cache_errors_reach_the_asker_and_are_not_kept():
    cache, n = OnceCache(), []

    def bad():
        n.append(1)
        raise ValueError("no scene")

    for _ in range(2):
        with pytest.raises(ValueError, match="no scene"):
            cache.get("k", bad)
    assert len(n) == 2 and "k" not in cache
    assert cache.get("k", lambda: 5) == 5


def test_once_cache_keeps_the_most_recently_used():
    cache = OnceCache(2)
    for k in "abc":
        cache.get(k, lambda k=k: k)
    assert "a" not in cache and "b" in cache and "c" in cache
    cache.get("b", lambda: "?")  # used: now c is the oldest
    cache.get("d", lambda: "d")
    assert "c" not in cache and "b" in cache and cache.get("b", lambda: "rebuilt") == "b"


def test_lookahead_runs_in_order_on_one_thread_and_hands_back_results_and_errors():
    seen = []

    def work(i):
        seen.append((i, threading.current_thread().name))
        if i == 2:
            raise KeyError(i)
        return i * 10

    with Lookahead(work) as ahead:
        ahead.want([(i, (i,)) for i in range(4)])
        ahead.want([(1, (1,))])  # already queued: not run twice
        assert ahead.take(3) == 30 and ahead.take(0) == 0 and ahead.take(1) == 10
        with pytest.raises(KeyError):
            ahead.take(2)
        assert ahead.take(9, "never wanted") == "never wanted"
    assert [i for i, _ in seen] == [0, 1, 2, 3]
    assert len({name for _, name in seen}) == 1 and seen[0][1] != threading.current_thread().name


def test_lookahead_close_drops_what_was_not_taken():
    started, release = threading.Event(), threading.Event()
    ran = []

    def work(i):
        started.set()
        release.wait(5)
        ran.append(i)

    ahead = Lookahead(work)
    ahead.want([(i, (i,)) for i in range(5)])
    started.wait(5)
    release.set()
    ahead.close()  # the running call finishes, the queued are cancelled
    assert ran == [0] and ahead.take(3) is None


def test_responsive_lowers_the_switch_interval_and_restores_it():
    before = sys.getswitchinterval()
    with responsive(0.0001):
        assert sys.getswitchinterval() == pytest.approx(min(before, 0.0001))
    assert sys.getswitchinterval() == before
