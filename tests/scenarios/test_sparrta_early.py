"""The queued request's bookkeeping (scenarios/sparrta/early.py): a reply is read once, only by
the sample it was sent for; one nobody will read is discarded."""
from __future__ import annotations

from scenarios.sparrta.early import EarlyRequest


class Replies:
    """A connection's replies, each readable once, by anyone (the client's wire keeps replies read
    out of order); records reads and discards."""

    def __init__(self):
        self.read, self.discarded = [], []

    def request(self, what):
        def reply():
            assert what not in self.read, "reply read twice"
            self.read.append(what)
            return {"counts": what}
        reply.discard = lambda: self.discarded.append(what)
        return lambda: reply


def test_the_sample_it_was_sent_for_takes_it_and_reads_it_once():
    conn, early, view = Replies(), EarlyRequest(), object()
    early.send(("city", "ego", "t", 5), view, conn.request("v5"))
    assert early.holds(("city", "ego", "t", 5)) and not early.can_send()
    got = early.take(("city", "ego", "t", 5), view)
    assert got() == {"counts": "v5"} and got() == {"counts": "v5"} and conn.read == ["v5"]
    assert early.can_send() and early.take(("city", "ego", "t", 5), view) is None


def test_another_sample_does_not_read_it():
    """Sample 4's view failed its perceptual check after sample 5's request went out: sample 4
    asks again without reading 5's reply; sample 5 still gets it later."""
    conn, early, v5, v4b = Replies(), EarlyRequest(), object(), object()
    early.send(("k", 5), v5, conn.request("v5"))
    assert early.take(("k", 4), v4b) is None and conn.read == []
    assert not early.can_send() and early.holds(("k", 5))
    assert early.take(("k", 5), v5)() == {"counts": "v5"} and conn.read == ["v5"]


def test_a_request_for_another_view_of_the_sample_is_not_handed_out():
    conn, early = Replies(), EarlyRequest()
    early.send(("k", 5), object(), conn.request("first"))
    assert early.take(("k", 5), object()) is None and conn.read == []


def test_a_replaced_request_is_discarded_unread():
    conn, early = Replies(), EarlyRequest()
    early.send(("k", 1), object(), conn.request("a"))
    early.send(("k", 1), object(), conn.request("b"))
    assert conn.discarded == ["a"] and conn.read == []
    early.settle()
    assert conn.read == ["b"]


def test_depth_bounds_the_samples_held():
    conn, early = Replies(), EarlyRequest(depth=2)
    v1, v2 = object(), object()
    early.send(("k", 1), v1, conn.request("a"))
    assert early.can_send()
    early.send(("k", 2), v2, conn.request("b"))
    assert not early.can_send() and early.holds(("k", 1)) and early.holds(("k", 2))
    assert early.take(("k", 2), v2)() == {"counts": "b"} and early.can_send()
    assert early.take(("k", 1), v1)() == {"counts": "a"} and conn.read == ["b", "a"]


def test_a_request_for_another_view_of_the_same_sample_is_discarded_with_its_second():
    conn, early = Replies(), EarlyRequest()
    early.send(("k", 5), object(), conn.request("first"))
    early.add_second(conn.request("second")())
    assert early.take(("k", 5), object()) is None and early.can_send()
    assert conn.discarded == ["first", "second"] and conn.read == []
