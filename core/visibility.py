"""The visibility rule on rendered pixel counts, shared by the samplers and the render server.

A sample is kept only when each labelled object is in the frame, occluded by at most
``1 - min_ratio`` of its own pixels, and its visible pixels span at least ``min_bbox_px`` in x or
y. The samplers decide with it (``scenarios.sampling.rejection`` re-exports it); the render server runs
the same function to decide whether a ``/sceneforge/render_if_visible`` request goes on to
render (engine/server/commands/ext.py), so the two cannot disagree by construction.
"""

from __future__ import annotations

import math
from typing import Mapping, Sequence


def visibility_failure(counts: Mapping[str, object], names: Sequence[str], min_ratio: float, min_bbox_px: float) -> str | None:
    """Name of the first visibility rule a set of pixel counts breaks, or None if all pass.

    ``counts[name]`` has ``visible``, ``unoccluded`` and ``bbox`` (x0, y0, x1, y1 inclusive) as
    returned by the render server's ``/sceneforge/visibility``; unoccluded = the object alone.
    """
    for n in names:
        pc = counts.get(n)
        if pc is None or not pc.unoccluded:
            return "not_visible"  # nothing of it in the frame, even alone
        if pc.visible / pc.unoccluded < min_ratio or pc.bbox is None:
            return "occluded"
        x0, y0, x1, y1 = pc.bbox
        if max(x1 - x0 + 1, y1 - y0 + 1) < min_bbox_px:
            return "too_small"
    return None


def check_gate(min_ratio: object, min_bbox_px: object) -> tuple[float, float]:
    """The rule's two thresholds as floats, or ValueError naming the bad one (values that cross a
    socket: finite, ratio in [0, 1], box size >= 0)."""
    out = []
    for name, value, hi in (("min_visible_ratio", min_ratio, 1.0), ("min_bbox_px", min_bbox_px, 1.0e6)):
        if (
            isinstance(value, bool)
            or not isinstance(value, (int, float))
            or not 0.0 <= value <= hi  # before isfinite: a 400-digit int compares, float() overflows
            or not math.isfinite(value)
        ):
            text = repr(value)
            raise ValueError(f"{name}: expected a number in [0, {hi:g}], got {text if len(text) <= 60 else text[:40] + '...'}")
        out.append(float(value))
    return out[0], out[1]
