"""Where background clutter may stand: rings, named zones and lines (streets, kerbs, frontages).

An environment places each clutter group in a ring around the sampling centre (the default), or
*along* a named line (buildings facing a street, lamp posts on a kerb, cars in a parking lane), and
can keep a group out of named zones (``avoid: [road]``) or inside them (``within: [sidewalk]``).
Zones and lines are plain geometry in the environment file, in world cm:

    zones: {road: [[-9000, -515, 9000, 515], ...]}        # axis-aligned rectangles [x0, y0, x1, y1]
    lines: {frontage: [[3200, 950, 9000, 950], ...]}      # segments [x0, y0, x1, y1]

A segment's *side* is its direction turned +90° (from +X towards +Y): objects ``along`` a line stand
on that side, ``offset_cm`` from it; ``facing: line`` turns their forward axis (+X) back towards
the line and puts their front (not their centre) at the offset, so a row of buildings shows one
straight facade; ``facing: along`` points them along the segment (parked cars).

Collision: objects placed in a ring are discs (footprint radius, as before); objects placed along
a line are their rotated footprint polygons, so a street frontage can be a closed row. The
``keep_out`` discs (the labelled objects, the camera) are always tested against the object's full
disc, the conservative choice. Everything is deterministic given the generator: the same draws
in the same order, and shapely distances (exact) decide.

Speed (a city scene tries ~350 spots): every decision is the one shapely gives, but most are
settled without it. Cheap bounds (axis-aligned and oriented boxes for "certainly apart"; a disc
and a box inside each footprint, or a box's ``fill``, for "certainly too close"; the zones' own
rectangles for "certainly inside/outside") decide a pair only when they clear the threshold by
a slack (``_slack``: a billionth of the magnitudes involved, far above float error); anything
closer goes to shapely. So the outcome is byte-identical to asking shapely every time (checked
against the previous implementation, tests/scenarios/reference_placement.py), only without
building most polygons and points.
"""
from __future__ import annotations

import bisect
import math
import weakref
from typing import TYPE_CHECKING

import numpy as np
import shapely
from shapely.geometry import Point, Polygon, box
from shapely.ops import unary_union

from core.errors import ConfigError

if TYPE_CHECKING:   # annotations only: environments imports this module
    from scenarios.environments import ClutterGroup

TRIES = 40      # candidate spots per object before it is dropped (a crowded ring never loops)
CELL_CM = 1000.0    # Occupancy's grid cell: a spot is tested only against objects in the cells it reaches
_MAX_CELLS = 256    # an object (or a query) spanning more cells than this is kept in (scans) a plain list


def _slack(*magnitudes: float) -> float:
    """How far a cheap bound must clear a threshold before it decides instead of shapely: a
    billionth of the magnitudes involved (coordinates, radii, gaps; float error is ~1e-16 of
    them) plus a floor, so only genuinely close calls (near-tangent shapes) reach shapely."""
    return 1e-9 * (1000.0 + sum(abs(m) for m in magnitudes))


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
        self.rects = None if rects is None else [
            (float(min(r[0], r[2])), float(min(r[1], r[3])), float(max(r[0], r[2])), float(max(r[1], r[3])))
            for r in rects]
        if self.rects is not None and (not self.rects or not all(map(math.isfinite, sum(self.rects, ())))):
            self.rects = None   # no rectangle (an empty zone) or a non-finite one: shapely decides
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
        return min(math.hypot(max(x0 - b[2], b[0] - x1, 0.0), max(y0 - b[3], b[1] - y1, 0.0))
                   for x0, y0, x1, y1 in self.rects)


def _as_zone(z) -> Zone | None:
    return z if z is None or isinstance(z, Zone) else Zone(geom=z)


class Site:
    """An environment's zones (rectangles) and lines (segments), built once; the union of the
    zones a group names is built once per name list."""

    def __init__(self, zones=None, lines=None):
        self.zones = {k: v if isinstance(v, Zone) else Zone(v) for k, v in (zones or {}).items()}
        self.lines = {k: v if isinstance(v, Line) else Line(v) for k, v in (lines or {}).items()}
        self._unions: dict[tuple, Zone] = {}

    @classmethod
    def of(cls, geometry) -> "Site":
        """A Site, or the older ``(zones as shapely geometry, lines as Line)`` pair (no
        rectangles then: shapely decides every zone test)."""
        if isinstance(geometry, Site):
            return geometry
        zones, lines = geometry
        return cls({k: v if isinstance(v, Zone) else Zone(geom=v) for k, v in zones.items()}, lines)

    def union(self, names) -> Zone | None:
        if not names:
            return None
        key = tuple(names)
        if key not in self._unions:
            self._unions[key] = Zone.union([self.zones[n] for n in names])
        return self._unions[key]


def _cell_span(x: float, y: float, r: float):
    """Grid cells (i0, i1, j0, j1) meeting the box around the disc, widened by 1 cm (so float
    rounding at a cell edge never loses a neighbour); None when not finite."""
    try:
        return (math.floor((x - r - 1.0) / CELL_CM), math.floor((x + r + 1.0) / CELL_CM),
                math.floor((y - r - 1.0) / CELL_CM), math.floor((y + r + 1.0) / CELL_CM))
    except (OverflowError, ValueError):
        return None


class _Holder:
    """A shape given to :meth:`Occupancy.add` as geometry (landmarks)."""

    __slots__ = ("geom",)

    def __init__(self, geom):
        self.geom = geom


class Occupancy:
    """What already stands: shapes with a clearance pad (discs are points padded by their radius),
    each also bounded by a disc (x, y, r) so most pairs are cleared without exact geometry.

    Per object: its bounding disc (the "near" test that picks which pairs shapely would measure),
    its bounding box and a disc inside it (cheap bounds that settle most near pairs: see the
    module docstring), and its shape, built only when a close call needs shapely. Objects sit in
    a grid of ``CELL_CM`` cells, so a spot is tested only against the objects around it (a
    forest places 140 objects, each tried against all before it)."""

    def __init__(self, keep_out=()):
        self.keep_out = [tuple(map(float, k)) for k in keep_out]    # (x, y, r): always disc-vs-disc
        self.n = 0
        self._disc: list[tuple[float, float, float]] = []     # bounding disc of each shape
        self._pad: list[float] = []
        self._group: list[int] = []       # which clutter group placed it (-1: a landmark)
        self._box: list[tuple[float, float, float, float]] = []
        self._inner: list[tuple[float, float, float] | None] = []    # a disc inside the shape (x, y, r)
        self._fill: list[float] = []      # how far a point of the box can be from the shape
        self._obb: list = []              # a polygon's oriented box (Candidate.obb), else None
        self._core: list = []             # the oriented box of a polygon's core (Candidate.core), else None
        self._shape: list = []            # has .geom (a Candidate builds its geometry on demand)
        self._cells: dict[tuple[int, int], list[int]] = {}
        self._big: list[int] = []

    def add(self, geom, pad: float, x: float, y: float, radius: float, group: int = -1) -> None:
        """Add a shapely geometry (a Point padded by ``pad``, or a polygon) bounded by the disc
        ``radius`` around (x, y)."""
        bounds = tuple(float(v) for v in shapely.bounds(geom))
        point = shapely.get_type_id(geom) == 0      # a point is its own box and disc
        self._add(_Holder(geom), pad, x, y, radius, group, bounds, (bounds[0], bounds[1], 0.0) if point else None,
                  0.0 if point else math.inf, None, None)

    def add_candidate(self, c: "Candidate", radius: float, group: int = -1) -> None:
        """Add an accepted spot (its polygon is built only if a later close call needs it)."""
        self._add(c, c.pad, c.x, c.y, radius, group, c.box, c.inner, c.fill, c.obb, c.core)

    def _add(self, shape, pad, x, y, radius, group, bbox, inner, fill, obb, core) -> None:
        i = self.n
        x, y, radius = float(x), float(y), float(radius)
        self._disc.append((x, y, radius))
        self._pad.append(float(pad))
        self._group.append(group)
        self._box.append(bbox)
        self._inner.append(inner)
        self._fill.append(fill)
        self._obb.append(obb)
        self._core.append(core)
        self._shape.append(shape)
        self.n += 1
        cells = _cell_span(x, y, radius)
        if cells is None or (cells[1] - cells[0] + 1) * (cells[3] - cells[2] + 1) > _MAX_CELLS:
            self._big.append(i)
        else:
            i0, i1, j0, j1 = cells
            for ci in range(i0, i1 + 1):
                for cj in range(j0, j1 + 1):
                    self._cells.setdefault((ci, cj), []).append(i)

    def _around(self, x: float, y: float, reach: float):
        """Indices of the objects whose bounding disc may come within ``reach`` of (x, y): those
        in the grid cells the reach meets, or all of them when that is fewer lookups."""
        cells = _cell_span(x, y, reach)
        if cells is None:
            return range(self.n)
        i0, i1, j0, j1 = cells
        if (i1 - i0 + 1) * (j1 - j0 + 1) > self.n:
            return range(self.n)
        found = set(self._big)
        get = self._cells.get
        for ci in range(i0, i1 + 1):
            for cj in range(j0, j1 + 1):
                found.update(get((ci, cj), ()))
        return found

    def clear(self, c: "Candidate", radius: float, gap: float, overlap_group: int | None = None) -> bool:
        """True when the candidate's shape keeps ``gap`` from everything placed (except the
        objects of ``overlap_group``, which may overlap it) and its disc (``radius`` around its
        centre) keeps clear of every keep-out disc.

        The rule, as it always was: every object whose bounding disc comes closer than ``gap`` to
        the candidate's (``hypot - r - radius < gap``, numpy's hypot) is measured with shapely,
        and the spot is clear when each such distance, less both pads, is ``>= gap`` and ``> 0``.
        Here each such pair is first tried with bounds (``_pair``); shapely measures only the
        pairs they leave open. The answer is the same boolean."""
        x, y = c.x, c.y
        for kx, ky, kr in self.keep_out:
            if math.hypot(x - kx, y - ky) < kr + radius + gap:
                return False
        if not self.n:
            return True
        open_pairs = []
        for i in self._around(x, y, radius + gap):
            if overlap_group is not None and self._group[i] == overlap_group:
                continue
            xi, yi, ri = self._disc[i]
            dx, dy = xi - x, yi - y
            s = 1e-9 * (1000.0 + abs(x) + abs(y) + ri + radius + gap)     # _slack, inline (hot)
            e = math.sqrt(dx * dx + dy * dy) - ri - radius
            if e >= gap + s:
                continue                    # bounding discs apart: not near
            if e > gap - s and not float(np.hypot(dx, dy)) - ri - radius < gap:
                continue                    # a close call on nearness: numpy's answer, as before
            verdict = self._pair(c, i, gap, s)
            if verdict is False:
                return False
            if verdict is None:
                open_pairs.append(i)
        if not open_pairs:
            return True
        geoms = np.empty(len(open_pairs), dtype=object)
        geoms[:] = [self._shape[i].geom for i in open_pairs]
        pads = np.array([self._pad[i] for i in open_pairs])
        exact = shapely.distance(c.geom, geoms) - pads - c.pad
        return bool(np.all((exact >= gap) & (exact > 0)))   # > 0: polygons that overlap are 0 apart

    def _pair(self, c: "Candidate", i: int, gap: float, s: float) -> bool | None:
        """Whether the candidate keeps ``gap`` from object ``i`` when bounds settle it by more than
        the slack ``s``: True (certainly clear), False (certainly not), None (ask shapely).

        Clear needs ``d - pads >= gap`` and ``> 0`` for the shapes' distance ``d``. Their boxes
        are no closer than ``d`` (a lower bound). Upper bounds: discs inside both (for a point,
        the point itself; a polygon whose origin is outside its footprint has none), and the
        boxes' closest points moved onto the shapes (box distance plus both fills). Only the
        ``>= gap`` half is ever declared failed this way, so "overlapping shapes are 0 apart"
        (the ``> 0`` half) is left to shapely when gap and pads are 0."""
        pads = self._pad[i] + c.pad
        b, cb = self._box[i], c.box
        lb = math.hypot(max(b[0] - cb[2], cb[0] - b[2], 0.0), max(b[1] - cb[3], cb[1] - b[3], 0.0))
        if lb - s >= pads + gap and lb - s > pads:
            return True
        ub = lb + self._fill[i] + c.fill
        inner, cin = self._inner[i], c.inner
        if inner is not None and cin is not None:
            ub = min(ub, max(0.0, math.hypot(inner[0] - cin[0], inner[1] - cin[1]) - inner[2] - cin[2]))
        if ub + s < pads + gap:
            return False
        oi, oc = self._obb[i], c.obb     # oriented boxes: far tighter than axis-aligned ones for a
        if oi is None and oc is None:    # turned, elongated footprint (the desert's dunes)
            return None
        point = None
        if oi is not None and oc is not None:
            lb = max(lb, _obb_gap(oi, oc))
        elif oc is None and c.is_disc:   # the candidate's point against the object's oriented box
            point, o, core = (c.x, c.y), oi, self._core[i]
        elif oi is None and inner is not None and inner[2] == 0.0:   # the object is a point
            point, o, core = (inner[0], inner[1]), oc, c.core
        if point is not None:
            d = _obb_point(o, *point)
            lb, ub = max(lb, d), min(ub, d + o[8])
        if lb - s >= pads + gap and lb - s > pads:
            return True
        if ub + s < pads + gap:
            return False
        # cores (boxes inside the shapes): a point's distance to one, or two that overlap
        ki, kc = self._core[i], c.core
        if point is not None and core is not None:
            ub = min(ub, _obb_point(core, *point))
        elif ki is not None and kc is not None and _obb_gap(ki, kc, signed=True) < -s:
            ub = 0.0
        if ub + s < pads + gap:
            return False
        return None


def _obb_point(o, px: float, py: float) -> float:
    """Distance from a point to an oriented box (Candidate.obb)."""
    dx, dy = px - o[0], py - o[1]
    u, v = dx * o[2] + dy * o[3], -dx * o[3] + dy * o[2]      # the point in the box's own axes
    return math.hypot(max(o[4] - u, 0.0, u - o[6]), max(o[5] - v, 0.0, v - o[7]))


def _obb_gap(a, b, signed: bool = False) -> float:
    """A lower bound on the distance between two oriented boxes: their largest gap along the four
    edge normals (projection never lengthens a distance; 0 when every axis overlaps). ``signed``:
    the largest gap even when negative, i.e. when every axis overlaps (the boxes then overlap,
    by the separating axis theorem)."""
    ca = (a[0] + a[2] * (a[4] + a[6]) / 2 - a[3] * (a[5] + a[7]) / 2,     # centres in world
          a[1] + a[3] * (a[4] + a[6]) / 2 + a[2] * (a[5] + a[7]) / 2)
    cb = (b[0] + b[2] * (b[4] + b[6]) / 2 - b[3] * (b[5] + b[7]) / 2,
          b[1] + b[3] * (b[4] + b[6]) / 2 + b[2] * (b[5] + b[7]) / 2)
    ha, hb = ((a[6] - a[4]) / 2, (a[7] - a[5]) / 2), ((b[6] - b[4]) / 2, (b[7] - b[5]) / 2)
    axes_a, axes_b = ((a[2], a[3]), (-a[3], a[2])), ((b[2], b[3]), (-b[3], b[2]))
    dx, dy = cb[0] - ca[0], cb[1] - ca[1]
    best = -math.inf if signed else 0.0
    for nx, ny in axes_a + axes_b:
        ra = ha[0] * abs(axes_a[0][0] * nx + axes_a[0][1] * ny) + ha[1] * abs(axes_a[1][0] * nx + axes_a[1][1] * ny)
        rb = hb[0] * abs(axes_b[0][0] * nx + axes_b[0][1] * ny) + hb[1] * abs(axes_b[1][0] * nx + axes_b[1][1] * ny)
        best = max(best, abs(dx * nx + dy * ny) - ra - rb)
    return best


class Candidate:
    """A spot for one object: centre, yaw, and its shape (a shapely Point padded by ``pad`` for a
    disc, else a Polygon), built only when a check needs it (most candidates are decided by
    bounds alone). ``box``: a box around the shape, ``fill``: how far any point of that box can
    be from the shape (0 for a point; small for a box-like footprint), ``inner``: a disc
    (x, y, r) inside the shape, or None."""

    __slots__ = ("x", "y", "yaw", "pad", "inner", "is_disc", "_geom", "_make", "_box", "_fill", "_obb", "_core",
                 "_shapes")

    def __init__(self, x: float, y: float, yaw: float, pad: float, geom=None, make=None, inner=None, shapes=None):
        self.x, self.y, self.yaw, self.pad, self._geom, self._make = x, y, yaw, pad, geom, make
        self._shapes = shapes       # a polygon: its object's _Footprints (turned at ``yaw`` on demand)
        self.is_disc = shapes is None   # else a disc: its shape the point (x, y) padded by ``pad``
        if shapes is None:
            self.inner, self._box, self._fill, self._obb, self._core = (x, y, 0.0), (x, y, x, y), 0.0, None, None
        else:
            self.inner, self._box, self._fill, self._obb, self._core = inner, None, None, None, None

    @property
    def geom(self):
        if self._geom is None:
            if self._shapes is not None:
                self._geom = shapely.polygons(self._shapes.at(self.yaw) + (self.x, self.y))
            else:
                self._geom = self._make() if self._make is not None else Point(self.x, self.y)
        return self._geom

    @property
    def box(self) -> tuple[float, float, float, float]:
        if self._box is None:
            lx0, ly0, lx1, ly1, self._fill, c, s = self._shapes.frame(self.yaw)
            self._box = (lx0 + self.x, ly0 + self.y, lx1 + self.x, ly1 + self.y)
            shapes = self._shapes
            ax0, ay0, ax1, ay1 = shapes.asset.box
            k = shapes.scale
            self._obb = (self.x, self.y, c, s, ax0 * k, ay0 * k, ax1 * k, ay1 * k, shapes.asset.fill * k)
            core = shapes.asset.core
            if core is not None:
                self._core = (self.x, self.y, c, s, core[0] * k, core[1] * k, core[2] * k, core[3] * k, 0.0)
        return self._box

    @property
    def obb(self):
        """A polygon's oriented box: (x, y, cos, sin, x0, y0, x1, y1, fill), its local box scaled
        (x0..x1 along its turned X axis, y0..y1 along Y) and that box's fill; None for a disc."""
        if self._obb is None and self._shapes is not None:
            self.box
        return self._obb

    @property
    def core(self):
        """The oriented box of the asset's core (a box inside the footprint), or None."""
        if self._obb is None and self._shapes is not None:
            self.box
        return self._core

    @property
    def fill(self) -> float:
        if self._fill is None:
            self.box
        return self._fill


def _turned(footprint, scale: float, yaw_deg: float) -> np.ndarray:
    """The asset's local footprint scaled and turned by UE yaw (+yaw turns X towards Y)."""
    c, s = math.cos(math.radians(yaw_deg)), math.sin(math.radians(yaw_deg))
    turn = np.array([[c, s], [-s, c]]) * scale           # row vectors: (fx, fy) @ turn
    return np.asarray(footprint, dtype=float) @ turn


def footprint_polygon(footprint: np.ndarray, scale: float, x: float, y: float, yaw_deg: float) -> Polygon:
    """The asset's local footprint, scaled, turned by UE yaw (+yaw turns X towards Y), moved to x, y."""
    return shapely.polygons(_turned(footprint, scale, yaw_deg) + (x, y))


class _Footprints:
    """One object's footprint at its scale, per yaw it is tried at (a row of buildings faces the
    street: one or two yaws for all forty tries): the turned footprint (numpy, for its polygon:
    the same numbers as :func:`footprint_polygon`) and, in plain floats, a box around it and that
    box's ``fill`` (see :class:`Candidate`), from the asset's local box turned."""

    __slots__ = ("asset", "footprint", "scale", "front", "_turns", "_frames")

    def __init__(self, asset: "_Asset", scale: float):
        self.asset, self.footprint, self.scale, self.front = asset, asset.footprint, scale, asset.front
        self._turns, self._frames = {}, {}

    def at(self, yaw: float) -> np.ndarray:
        key = (yaw, math.copysign(1.0, yaw))    # -0.0 and 0.0 turn to differently signed zeros
        if key not in self._turns:
            self._turns[key] = _turned(self.footprint, self.scale, yaw)
        return self._turns[key]

    def frame(self, yaw: float) -> tuple:
        """(x0, y0, x1, y1, fill, cos, sin) around the origin: the bounding box of the turned
        local box; how far its corners can be from the footprint (the corners of the bounding
        box of a w x h box turned by θ are max(w, h)/2 |sin 2θ| from it, 0 at multiples of 90°,
        plus the local box's own fill); the turn."""
        if yaw not in self._frames:
            r = math.radians(yaw)
            c, s = math.cos(r), math.sin(r)
            ax0, ay0, ax1, ay1 = self.asset.box
            k = self.scale
            x0, x1, y0, y1 = ax0 * k, ax1 * k, ay0 * k, ay1 * k
            # corners (fx, fy) turn to (fx c - fy s, fx s + fy c): extremes per axis
            bx0 = min(x0 * c, x1 * c) + min(-y0 * s, -y1 * s)
            bx1 = max(x0 * c, x1 * c) + max(-y0 * s, -y1 * s)
            by0 = min(x0 * s, x1 * s) + min(y0 * c, y1 * c)
            by1 = max(x0 * s, x1 * s) + max(y0 * c, y1 * c)
            far = max(x1 - x0, y1 - y0) * abs(c * s)
            self._frames[yaw] = (bx0, by0, bx1, by1, far + self.asset.fill * k, c, s)
        return self._frames[yaw]


def ring_candidate(rng: np.random.Generator, centre, ring, radius: float) -> Candidate:
    """A spot uniform over the ring's area, random yaw; the object is its footprint disc."""
    d = math.sqrt(rng.uniform(ring[0] ** 2, ring[1] ** 2))
    a = rng.uniform(0, 2 * math.pi)
    x, y = centre[0] + d * math.cos(a), centre[1] + d * math.sin(a)
    yaw = float(rng.uniform(-180, 180))
    return Candidate(x, y, yaw, radius)     # its geometry, Point(x, y), only if shapely is asked


class Line:
    """Segments ``[x0, y0, x1, y1]`` (cm); a point drawn uniformly by length."""

    def __init__(self, segments):
        self.seg = np.asarray(segments, dtype=float).reshape(-1, 4)
        d = self.seg[:, 2:] - self.seg[:, :2]
        self.length = np.hypot(d[:, 0], d[:, 1])
        if np.any(self.length <= 0):
            raise ValueError("a line segment has zero length")
        self.dir = d / self.length[:, None]
        self.side = np.stack([-self.dir[:, 1], self.dir[:, 0]], axis=1)    # +90°: from +X towards +Y
        self.cum = np.cumsum(self.length)
        # the same numbers as plain floats: draw() runs ~10 times per object placed, and numpy
        # on two-element vectors costs more than the arithmetic
        self._cum = self.cum.tolist()
        self._rows = list(zip(map(tuple, self.seg[:, :2].tolist()), map(tuple, self.dir.tolist()),
                              map(tuple, self.side.tolist())))

    def draw(self, rng: np.random.Generator):
        """(point, direction, side) at a uniform position along the whole line, as (x, y) tuples
        (the same float operations, element by element, as the vector form)."""
        cum = self._cum
        t = rng.uniform(0, cum[-1])
        i = min(bisect.bisect_right(cum, t), len(cum) - 1)
        along = t - (cum[i - 1] if i else 0.0)
        (sx, sy), d, n = self._rows[i]
        return (sx + along * d[0], sy + along * d[1]), d, n


class _Asset:
    """What placement needs of one asset, computed once per library: its footprint, the radius
    around its origin, its front (largest local X), the radius of a disc around its origin
    inside the footprint (0 when the origin is not inside it), its local bounding box and that
    box's fill: the farthest a point of the box is from the footprint (the farthest corner, for
    a convex footprint; infinite, i.e. unused, for any other), and its core: a box inside a
    convex footprint (its bounding box shrunk about its centre until inside), or None."""

    __slots__ = ("footprint", "radius", "front", "inner", "box", "fill", "core")

    def __init__(self, footprint: np.ndarray):
        self.footprint = footprint
        self.radius = float(np.max(np.hypot(footprint[:, 0], footprint[:, 1])))
        self.front = float(np.max(footprint[:, 0]))
        lo, hi = np.min(footprint, axis=0), np.max(footprint, axis=0)
        self.box = (float(lo[0]), float(lo[1]), float(hi[0]), float(hi[1]))
        self.inner, self.fill, self.core = 0.0, math.inf, None
        if len(footprint) >= 3:
            poly = shapely.polygons(np.asarray(footprint, dtype=float))
            if poly.is_valid and not poly.is_empty:
                origin = Point(0.0, 0.0)
                if poly.contains(origin):
                    self.inner = float(poly.exterior.distance(origin))
                if shapely.equals(poly, poly.convex_hull):
                    x0, y0, x1, y1 = self.box
                    self.fill = max(float(poly.distance(Point(cx, cy))) for cx in (x0, x1) for cy in (y0, y1))
                    mx, my, hx, hy = (x0 + x1) / 2, (y0 + y1) / 2, (x1 - x0) / 2, (y1 - y0) / 2
                    for t in (0.95, 0.9, 0.85, 0.8, 0.75, 0.7, 0.65, 0.6, 0.55, 0.5):   # a box inside it
                        core = (mx - t * hx, my - t * hy, mx + t * hx, my + t * hy)
                        if hx > 0 and hy > 0 and poly.contains(box(*core)):
                            self.core = core
                            break


_LIBRARIES: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


_last = (lambda: None, {})      # (weak reference to the library asked for last, its memo): one tuple, swapped whole


def _library_memo(lib) -> dict:
    """Per-library memo (assets, variants): a library does not change once loaded."""
    global _last
    ref, memo = _last
    if ref() is lib:
        return memo
    try:
        memo = _LIBRARIES.setdefault(lib, {})
        _last = (weakref.ref(lib), memo)
    except TypeError:       # not weak-referenceable: remember nothing
        return {}
    return memo


def _asset(lib, asset_id: str, memo: dict | None = None) -> _Asset:
    memo = _library_memo(lib) if memo is None else memo
    key = ("asset", asset_id)
    if key not in memo:
        memo[key] = _Asset(np.asarray(lib.footprint(asset_id)))
    return memo[key]


def line_candidate(rng: np.random.Generator, line: Line, offset_cm: float, facing: str,
                   footprint, scale: float, centre, ring, inner: float = 0.0) -> Candidate | None:
    """A spot along ``line`` on its side; the object is its rotated footprint polygon.
    None when the spot lies outside ``ring`` around ``centre`` (no polygon is built then).
    ``footprint``: the asset's local footprint, or its :class:`_Footprints` (turned once per
    yaw); ``inner``: radius of a disc around the origin inside the (unscaled) footprint."""
    shapes = footprint if isinstance(footprint, _Footprints) else _Footprints(_Asset(np.asarray(footprint)), scale)
    p, d, n = line.draw(rng)
    if facing == "line":            # forward (+X) back towards the line, front edge at the offset
        yaw = math.degrees(math.atan2(-n[1], -n[0]))
        front = shapes.front * scale
        k = offset_cm + front
        x, y = p[0] + n[0] * k, p[1] + n[1] * k
    elif facing == "along":
        yaw = math.degrees(math.atan2(d[1], d[0]))
        x, y = p[0] + n[0] * offset_cm, p[1] + n[1] * offset_cm
    else:                           # random
        yaw = float(rng.uniform(-180, 180))
        x, y = p[0] + n[0] * offset_cm, p[1] + n[1] * offset_cm
    if not ring[0] <= math.hypot(x - centre[0], y - centre[1]) <= ring[1]:
        return None
    return Candidate(x, y, yaw, 0.0, inner=(x, y, inner * scale) if inner > 0 else None, shapes=shapes)


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
    s = _slack(x, y, radius, c.pad)
    dc = zone.point_distance(x, y)
    if dc > radius + s:
        return False
    if dc >= radius - s and not shapely.distance(Point(x, y), zone.geom) <= radius:
        return False
    if c.is_disc:                   # the shape is the centre: its distance is dc
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
        s = _slack(x, y, pad)
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


# --- placing one clutter group (moved from scenarios/environments.py) -----------------------
def footprint_radius(lib, asset_id: str) -> float:
    """Footprint radius (cm) around the asset origin (computed once per library and asset)."""
    return _asset(lib, asset_id).radius


def ground_z_under(ground, x: float, y: float, r: float) -> float:
    """Lowest terrain height under the footprint, so the base never floats on a slope."""
    if getattr(ground, "relief_amplitude", None) == 0:    # flat: Ground.height is 0 everywhere
        return 0.0
    xs = np.array([x, x + r, x - r, x, x])
    ys = np.array([y, y, y, y + r, y - r])
    return float(ground.height(xs, ys).min())      # ndarray.min: np.min's reduction, less wrapping


def pick_variants(lib, cls: str, tags) -> list[str]:
    """Active asset ids of ``cls``, narrowed to those with any of ``tags`` when some have them.
    ``cls`` may also be an asset id: the environment pins that asset (``[cls]``)."""
    if cls in set(lib.ids()) and cls not in set(lib.classes()):
        return [cls]
    infos = lib.by_class(cls)
    if not infos:
        raise ConfigError(f"class {cls!r} has no asset in the library")
    styled = [i.id for i in infos if set(i.tags) & set(tags)]
    return styled or [i.id for i in infos]


def _variants(lib, cls: str, tags, memo: dict) -> list[str]:
    """pick_variants, remembered per library (asked for every object placed)."""
    key = ("variants", cls, tuple(tags))
    if key not in memo:
        memo[key] = pick_variants(lib, cls, tags)
    return memo[key]


def place_group(group: "ClutterGroup", rng: np.random.Generator, lib, occupied: Occupancy, centre, style=(),
                geometry=({}, {}), index: int = 0):
    """Yield (asset_id, x, y, yaw, scale) for one group; adds each object to ``occupied``.
    ``geometry``: the environment's :class:`Site` (or a ``(zones, lines)`` pair)."""
    site = Site.of(geometry)
    avoid, within = site.union(group.avoid), site.union(group.within)
    line = site.lines[group.along] if group.along else None
    memo = _library_memo(lib)
    lo, hi = (group.count, group.count) if isinstance(group.count, int) else group.count
    n = int(rng.integers(lo, hi + 1))
    for _ in range(n):
        cls = group.classes[int(rng.integers(len(group.classes)))]
        ids = _variants(lib, cls, [group.prefer_tag] if group.prefer_tag else style, memo)
        asset_id = ids[int(rng.integers(len(ids)))]
        s = float(rng.uniform(*group.scale))
        asset = _asset(lib, asset_id, memo)
        rad = asset.radius * s
        shapes = _Footprints(asset, s) if line is not None else None
        for _try in range(TRIES):
            if line is None:
                c = ring_candidate(rng, centre, group.ring_cm, rad)
            else:
                c = line_candidate(rng, line, group.offset_cm, group.facing, shapes, s, centre, group.ring_cm,
                                   asset.inner)
                if c is None:
                    continue
            # both tests are pure (no draws), so the cheaper zone test goes first: same answer
            if in_zones(c, rad, avoid, within) and \
                    occupied.clear(c, rad, group.gap_cm, index if group.overlap else None):
                occupied.add_candidate(c, rad, index)
                yield asset_id, c.x, c.y, c.yaw, s
                break
