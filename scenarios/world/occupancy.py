"""What already stands around a scene being cluttered, and whether a new spot keeps its gap from it.

:class:`Occupancy` holds the objects placed so far (clutter spots, landmarks given as geometry)
and the keep-out discs (the labelled objects, the camera), and answers :meth:`Occupancy.clear`
with the rule placement always had: every object whose bounding disc comes nearer than ``gap``
(numpy's hypot) is measured with shapely, and the spot is clear when each distance, less both
pads, is ``>= gap`` and ``> 0``.

It is its own module because it is placement's hot loop (a forest places 140 objects, each tried
up to 40 times against all before it) and has its own machinery for that: a grid of
``CELL_CM`` cells, so a spot meets only the objects around it, and per near pair the bounds of
scenarios/world/placement_bounds.py (:meth:`Occupancy._pair`), so shapely measures only the close calls,
in one vectorised call. The boolean is the one shapely alone gives.
"""

from __future__ import annotations

import math

import numpy as np
import shapely

from sceneforge.scenarios.world.placement_bounds import Candidate, obb_gap, obb_point

CELL_CM = 1000.0  # Occupancy's grid cell: a spot is tested only against objects in the cells it reaches
_MAX_CELLS = 256  # an object (or a query) spanning more cells than this is kept in (scans) a plain list


def _cell_span(x: float, y: float, r: float):
    """Grid cells (i0, i1, j0, j1) meeting the box around the disc, widened by 1 cm (so float
    rounding at a cell edge never loses a neighbour); None when not finite."""
    try:
        return (
            math.floor((x - r - 1.0) / CELL_CM),
            math.floor((x + r + 1.0) / CELL_CM),
            math.floor((y - r - 1.0) / CELL_CM),
            math.floor((y + r + 1.0) / CELL_CM),
        )
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
    its bounding box and a disc inside it (cheap bounds that settle most near pairs: see
    scenarios/world/placement_bounds.py), and its shape, built only when a close call needs shapely.
    Objects sit in a grid of ``CELL_CM`` cells, so a spot is tested only against the objects
    around it (a forest places 140 objects, each tried against all before it)."""

    def __init__(self, keep_out=()):
        self.keep_out = [tuple(map(float, k)) for k in keep_out]  # (x, y, r): always disc-vs-disc
        self.n = 0
        self._disc: list[tuple[float, float, float]] = []  # bounding disc of each shape
        self._pad: list[float] = []
        self._group: list[int] = []  # which clutter group placed it (-1: a landmark)
        self._box: list[tuple[float, float, float, float]] = []
        self._inner: list[tuple[float, float, float] | None] = []  # a disc inside the shape (x, y, r)
        self._fill: list[float] = []  # how far a point of the box can be from the shape
        self._obb: list = []  # a polygon's oriented box (Candidate.obb), else None
        self._core: list = []  # the oriented box of a polygon's core (Candidate.core), else None
        self._shape: list = []  # has .geom (a Candidate builds its geometry on demand)
        self._cells: dict[tuple[int, int], list[int]] = {}
        self._big: list[int] = []

    def add(self, geom, pad: float, x: float, y: float, radius: float, group: int = -1) -> None:
        """Add a shapely geometry (a Point padded by ``pad``, or a polygon) bounded by the disc
        ``radius`` around (x, y)."""
        bounds = tuple(float(v) for v in shapely.bounds(geom))
        point = shapely.get_type_id(geom) == 0  # a point is its own box and disc
        self._add(
            _Holder(geom),
            pad,
            x,
            y,
            radius,
            group,
            bounds,
            (bounds[0], bounds[1], 0.0) if point else None,
            0.0 if point else math.inf,
            None,
            None,
        )

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
            s = 1e-9 * (1000.0 + abs(x) + abs(y) + ri + radius + gap)  # slack, inline (hot)
            e = math.sqrt(dx * dx + dy * dy) - ri - radius
            if e >= gap + s:
                continue  # bounding discs apart: not near
            if e > gap - s and not float(np.hypot(dx, dy)) - ri - radius < gap:
                continue  # a close call on nearness: numpy's answer, as before
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
        return bool(np.all((exact >= gap) & (exact > 0)))  # > 0: polygons that overlap are 0 apart

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
        oi, oc = self._obb[i], c.obb  # oriented boxes: far tighter than axis-aligned ones for a
        if oi is None and oc is None:  # turned, elongated footprint (the desert's dunes)
            return None
        point = None
        if oi is not None and oc is not None:
            lb = max(lb, obb_gap(oi, oc))
        elif oc is None and c.is_disc:  # the candidate's point against the object's oriented box
            point, o, core = (c.x, c.y), oi, self._core[i]
        elif oi is None and inner is not None and inner[2] == 0.0:  # the object is a point
            point, o, core = (inner[0], inner[1]), oc, c.core
        if point is not None:
            d = obb_point(o, *point)
            lb, ub = max(lb, d), min(ub, d + o[8])
        if lb - s >= pads + gap and lb - s > pads:
            return True
        if ub + s < pads + gap:
            return False
        # cores (boxes inside the shapes): a point's distance to one, or two that overlap
        ki, kc = self._core[i], c.core
        if point is not None and core is not None:
            ub = min(ub, obb_point(core, *point))
        elif ki is not None and kc is not None and obb_gap(ki, kc, signed=True) < -s:
            ub = 0.0
        if ub + s < pads + gap:
            return False
        return None
