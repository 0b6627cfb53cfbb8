"""The next sample's first request, queued behind this sample's own.

A render server answers one connection's requests in order. When sample i's first candidate is
requested, sample i+1's first candidate view is usually ready already (the lookahead thread drew
it, scenarios/lookahead.py). Its request (look, figure pose, pixel counts and, when they pass,
its image: ``Session.request_view``) is then sent straight after sample i's, so the server goes
from one to the other while the client reads, checks and queues sample i's files, instead of
idling until the client asks. Three samples in four stand in the same scene group; for the first
sample of a new group the reset and spawn are queued too, once sample i is accepted. Images and
counts are pure functions of the scene, camera and look, so the reply is the one the sample
would get when asking later: bytes never depend on it.

The client's wire keeps replies read out of order for their own readers (engine/wire.py), so a
request queued here is read only by the sample it was sent for (:meth:`EarlyRequest.take`).
"""
from __future__ import annotations

from typing import Callable


class Early:
    """A request sent ahead; calling it returns its result (reading the reply once)."""

    def __init__(self, key: tuple, view, reply: Callable[[], object]):
        self.key, self.view, self._reply, self._value, self.done = key, view, reply, None, False
        self.second: Callable[[], object] | None = None   # the sample's next candidate, queued behind

    def settle(self) -> None:
        if not self.done:
            self._value, self.done = self._reply(), True

    def discard(self) -> None:
        """Nobody will read it: let the wire drop its reply (and its second's)."""
        if not self.done:
            getattr(self._reply, "discard", lambda: None)()
            self.done = True
        if self.second is not None:
            getattr(self.second, "discard", lambda: None)()
            self.second = None

    def __call__(self):
        self.settle()
        return self._value


class EarlyRequest:
    """Up to ``depth`` :class:`Early` requests, one per sample (in the order sent): sent by
    :meth:`send`, claimed by their sample's :meth:`take`."""

    def __init__(self, depth: int = 1):
        self.depth = depth
        self._held: dict[tuple, Early] = {}
        self._last: tuple | None = None   # the key sent last (add_second attaches to it)

    def can_send(self) -> bool:
        """Fewer than ``depth`` requests are waiting for their sample."""
        return len(self._held) < self.depth

    def holds(self, key: tuple) -> bool:
        """A request for sample ``key`` was sent and not yet claimed."""
        return key in self._held

    def send(self, key: tuple, view, request: Callable[[], Callable[[], object]]) -> None:
        """``request()`` sends ``view``'s request for sample ``key`` and returns its reply reader."""
        if key in self._held:
            self._held.pop(key).discard()
        self._held[key] = Early(key, view, request())
        self._last = key

    def add_second(self, reply: Callable[[], object]) -> None:
        """The reader of the last sent request's sample's next candidate, sent right behind it."""
        self._held[self._last].second = reply

    def take(self, key: tuple, view) -> Early | None:
        """The request queued for ``view`` (sample ``key``'s first candidate), or None (send it now).
        One queued for another view of sample ``key`` is discarded (nobody will read it)."""
        early = self._held.pop(key, None)
        if early is None:
            return None
        if early.view is view:
            return early
        early.discard()
        return None

    def settle(self) -> None:
        """Read the queued replies, if any (they stay kept for their samples)."""
        for early in self._held.values():
            early.settle()
