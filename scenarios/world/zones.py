"""Named zones of an environment (``avoid: [road]``, ``within: [sidewalk]``): is a spot in or out.

A zone is given as axis-aligned rectangles ``[x0, y0, x1, y1]`` (cm); their shapely union decides,
exactly as it always did. The rectangles are kept next to it because they settle the certain
cases in plain floats: a centre far outside every rectangle is outside, a shape (its box and
centre) deep inside one rectangle is inside, a box far from every rectangle does not touch, each
by more than :func:`scenarios.world.placement_bounds.slack`; anything closer asks shapely (the zone's
boundary is cached). A zone given only as shapely geometry (``Site.of``'s older form), an empty
zone or a non-finite rectangle leaves every test to shapely.

Kept out of scenarios/world/placement.py, which draws the spots and asks :func:`in_zones` before the
collision test (it is the cheaper one; both are pure, so the order changes no answer): zone tests
are a concern of their own, with their own rectangle maths.
"""

from __future__ import annotations

import math

import shapely
from shapely.geometry import Point, box
from shapely.ops import unary_union

from sceneforge.scenarios.world.placement_bounds import Candidate, slack


def zone_geometry(rects) -> shapely.Geometry:
    """Union of axis-aligned rectangles ``[x0, y0, x1, y1]`` (any corner order), cm."""
    return unary_union([box(min(r[0], r[2]), min(r[1], r[3]), max(r[0], r[2]), max(r[1], r[3])) for r in rects])


class Zone:
    """A named zone: its shapely geometry (which decides) and, when it was given as rectangles,
    those rectangles, which settle the certain cases cheaply (a spot deep inside one rectangle
    is inside the union; a point far from all of them is outside it)."""

    __slots__ = ("geom", "rects", "_boundary")

    def __init__(self, rects=None, geom=None):
        self.geom = zone_geometry(rects) if geom is None else geom
        self.rects = (
            None
            if rects is None
            else [(float(min(r[0], r[2])), float(min(r[1], r[3])), float(max(r[0], r[2])), float(max(r[1], r[3]))) for r in rects]
        )
        if self.rects is not None and (not self.rects or not all(map(math.isfinite, sum(self.rects, ())))):
            self.rects = None  # no rectangle (an empty zone) or a non-finite one: shapely decides
        self._boundary = None

    @classmethod
    def union(cls, zones: list["Zone"]) -> "Zone":
        """Several zones as one (``avoid: [road, square]``); the geometry is the union of theirs,
        exactly as it always was (``unary_union`` of the list, even of one zone)."""
        rects = None if any(z.rects is None for z in zones) else [r for z in zones for r in z.rects]
        out = cls(geom=unary_union([z.geom for z in zones]))
        out.rects = rects
        return out

    @property
    def boundary(self):
        if self._boundary is None:
            self._boundary = self.geom.boundary
        return self._boundary

    def point_distance(self, x: float, y: float) -> float:
        """Distance from (x, y) to the union of the rectangles (0 inside one)."""
        return min(math.hypot(max(x0 - x, 0.0, x - x1), max(y0 - y, 0.0, y - y1)) for x0, y0, x1, y1 in self.rects)

    def box_distance(self, b) -> float:
        """Distance from the box ``(x0, y0, x1, y1)`` to the union of the rectangles."""
        return min(math.hypot(max(x0 - b[2], b[0] - x1, 0.0), max(y0 - b[3], b[1] - y1, 0.0)) for x0, y0, x1, y1 in self.rects)


def _as_zone(z) -> Zone | None:
    return z if z is None or isinstance(z, Zone) else Zone(geom=z)


def in_zones(c: Candidate, radius: float, avoid, within) -> bool:
    """The candidate (bounded by the disc ``radius`` around its centre) touches none of ``avoid``
    and lies wholly inside ``within`` (either may be None: a :class:`Zone` or shapely geometry)."""
    if avoid is not None and _touches(_as_zone(avoid), c, radius):
        return False
    if within is not None and not _inside(_as_zone(within), c):
        return False
    return True


def _touches(zone: Zone, c: Candidate, radius: float) -> bool:
    """shapely: ``distance(centre, zone) <= radius and distance(shape, zone) <= pad``; the
    rectangles settle each half unless it is a close call."""
    x, y = c.x, c.y
    if zone.rects is None:
        return shapely.distance(Point(x, y), zone.geom) <= radius and shapely.distance(c.geom, zone.geom) <= c.pad
    s = slack(x, y, radius, c.pad)
    dc = zone.point_distance(x, y)
    if dc > radius + s:
        return False
    if dc >= radius - s and not shapely.distance(Point(x, y), zone.geom) <= radius:
        return False
    if c.is_disc:  # the shape is the centre: its distance is dc
        if dc > c.pad + s:
            return False
        if dc < c.pad - s:
            return True
    elif zone.box_distance(c.box) > c.pad + s:
        return False
    return shapely.distance(c.geom, zone.geom) <= c.pad


def _inside(zone: Zone, c: Candidate) -> bool:
    """shapely: the zone contains the centre and the shape, and the shape keeps ``pad`` from its
    boundary; a shape (box and centre) deep inside one rectangle is inside, a centre far outside
    all of them is not, anything else asks shapely."""
    if zone.rects is not None:
        x, y, pad, b = c.x, c.y, c.pad, c.box
        s = slack(x, y, pad)
        outside = True
        for x0, y0, x1, y1 in zone.rects:
            depth = min(x - x0, x1 - x, y - y0, y1 - y)
            if depth >= -s:
                outside = False
                if depth > s and min(b[0] - x0, x1 - b[2], b[1] - y0, y1 - b[3]) > pad + s:
                    return True
        if outside:
            return False
    within = zone.geom
    if not within.contains(Point(c.x, c.y)) or not within.contains(c.geom):
        return False
    if c.pad > 0 and zone.boundary.distance(c.geom) < c.pad:
        return False
    return True
