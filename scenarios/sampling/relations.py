"""SpaRRTa's labelling rules: where is the *target* relative to the *source*, seen by an observer.

These are pure functions on XY positions in UE units (cm, left-handed, X forward, Y right seen
from above), written to match SpaRRTa's evaluation code exactly (see docs/datasets.md):

* ``f = source - observer``  (the observer's line of sight through the source; the observer's own
  yaw is *not* used, for the camera or for the human figure);
* ``r = target - source``;
* ``a`` = unsigned angle between ``f`` and ``r`` in degrees, in [0, 180];
* side from the 2-D cross product in UE coordinates ``c = f.x * r.y - f.y * r.x``:
  ``c > 0`` means the target is to the observer's **right** (UE's +Y is right of +X);
* ``a < 45 - m`` → ``"front"`` (the target lies beyond the source along the line of sight),
  ``a > 135 + m`` → ``"back"``, ``45 + m < a < 135 - m`` → ``"left"``/``"right"`` by the side,
  anything else is **ambiguous** (``None``) and must be rejected by the sampler.

Example::

    >>> relation((0, 0), (100, 0), (100, 50), margin_deg=15)   # target on +Y of the source
    'right'
"""

from __future__ import annotations

import math
from typing import Sequence

from sceneforge.core.errors import ConfigError

LABELS: tuple[str, ...] = ("front", "back", "left", "right")
TASK_OBSERVER = {"ego": "camera", "allo": "human"}

Point = Sequence[float]


def _xy(name: str, p: Point) -> tuple[float, float]:
    """First two coordinates as finite floats (Z, if present, is ignored by the rules)."""
    try:
        x, y = float(p[0]), float(p[1])
    except (TypeError, ValueError, IndexError) as e:
        raise ConfigError(f"relation: {name} must have at least 2 numbers, got {p!r}") from e
    if not (math.isfinite(x) and math.isfinite(y)):
        raise ConfigError(f"relation: {name} must be finite, got {p!r}")
    return x, y


def check_margin(margin_deg: float) -> float:
    """A margin must leave every class non-empty: 0 <= m < 45 degrees."""
    try:  # a 400-digit int overflows float() (issue 48): the same one line as any out-of-range margin
        m = float(margin_deg)
    except (TypeError, ValueError, OverflowError):
        m = float("nan")
    if not (0.0 <= m < 45.0):
        text = str(margin_deg)
        raise ConfigError(f"ambiguity margin must be in [0, 45) degrees, got {text if len(text) <= 40 else text[:40] + '...'}")
    return m


def angle_and_cross(observer: Point, source: Point, target: Point) -> tuple[float, float]:
    """Unsigned angle ∠(f, r) in degrees and the UE cross product ``f.x*r.y - f.y*r.x``.

    Uses ``atan2(|c|, f·r)`` rather than ``acos`` so the angle stays accurate near 0 and 180.
    Raises :class:`ConfigError` when observer = source or source = target (no direction).
    """
    ox, oy = _xy("observer", observer)
    sx, sy = _xy("source", source)
    tx, ty = _xy("target", target)
    fx, fy, rx, ry = sx - ox, sy - oy, tx - sx, ty - sy
    if fx == 0.0 and fy == 0.0:
        raise ConfigError(f"relation: observer and source coincide in XY at ({sx}, {sy})")
    if rx == 0.0 and ry == 0.0:
        raise ConfigError(f"relation: source and target coincide in XY at ({sx}, {sy})")
    cross = fx * ry - fy * rx
    dot = fx * rx + fy * ry
    return math.degrees(math.atan2(abs(cross), dot)), cross


def classify(angle_deg: float, cross: float, margin_deg: float) -> str | None:
    """Label from an angle in [0, 180] and the cross product's sign; ``None`` if ambiguous.

    Boundaries are exclusive: an angle of exactly ``45 - m`` is ambiguous, not front.
    """
    m = check_margin(margin_deg)
    a = float(angle_deg)
    if a < 45.0 - m:
        return "front"
    if a > 135.0 + m:
        return "back"
    if 45.0 + m < a < 135.0 - m:
        return "right" if cross > 0 else "left"
    return None


def relation(observer_xy: Point, source_xy: Point, target_xy: Point, margin_deg: float) -> str | None:
    """SpaRRTa label of ``target`` relative to ``source`` seen from ``observer`` (XY only)."""
    angle, cross = angle_and_cross(observer_xy, source_xy, target_xy)
    return classify(angle, cross, margin_deg)


def heading_angle_and_cross(heading_yaw_deg: float, source: Point, target: Point) -> tuple[float, float]:
    """:func:`angle_and_cross` with the observer's *heading* as the forward axis instead of the
    line of sight through the source: ``f = (cos yaw, sin yaw)`` (UE yaw, degrees; the camera's
    horizontal viewing direction), ``r = target - source``.

    Why: SpaRRTa's ego label looks along the camera→source line on the ground; a person reads an
    image in the camera's heading (image right = the heading turned +90°). The two axes differ by
    the source's horizontal angle off the image centre (up to half the field of view), so a
    sample can clear the margin in one frame and sit on a diagonal, or in another sector, in the
    other (issue 46: 5.8 % of jitter ego samples read as another sector)."""
    yaw = math.radians(float(heading_yaw_deg))
    sx, sy = _xy("source", source)
    return angle_and_cross((sx - math.cos(yaw), sy - math.sin(yaw)), (sx, sy), target)


def heading_relation(heading_yaw_deg: float, source: Point, target: Point, margin_deg: float) -> str | None:
    """The relation read along the observer's heading (:func:`heading_angle_and_cross`), with the
    same sectors and margin as :func:`relation`; ``None`` inside a margin band."""
    angle, cross = heading_angle_and_cross(heading_yaw_deg, source, target)
    return classify(angle, cross, margin_deg)


def boundary_distance(angle_deg: float) -> float:
    """Degrees from the nearest diagonal (45 or 135): how far a sample is from ambiguity."""
    return min(abs(angle_deg - 45.0), abs(angle_deg - 135.0))
