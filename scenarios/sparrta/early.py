"""The next sample's first visibility request, queued behind this sample's render.

A render server answers one connection's requests in order. When sample i's image is requested,
sample i+1's first candidate view is usually ready already (the lookahead thread drew it,
scenarios/lookahead.py) and, three samples in four, it stands in the same scene group. Its pixel
count request is then sent straight after the render request, so the server goes from one to the
other while the client reads, checks and queues sample i's files, instead of idling until the
client asks (an allo figure's pose request is queued before it). Pixel counts depend on the
scene and camera only (a sample's look — sun, sky, fog,
exposure — changes ``lit`` only, and is sent just before each render), so the reply is the one the
sample would get when asking later: bytes never depend on it.

Replies must be read in request order, so anything else sent on the connection first reads the
queued reply (:meth:`EarlyRequest.settle`) and keeps it for its sample.
"""
from __future__ import annotations

from typing import Callable


class Early:
    """A visibility request sent ahead; calling it returns the counts (reading the reply once)."""

    def __init__(self, key: tuple, view, reply: Callable[[], dict]):
        self.key, self.view, self._reply, self._value, self.done = key, view, reply, None, False

    def settle(self) -> None:
        if not self.done:
            self._value, self.done = self._reply(), True

    def __call__(self) -> dict:
        self.settle()
        return self._value


class EarlyRequest:
    """At most one :class:`Early` request: sent by :meth:`send`, claimed by its sample's :meth:`take`."""

    def __init__(self):
        self._early: Early | None = None

    def can_send(self) -> bool:
        """Nothing is waiting for its reply (a settled request not yet claimed is replaced)."""
        return self._early is None or self._early.done

    def holds(self, key: tuple) -> bool:
        """A request for sample ``key`` was sent and not yet claimed (read or not)."""
        return self._early is not None and self._early.key == key

    def send(self, key: tuple, view, request: Callable[[], Callable[[], dict]]) -> None:
        """``request()`` sends ``view``'s visibility request for sample ``key`` and returns its reply reader."""
        self._early = Early(key, view, request())

    def take(self, key: tuple, view) -> Early | None:
        """The request queued for ``view`` (sample ``key``'s first candidate), or None (send it
        now). A request of another sample is read (in order) and kept for that sample."""
        early = self._early
        if early is not None and early.key == key and early.view is view:
            self._early = None
            return early
        self.settle()
        return None

    def settle(self) -> None:
        """Read the queued reply, if any, before anything else is sent on the connection."""
        if self._early is not None:
            self._early.settle()
