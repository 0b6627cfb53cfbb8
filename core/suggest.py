"""``did you mean``: the closest known names to a mistyped one, for one-line errors.

Why one helper: env names, backbones, flags and choices all answer a typo the same way
(``--backbone 'dinov5-vits14': unknown; did you mean 'dinov2-vits14'?``), from the standard
library's ``difflib`` (no dependency; core stays dependency-free).
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable


def close_matches(value: str, known: Iterable[str], n: int = 3, cutoff: float = 0.6) -> list[str]:
    """Up to ``n`` of ``known`` closest to ``value`` (best first; case-insensitive)."""
    known = [str(k) for k in known]
    by_lower = {}
    for k in known:
        by_lower.setdefault(k.lower(), k)
    return [by_lower[m] for m in difflib.get_close_matches(str(value).lower(), list(by_lower), n=n, cutoff=cutoff)]


def did_you_mean(value: str, known: Iterable[str], n: int = 2) -> str:
    """``"did you mean 'a' or 'b'?"`` for the closest of ``known``, or ``""`` when none is close."""
    close = close_matches(value, known, n=n)
    return f"did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
