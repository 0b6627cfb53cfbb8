"""The queued visibility request's bookkeeping (scenarios/sparrta/early.py): replies are read in
request order, once, and handed to the sample they belong to."""
from __future__ import annotations

from scenarios.sparrta.early import EarlyRequest


class Replies:
    """Replies of a connection in request order (a list of sent requests, read oldest first)."""

    def __init__(self):
        self.sent, self.read = [], []

    def request(self, what):
        self.sent.append(what)

        def reply():
            assert self.sent[len(self.read)] == what, "reply read out of order"
            self.read.append(what)
            return {"counts": what}
        return lambda: reply


def test_the_sample_it_was_sent_for_takes_it_and_reads_it_once():
    conn, early, view = Replies(), EarlyRequest(), object()
    early.send(("city", "ego", "t", 5), view, conn.request("v5"))
    assert not early.can_send()                        # one at a time
    got = early.take(("city", "ego", "t", 5), view)
    assert got() == {"counts": "v5"} and got() == {"counts": "v5"} and conn.read == ["v5"]
    assert early.can_send() and early.take(("city", "ego", "t", 5), view) is None


def test_another_samples_request_is_read_first_and_kept_for_it():
    """Sample 4's view failed its perceptual check after sample 5's request went out: sample 4's
    next request must wait until 5's reply is read; sample 5 still gets that reply later."""
    conn, early, v5, v4b = Replies(), EarlyRequest(), object(), object()
    early.send(("k", 5), v5, conn.request("v5"))
    assert early.take(("k", 4), v4b) is None and conn.read == ["v5"]    # read in order, kept
    assert early.can_send()                                              # settled: may be replaced
    assert early.take(("k", 5), v5)() == {"counts": "v5"} and conn.read == ["v5"]


def test_a_request_for_another_view_of_the_sample_is_not_handed_out():
    conn, early = Replies(), EarlyRequest()
    early.send(("k", 5), object(), conn.request("first"))
    assert early.take(("k", 5), object()) is None and conn.read == ["first"]


def test_settle_reads_before_anything_else_is_sent():
    conn, early = Replies(), EarlyRequest()
    early.send(("k", 1), object(), conn.request("a"))
    early.settle()
    early.settle()
    assert conn.read == ["a"]
    early.send(("k", 2), object(), conn.request("b"))   # replaces the settled, unclaimed one
    early.settle()
    assert conn.read == ["a", "b"]
