"""engine.server.app.RenderWorker: the server's single command thread. A Deferred reply is held
while commands already queued behind it run, then finished; futures complete in submission order;
nothing is held when nothing is queued; failures and shutdown behave as a one-thread executor's."""
from __future__ import annotations

import threading
from concurrent.futures import CancelledError

import pytest

from engine.server.app import RenderWorker
from engine.server.commands.table import Deferred


def _worker(events, max_held=8):
    def finish(reply):
        events.append(("finish", reply._tag))
        return reply.finish()
    return RenderWorker(finish, max_held=max_held)


class _Tagged(Deferred):
    __slots__ = ("_tag",)


def _deferred(events, tag):
    d = _Tagged(lambda: events.append(("reply", tag)) or f"image {tag}")
    d._tag = tag
    return d


def _blocked(w):
    """Occupy the worker until the returned event is set (so later submissions queue up)."""
    gate, started = threading.Event(), threading.Event()
    w.submit(lambda: (started.set(), gate.wait(10)))
    assert started.wait(10)
    return gate


def test_a_deferred_reply_is_finished_after_the_commands_queued_behind_it():
    events: list = []
    w = _worker(events)
    try:
        gate = _blocked(w)
        futs = [w.submit(lambda: events.append(("run", "lit")) or _deferred(events, "lit"))]
        futs += [w.submit(lambda k=k: events.append(("run", k)) or f"reply {k}") for k in range(3)]
        gate.set()
        assert [f.result(10) for f in futs] == ["image lit", "reply 0", "reply 1", "reply 2"]
        assert events == [("run", "lit"), ("run", 0), ("run", 1), ("run", 2), ("finish", "lit"), ("reply", "lit")]
    finally:
        w.shutdown()


def test_with_nothing_queued_a_deferred_reply_is_finished_at_once():
    events: list = []
    w = _worker(events)
    try:
        f = w.submit(lambda: _deferred(events, "alone"))
        assert f.result(10) == "image alone"
        assert events == [("finish", "alone"), ("reply", "alone")]
    finally:
        w.shutdown()


def test_at_most_max_held_replies_wait_and_futures_complete_in_order():
    events: list = []
    w = _worker(events, max_held=2)
    done: list = []
    try:
        gate = _blocked(w)
        futs = [w.submit(lambda k=k: _deferred(events, k)) for k in range(5)]
        for k, f in enumerate(futs):
            f.add_done_callback(lambda _f, k=k: done.append(k))
        gate.set()
        assert [f.result(10) for f in futs] == [f"image {k}" for k in range(5)]
        assert done == [0, 1, 2, 3, 4]
        finished = [e[1] for e in events if e[0] == "finish"]
        assert finished == [0, 1, 2, 3, 4]
    finally:
        w.shutdown()


def test_a_failing_command_fails_its_own_future_only():
    events: list = []
    w = _worker(events)
    try:
        gate = _blocked(w)
        ok = w.submit(lambda: _deferred(events, "lit"))
        bad = w.submit(lambda: 1 / 0)
        after = w.submit(lambda: "still here")
        gate.set()
        assert ok.result(10) == "image lit"
        with pytest.raises(ZeroDivisionError):
            bad.result(10)
        assert after.result(10) == "still here"
    finally:
        w.shutdown()


def test_shutdown_cancels_the_queued_commands_and_refuses_new_ones():
    events: list = []
    w = _worker(events)
    gate = _blocked(w)
    queued = w.submit(lambda: "never")
    w.shutdown(cancel_futures=True)
    gate.set()
    with pytest.raises(CancelledError):
        queued.result(10)
    with pytest.raises(RuntimeError, match="shutdown"):
        w.submit(lambda: "late")
