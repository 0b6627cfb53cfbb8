"""The queued requests' bookkeeping (scenarios/sparrta/early.py): a reply is read once, only by
the sample it was sent for; ones nobody will read are discarded."""

from __future__ import annotations

from sceneforge.scenarios.sparrta.early import EarlyRequest


class Replies:
    """A connection's replies, each readable once, by anyone (the client's wire keeps replies read
    out of order); records reads and discards."""

    def __init__(self):
        self.read, self.discarded = [], []

    def request(self, view):
        what = view if isinstance(view, str) else getattr(view, "name", "?")

        def reply():
            assert what not in self.read, "reply read twice"
            self.read.append(what)
            return {"counts": what}

        reply.discard = lambda: self.discarded.append(what)
        return reply


class View:
    def __init__(self, name):
        self.name = name


def test_the_sample_it_was_sent_for_takes_it_and_reads_each_reply_once():
    conn, early, views = Replies(), EarlyRequest(), [View("v5a"), View("v5b")]
    early.send(("city", "ego", "t", 5), views, conn.request)
    assert early.holds(("city", "ego", "t", 5)) and not early.can_send()
    got = early.take(("city", "ego", "t", 5), views[0])
    assert [r() for r in got.readers] == [{"counts": "v5a"}, {"counts": "v5b"}] and conn.read == ["v5a", "v5b"]
    assert early.can_send() and early.take(("city", "ego", "t", 5), views[0]) is None


def test_another_sample_does_not_read_it():
    """Sample 4's view failed its perceptual check after sample 5's requests went out: sample 4
    asks again without reading 5's replies; sample 5 still gets them later."""
    conn, early, v5, v4b = Replies(), EarlyRequest(), View("v5"), View("v4b")
    early.send(("k", 5), [v5], conn.request)
    assert early.take(("k", 4), v4b) is None and conn.read == []
    assert not early.can_send() and early.holds(("k", 5))
    assert early.take(("k", 5), v5).readers[0]() == {"counts": "v5"} and conn.read == ["v5"]


def test_requests_for_other_views_of_the_sample_are_discarded():
    conn, early = Replies(), EarlyRequest()
    early.send(("k", 5), [View("first"), View("second")], conn.request)
    assert early.take(("k", 5), View("other")) is None and early.can_send()
    assert conn.discarded == ["first", "second"] and conn.read == []


def test_replaced_requests_are_discarded_unread_and_settle_reads_the_rest():
    conn, early = Replies(), EarlyRequest()
    early.send(("k", 1), [View("a")], conn.request)
    b = View("b")
    early.send(("k", 1), [b, View("c")], conn.request)
    assert conn.discarded == ["a"] and conn.read == []
    early.settle()
    assert conn.read == ["b", "c"]
    got = early.take(("k", 1), b)
    assert [r() for r in got.readers] == [{"counts": "b"}, {"counts": "c"}] and conn.read == ["b", "c"]


def test_depth_bounds_the_samples_held():
    conn, early = Replies(), EarlyRequest(depth=2)
    v1, v2 = View("a"), View("b")
    early.send(("k", 1), [v1], conn.request)
    assert early.can_send()
    early.send(("k", 2), [v2], conn.request)
    assert not early.can_send() and early.holds(("k", 1)) and early.holds(("k", 2))
    assert early.take(("k", 2), v2).readers[0]() == {"counts": "b"} and early.can_send()
    assert early.take(("k", 1), v1).readers[0]() == {"counts": "a"} and conn.read == ["b", "a"]
