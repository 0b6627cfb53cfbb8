"""A sample's candidate views, in the order the sequential sampler draws them.

``Session.start`` (scenario.py) draws a sample's first ``QUEUE_DEPTH`` candidates on the lookahead
thread; ``Session.make`` extends the same list as the server counts them. Keeping the draws in one
list per (sample, scene group), in order, is what makes queueing candidates give the bytes of one
candidate at a time (``test_lookahead_changes_no_byte``).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from sceneforge.core.errors import PlacementError
from sceneforge.scenarios.sparrta.scene import Group, Setting, sample_view


@dataclass
class Ahead:
    """A sample's client-only first steps (``Session.start``): its setting and look, its RNG
    after drawing its first candidate views, and those draws in order: (view, PlacementError or
    None, the rejections counted on the way), ending at the first error."""

    key: tuple
    st: Setting
    look: dict
    rng: object
    draws: list = field(default_factory=list)


def draw_candidates(rng, group: Group, task: str, want: str, st: Setting, ground, draws: list, n: int) -> list:
    """Extend ``draws`` (a sample's candidate draws for one scene group, in order) to ``n`` items
    with the sequential loop's next draws from ``rng``; a draw that raises ends them (the loop
    stops there). Returns ``draws``."""
    while len(draws) < n and (not draws or draws[-1][1] is None):
        seen: Counter = Counter()
        try:
            draws.append((sample_view(rng, group, task, want, st, ground, group.viewpoint, seen), None, seen))
        except PlacementError as e:
            draws.append((None, e, seen))
    return draws


def usable_views(draws: list):
    """The views of ``draws`` up to the first error."""
    for view, err, _ in draws:
        if err is not None:
            return
        yield view


def discard_replies(sent: dict) -> None:
    """Drop the replies of queued requests nobody will read (the server skipped them)."""
    for reader in sent.values():
        getattr(reader, "discard", lambda: None)()
    sent.clear()
