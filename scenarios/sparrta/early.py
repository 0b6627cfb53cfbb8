"""The next samples' first requests, queued behind this sample's own.

A render server answers one connection's requests in order. When sample i's first candidates are
requested, the next samples' first candidate views are usually ready already (the lookahead
thread drew them, scenarios/pipeline/lookahead.py). Their requests (look, figure pose, pixel counts and,
when they pass, the image: ``Session.request_view``, under the sample's token so the server
skips the rest once one passed) are then sent straight after sample i's, so the server goes from
one sample to the next while the client reads, checks and queues sample i's files, instead of
idling until the client asks. Three samples in four stand in the same scene group; for the first
sample of a new group its reset and spawn are queued first. Images and counts are pure functions
of the scene, camera and look, so a reply is the one the sample would get when asking later:
bytes never depend on it.

The client's wire keeps replies read out of order for their own readers (engine/wire.py), so a
request queued here is read only by the sample it was sent for (:meth:`EarlyRequest.take`).
"""

from __future__ import annotations

from typing import Callable


class Early:
    """Requests sent ahead for one sample: its first candidates (``views``, in draw order), each
    read at most once through ``readers`` (reply readers with ``discard()``)."""

    def __init__(self, key: tuple, views: list, readers: list[Callable[[], object]]):
        self.key, self.views, self.readers = key, list(views), list(readers)

    def discard(self) -> None:
        """Nobody will read them: let the wire drop their replies."""
        for reader in self.readers:
            getattr(reader, "discard", lambda: None)()
        self.readers = []


class EarlyRequest:
    """Up to ``depth`` :class:`Early` request sets, one per sample (in the order sent): sent by
    :meth:`send`, claimed by their sample's :meth:`take`."""

    def __init__(self, depth: int = 1):
        self.depth = depth
        self._held: dict[tuple, Early] = {}

    def can_send(self) -> bool:
        """Fewer than ``depth`` samples' requests are waiting for their sample."""
        return len(self._held) < self.depth

    def holds(self, key: tuple) -> bool:
        """Requests for sample ``key`` were sent and not yet claimed."""
        return key in self._held

    def send(self, key: tuple, views: list, request: Callable[[object], Callable[[], object]]) -> None:
        """``request(view)`` sends one of ``views``' requests for sample ``key`` (in order) and
        returns its reply reader."""
        if key in self._held:
            self._held.pop(key).discard()
        self._held[key] = Early(key, views, [request(v) for v in views])

    def take(self, key: tuple, first_view) -> Early | None:
        """The requests queued for sample ``key`` when they start with ``first_view`` (its first
        candidate), or None (send them now). Ones queued for other views are discarded."""
        early = self._held.pop(key, None)
        if early is None:
            return None
        if early.views and early.views[0] is first_view:
            return early
        early.discard()
        return None

    def settle(self) -> None:
        """Read the queued replies, if any (each stays kept for its sample)."""
        for early in self._held.values():
            for k, reader in enumerate(early.readers):
                value = reader()
                early.readers[k] = (lambda v: lambda: v)(value)
