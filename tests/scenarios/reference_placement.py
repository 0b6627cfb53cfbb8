"""Clutter placement as it was before the conservative pre-tests (issue: clutter placement CPU),
kept verbatim as the reference: numpy's bounding-disc test picks the near pairs and shapely
measures every one of them, and every zone test is shapely's.

``tests/scenarios/test_placement.py`` checks that ``scenarios.world.placement`` (bounds first, shapely
only for close calls) gives exactly the same clutter, draw for draw, and the same answer on
hand-built near-tangent shapes. Only the speed differs; the rules are the same.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np
import shapely
from shapely.geometry import Point, Polygon, box
from shapely.ops import unary_union

from sceneforge.scenarios.world.placement import pick_variants

if TYPE_CHECKING:
    from sceneforge.scenarios.world.env_schema import ClutterGroup

TRIES = 40  # candidate spots per object before it is dropped (a crowded ring never loops)


def zone_geometry(rects) -> shapely.Geometry:
    """Union of axis-aligned rectangles ``[x0, y0, x1, y1]`` (any corner order), cm."""
    return unary_union([box(min(r[0], r[2]), min(r[1], r[3]), max(r[0], r[2]), max(r[1], r[3])) for r in rects])


class Occupancy:
    """What already stands: shapes with a clearance pad (discs are points padded by their radius),
    each also bounded by a disc (x, y, r) so most pairs are cleared without exact geometry.
    Arrays grow by doubling: a forest places 140 objects, each tried against all before it."""

    def __init__(self, keep_out=()):
        self.keep_out = [tuple(map(float, k)) for k in keep_out]  # (x, y, r): always disc-vs-disc
        self.n = 0
        self._discs = np.zeros((64, 3))  # bounding disc of each shape
        self._pads = np.zeros(64)
        self._groups = np.zeros(64, dtype=int)  # which clutter group placed it (-1: a landmark)
        self._geoms = np.empty(64, dtype=object)

    def add(self, geom, pad: float, x: float, y: float, radius: float, group: int = -1) -> None:
        if self.n == len(self._pads):
            grow = len(self._pads)
            self._discs = np.vstack([self._discs, np.zeros((grow, 3))])
            self._pads = np.concatenate([self._pads, np.zeros(grow)])
            self._groups = np.concatenate([self._groups, np.zeros(grow, dtype=int)])
            self._geoms = np.concatenate([self._geoms, np.empty(grow, dtype=object)])
        i = self.n
        self._discs[i] = (x, y, radius)
        self._pads[i], self._groups[i], self._geoms[i] = pad, group, geom
        self.n += 1

    def clear(self, c: "Candidate", radius: float, gap: float, overlap_group: int | None = None) -> bool:
        """True when the candidate's shape keeps ``gap`` from everything placed (except the
        objects of ``overlap_group``, which may overlap it) and its disc (``radius`` around its
        centre) keeps clear of every keep-out disc."""
        x, y = c.x, c.y
        for kx, ky, kr in self.keep_out:
            if math.hypot(x - kx, y - ky) < kr + radius + gap:
                return False
        if not self.n:
            return True
        d = self._discs[: self.n]
        near = np.hypot(d[:, 0] - x, d[:, 1] - y) - d[:, 2] - radius < gap  # bounding discs too close
        if overlap_group is not None:
            near &= self._groups[: self.n] != overlap_group
        idx = np.flatnonzero(near)
        if not len(idx):
            return True
        exact = shapely.distance(c.geom, self._geoms[idx]) - self._pads[idx] - c.pad
        return bool(np.all((exact >= gap) & (exact > 0)))  # > 0: polygons that overlap are 0 apart


class Candidate:
    """A spot for one object: centre, yaw, and its shape (a shapely Point padded by ``pad`` for a
    disc, else a Polygon), built only when a check needs it (most candidates are decided by
    their bounding disc alone)."""

    __slots__ = ("x", "y", "yaw", "pad", "_geom", "_make")

    def __init__(self, x: float, y: float, yaw: float, pad: float, geom=None, make=None):
        self.x, self.y, self.yaw, self.pad, self._geom, self._make = x, y, yaw, pad, geom, make

    @property
    def geom(self):
        if self._geom is None:
            self._geom = self._make()
        return self._geom


def footprint_polygon(footprint: np.ndarray, scale: float, x: float, y: float, yaw_deg: float) -> Polygon:
    """The asset's local footprint, scaled, turned by UE yaw (+yaw turns X towards Y), moved to x, y."""
    c, s = math.cos(math.radians(yaw_deg)), math.sin(math.radians(yaw_deg))
    turn = np.array([[c, s], [-s, c]]) * scale  # row vectors: (fx, fy) @ turn
    return shapely.polygons(np.asarray(footprint, dtype=float) @ turn + (x, y))


def ring_candidate(rng: np.random.Generator, centre, ring, radius: float) -> Candidate:
    """A spot uniform over the ring's area, random yaw; the object is its footprint disc."""
    d = math.sqrt(rng.uniform(ring[0] ** 2, ring[1] ** 2))
    a = rng.uniform(0, 2 * math.pi)
    x, y = centre[0] + d * math.cos(a), centre[1] + d * math.sin(a)
    yaw = float(rng.uniform(-180, 180))
    return Candidate(x, y, yaw, radius, geom=Point(x, y))


class Line:
    """Segments ``[x0, y0, x1, y1]`` (cm); a point drawn uniformly by length."""

    def __init__(self, segments):
        self.seg = np.asarray(segments, dtype=float).reshape(-1, 4)
        d = self.seg[:, 2:] - self.seg[:, :2]
        self.length = np.hypot(d[:, 0], d[:, 1])
        if np.any(self.length <= 0):
            raise ValueError("a line segment has zero length")
        self.dir = d / self.length[:, None]
        self.side = np.stack([-self.dir[:, 1], self.dir[:, 0]], axis=1)  # +90°: from +X towards +Y
        self.cum = np.cumsum(self.length)

    def draw(self, rng: np.random.Generator):
        """(point, direction, side) at a uniform position along the whole line."""
        t = rng.uniform(0, self.cum[-1])
        i = min(int(np.searchsorted(self.cum, t, side="right")), len(self.seg) - 1)
        along = t - (self.cum[i - 1] if i else 0.0)
        return self.seg[i, :2] + along * self.dir[i], self.dir[i], self.side[i]


def line_candidate(
    rng: np.random.Generator, line: Line, offset_cm: float, facing: str, footprint: np.ndarray, scale: float, centre, ring
) -> Candidate | None:
    """A spot along ``line`` on its side; the object is its rotated footprint polygon.
    None when the spot lies outside ``ring`` around ``centre`` (no polygon is built then)."""
    p, d, n = line.draw(rng)
    if facing == "line":  # forward (+X) back towards the line, front edge at the offset
        yaw = math.degrees(math.atan2(-n[1], -n[0]))
        front = float(np.max(footprint[:, 0])) * scale
        xy = p + n * (offset_cm + front)
    elif facing == "along":
        yaw = math.degrees(math.atan2(d[1], d[0]))
        xy = p + n * offset_cm
    else:  # random
        yaw = float(rng.uniform(-180, 180))
        xy = p + n * offset_cm
    x, y = float(xy[0]), float(xy[1])
    if not ring[0] <= math.hypot(x - centre[0], y - centre[1]) <= ring[1]:
        return None
    return Candidate(x, y, yaw, 0.0, make=lambda: footprint_polygon(footprint, scale, x, y, yaw))


def in_zones(c: Candidate, radius: float, avoid, within) -> bool:
    """The candidate (bounded by the disc ``radius`` around its centre) touches none of ``avoid``
    and lies wholly inside ``within`` (either may be None)."""
    if avoid is not None:
        centre = Point(c.x, c.y)
        if shapely.distance(centre, avoid) <= radius and shapely.distance(c.geom, avoid) <= c.pad:
            return False
    if within is not None:
        if not within.contains(Point(c.x, c.y)) or not within.contains(c.geom):
            return False
        if c.pad > 0 and within.boundary.distance(c.geom) < c.pad:
            return False
    return True


# --- placing one clutter group (moved from scenarios/world/environments.py) -----------------------
def footprint_radius(lib, asset_id: str) -> float:
    """Footprint radius (cm) around the asset origin."""
    fp = lib.footprint(asset_id)
    return float(np.max(np.hypot(fp[:, 0], fp[:, 1])))


def place_group(
    group: "ClutterGroup", rng: np.random.Generator, lib, occupied: Occupancy, centre, style=(), geometry=({}, {}), index: int = 0
):
    """Yield (asset_id, x, y, yaw, scale) for one group; adds each object to ``occupied``."""
    zones, lines = geometry
    avoid = unary_union([zones[z] for z in group.avoid]) if group.avoid else None
    within = unary_union([zones[z] for z in group.within]) if group.within else None
    line = lines[group.along] if group.along else None
    lo, hi = (group.count, group.count) if isinstance(group.count, int) else group.count
    n = int(rng.integers(lo, hi + 1))
    for _ in range(n):
        cls = group.classes[int(rng.integers(len(group.classes)))]
        ids = pick_variants(lib, cls, [group.prefer_tag] if group.prefer_tag else style)
        asset_id = ids[int(rng.integers(len(ids)))]
        s = float(rng.uniform(*group.scale))
        rad = footprint_radius(lib, asset_id) * s
        footprint = lib.footprint(asset_id) if line is not None else None
        for _try in range(TRIES):
            if line is None:
                c = ring_candidate(rng, centre, group.ring_cm, rad)
            else:
                c = line_candidate(rng, line, group.offset_cm, group.facing, footprint, s, centre, group.ring_cm)
                if c is None:
                    continue
            if occupied.clear(c, rad, group.gap_cm, index if group.overlap else None) and in_zones(c, rad, avoid, within):
                occupied.add(c.geom, c.pad, c.x, c.y, rad, index)
                yield asset_id, c.x, c.y, c.yaw, s
                break


def reference_clutter(env, rng: np.random.Generator, keep_out=(), lib=None) -> list[tuple]:
    """``Environment.clutter`` with the reference placement: (asset_id, x, y, yaw, scale) of the
    landmarks, then of each clutter group's objects."""
    lib = lib or env.library
    occupied = Occupancy(keep_out)
    out = []
    for lm in env.spec.landmarks:
        asset_id = lib.resolve(lm.cls)
        out.append((asset_id, *lm.location_cm, lm.yaw, lm.scale))
        if not lm.flat:
            r = footprint_radius(lib, asset_id) * lm.scale
            occupied.add(Point(*lm.location_cm), r, *lm.location_cm, r)
    zones = {k: zone_geometry(v) for k, v in env.spec.zones.items()}
    lines = {k: Line(v) for k, v in env.spec.lines.items()}
    for k, group in enumerate(env.spec.clutter):
        out += list(place_group(group, rng, lib, occupied, env.spec.sampling.centre_cm, env.spec.style_tags, (zones, lines), k))
    return out
