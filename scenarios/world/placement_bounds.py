"""Clutter objects' shapes as placement tests them, and the conservative bounds around them.

Placement (scenarios/world/placement.py) must decide exactly what shapely decides: is a spot ``gap``
clear of everything placed (scenarios/world/occupancy.py), does it respect its zones (scenarios/world/zones.py).
It asks ~350 times per city scene, and building a polygon and measuring it every time was most of
the cost. So each shape carries cheap bounds, in plain floats, that settle the certain cases:

* "certainly apart" (lower bounds on a distance): its axis-aligned ``box``; its oriented box
  (``obb``: the asset's local box turned with it; two are compared along their four edge normals,
  :func:`obb_gap`; a point is measured in the box's own axes, :func:`obb_point`);
* "certainly too close" (upper bounds): a disc inside the footprint around its origin
  (``inner``); the box's ``fill``, the farthest a point of the box is from the footprint (convex
  footprints only); a ``core`` box inside a convex footprint.

A bound decides only when it clears the threshold by :func:`slack` (a billionth of the
magnitudes involved, far above float error); closer calls go to shapely, so the outcome is
byte-identical to asking shapely every time (tests/scenarios/test_placement.py checks it against
the placement before the bounds, tests/scenarios/reference_placement.py).

Here: one asset's footprint and bounds (:class:`AssetFootprint`, computed once per library), one
object's at its scale and per yaw (:class:`ScaledFootprint`), a spot (:class:`Candidate`, whose
shapely geometry is built only when a close call needs it) and the box maths. Kept apart from the
placement rules so the geometry that must stay conservative can be read (and tested) on its own.
"""

from __future__ import annotations

import math

import numpy as np
import shapely
from shapely.geometry import Point, Polygon, box


def slack(*magnitudes: float) -> float:
    """How far a cheap bound must clear a threshold before it decides instead of shapely: a
    billionth of the magnitudes involved (coordinates, radii, gaps; float error is ~1e-16 of
    them) plus a floor, so only genuinely close calls (near-tangent shapes) reach shapely."""
    return 1e-9 * (1000.0 + sum(abs(m) for m in magnitudes))


class AssetFootprint:
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
                    for t in (0.95, 0.9, 0.85, 0.8, 0.75, 0.7, 0.65, 0.6, 0.55, 0.5):  # a box inside it
                        core = (mx - t * hx, my - t * hy, mx + t * hx, my + t * hy)
                        if hx > 0 and hy > 0 and poly.contains(box(*core)):
                            self.core = core
                            break


def _turned(footprint, scale: float, yaw_deg: float) -> np.ndarray:
    """The asset's local footprint scaled and turned by UE yaw (+yaw turns X towards Y)."""
    c, s = math.cos(math.radians(yaw_deg)), math.sin(math.radians(yaw_deg))
    turn = np.array([[c, s], [-s, c]]) * scale  # row vectors: (fx, fy) @ turn
    return np.asarray(footprint, dtype=float) @ turn


def footprint_polygon(footprint: np.ndarray, scale: float, x: float, y: float, yaw_deg: float) -> Polygon:
    """The asset's local footprint, scaled, turned by UE yaw (+yaw turns X towards Y), moved to x, y."""
    return shapely.polygons(_turned(footprint, scale, yaw_deg) + (x, y))


class ScaledFootprint:
    """One object's footprint at its scale, per yaw it is tried at (a row of buildings faces the
    street: one or two yaws for all forty tries): the turned footprint (numpy, for its polygon:
    the same numbers as :func:`footprint_polygon`) and, in plain floats, a box around it and that
    box's ``fill`` (see :class:`Candidate`), from the asset's local box turned."""

    __slots__ = ("asset", "footprint", "scale", "front", "_turns", "_frames")

    def __init__(self, asset: AssetFootprint, scale: float):
        self.asset, self.footprint, self.scale, self.front = asset, asset.footprint, scale, asset.front
        self._turns, self._frames = {}, {}

    def at(self, yaw: float) -> np.ndarray:
        key = (yaw, math.copysign(1.0, yaw))  # -0.0 and 0.0 turn to differently signed zeros
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


class Candidate:
    """A spot for one object: centre, yaw, and its shape (a shapely Point padded by ``pad`` for a
    disc, else a Polygon), built only when a check needs it (most candidates are decided by
    bounds alone). ``box``: a box around the shape, ``fill``: how far any point of that box can
    be from the shape (0 for a point; small for a box-like footprint), ``inner``: a disc
    (x, y, r) inside the shape, or None."""

    __slots__ = ("x", "y", "yaw", "pad", "inner", "is_disc", "_geom", "_make", "_box", "_fill", "_obb", "_core", "_shapes")

    def __init__(self, x: float, y: float, yaw: float, pad: float, geom=None, make=None, inner=None, shapes=None):
        self.x, self.y, self.yaw, self.pad, self._geom, self._make = x, y, yaw, pad, geom, make
        self._shapes = shapes  # a polygon: its object's ScaledFootprint (turned at ``yaw`` on demand)
        self.is_disc = shapes is None  # else a disc: its shape the point (x, y) padded by ``pad``
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


def obb_point(o, px: float, py: float) -> float:
    """Distance from a point to an oriented box (Candidate.obb)."""
    dx, dy = px - o[0], py - o[1]
    u, v = dx * o[2] + dy * o[3], -dx * o[3] + dy * o[2]  # the point in the box's own axes
    return math.hypot(max(o[4] - u, 0.0, u - o[6]), max(o[5] - v, 0.0, v - o[7]))


def obb_gap(a, b, signed: bool = False) -> float:
    """A lower bound on the distance between two oriented boxes: their largest gap along the four
    edge normals (projection never lengthens a distance; 0 when every axis overlaps). ``signed``:
    the largest gap even when negative, i.e. when every axis overlaps (the boxes then overlap,
    by the separating axis theorem)."""
    ca = (
        a[0] + a[2] * (a[4] + a[6]) / 2 - a[3] * (a[5] + a[7]) / 2,  # centres in world
        a[1] + a[3] * (a[4] + a[6]) / 2 + a[2] * (a[5] + a[7]) / 2,
    )
    cb = (b[0] + b[2] * (b[4] + b[6]) / 2 - b[3] * (b[5] + b[7]) / 2, b[1] + b[3] * (b[4] + b[6]) / 2 + b[2] * (b[5] + b[7]) / 2)
    ha, hb = ((a[6] - a[4]) / 2, (a[7] - a[5]) / 2), ((b[6] - b[4]) / 2, (b[7] - b[5]) / 2)
    axes_a, axes_b = ((a[2], a[3]), (-a[3], a[2])), ((b[2], b[3]), (-b[3], b[2]))
    dx, dy = cb[0] - ca[0], cb[1] - ca[1]
    best = -math.inf if signed else 0.0
    for nx, ny in axes_a + axes_b:
        ra = ha[0] * abs(axes_a[0][0] * nx + axes_a[0][1] * ny) + ha[1] * abs(axes_a[1][0] * nx + axes_a[1][1] * ny)
        rb = hb[0] * abs(axes_b[0][0] * nx + axes_b[0][1] * ny) + hb[1] * abs(axes_b[1][0] * nx + axes_b[1][1] * ny)
        best = max(best, abs(dx * nx + dy * ny) - ra - rb)
    return best
