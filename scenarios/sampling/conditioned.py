"""Constructive (label-conditioned) proposals: draw observers and objects only where they can pass.

Rejection sampling draws an observer from its prior and throws it away unless the SpaRRTa label
is the one the sample must have; with 60°-wide label sectors and wide priors most candidates
are thrown away (hundreds per sample in the allocentric task). Here the prior is sampled
*restricted* to the label's region instead, so the accepted distribution is unchanged:

* the label of ``target`` relative to ``source`` seen from an observer depends only on the
  observer's **bearing from the source** (:func:`observer_sector`): every label, with margin
  ``m``, is one open sector of half-width ``45 - m`` degrees around a bearing fixed by the
  source→target direction, apex at the source;
* the ego camera's prior is uniform on a square (and uniform in height): restricted to the
  sector it is uniform on the convex polygon square ∩ sector, sampled exactly by fan
  triangles weighted by area (:class:`ConvexRegion`);
* the allo figure's (and the target's) prior is an isotropic Gaussian around the scene centre,
  and the distance rule bounds it to discs around source and target: the proposal is the
  Gaussian truncated to the bounding box of sector ∩ discs (separable: two inverse-CDF draws,
  :func:`gaussian_in_box`), kept if inside the set (the ``proposal`` rule) - exact rejection
  sampling from the Gaussian restricted to the set, a few proposals per figure instead of
  hundreds of label rejections;
* a camera farther than :func:`max_useful_distance` from source or target would certainly see
  it too small (a provable bound): the camera region leaves those places out, and the
  ``too_far`` rule checks the exact discs with two hypot()s before any prism is projected; it
  never rejects a view the projection rules would keep.

The labelling rule (``scenarios.sampling.relations``) and every other rule are still applied to the
final candidate by the caller, so a candidate on a boundary (floating point) is rejected as
before and a label can never disagree with the rule. Geometry in UE units: cm, X forward,
Y right, bearings ``atan2(y, x)`` in degrees (+ turns X towards Y).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from sceneforge.core.errors import ConfigError
from sceneforge.scenarios.sampling.relations import LABELS, check_margin
from sceneforge.scenarios.sampling.screens import RASTER_SLACK_PX

# Centre of each label's sector, as the signed angle δ from f = source - observer to
# r = target - source (δ > 0 ⇔ cross > 0 ⇔ right); every sector has half-width 45 - m.
_DELTA_CENTRE = {"front": 0.0, "back": 180.0, "right": 90.0, "left": -90.0}


@dataclass(frozen=True)
class Sector:
    """Open set of points whose bearing from ``apex`` is within ``half_deg`` of ``centre_deg``
    (optionally within ``radius`` of the apex). ``half_deg`` <= 180; label sectors have
    ``half_deg`` = 45 - m < 90, so they are convex; 180 is a whole disc."""

    apex: tuple[float, float]
    centre_deg: float
    half_deg: float
    radius: float = math.inf

    def point(self, bearing_deg: float, rho: float) -> tuple[float, float]:
        b = math.radians(bearing_deg)
        return (self.apex[0] + rho * math.cos(b), self.apex[1] + rho * math.sin(b))

    def contains(self, p: Sequence[float]) -> bool:
        """Strictly inside the bearing range, within the radius (the apex itself is outside)."""
        vx, vy = float(p[0]) - self.apex[0], float(p[1]) - self.apex[1]
        rho = math.hypot(vx, vy)
        if rho == 0.0 or rho > self.radius:
            return False
        return abs(_wrap(math.degrees(math.atan2(vy, vx)) - self.centre_deg)) < self.half_deg

    def polygon(self, reach: float | None = None):
        """A shapely polygon that contains the sector (cut at ``reach`` or its radius): far
        vertices on a circumscribed polygon, every <= 15°. Only for bounds and clipping."""
        from shapely.geometry import Polygon

        r = self.radius if reach is None else reach
        steps = max(2, math.ceil(2.0 * self.half_deg / 15.0))
        step = 2.0 * self.half_deg / steps
        out = r / math.cos(math.radians(step / 2.0))
        far = [self.point(self.centre_deg - self.half_deg + step * (k + 0.5), out) for k in range(steps)]
        ends = [self.point(self.centre_deg - self.half_deg, r), self.point(self.centre_deg + self.half_deg, r)]
        pts = [ends[0]] + far + [ends[1]]
        return Polygon(pts if self.half_deg >= 180.0 else [self.apex] + pts)

    def distance(self, p: Sequence[float]) -> float:
        """Euclidean distance from ``p`` to the closed sector (0 inside)."""
        vx, vy = float(p[0]) - self.apex[0], float(p[1]) - self.apex[1]
        rho = math.hypot(vx, vy)
        if rho == 0.0:
            return 0.0
        off = _wrap(math.degrees(math.atan2(vy, vx)) - self.centre_deg)
        if abs(off) <= self.half_deg:
            return max(0.0, rho - self.radius)
        best = math.inf
        for edge in (self.centre_deg - self.half_deg, self.centre_deg + self.half_deg):
            ux, uy = math.cos(math.radians(edge)), math.sin(math.radians(edge))
            t = min(max(vx * ux + vy * uy, 0.0), self.radius)
            best = min(best, math.hypot(vx - t * ux, vy - t * uy))
        return best


def _wrap(deg: float) -> float:
    """Angle in (-180, 180]."""
    d = math.fmod(deg, 360.0)
    if d > 180.0:
        d -= 360.0
    elif d <= -180.0:
        d += 360.0
    return d


def observer_sector(source: Sequence[float], target: Sequence[float], margin_deg: float, want: str) -> Sector:
    """Where an observer must stand for ``relation(observer, source, target, m) == want``.

    With φ the observer's bearing from the source and β the bearing of ``target - source``,
    f = source - observer has bearing φ + 180 and δ = β - φ - 180 is the signed angle from f to
    r; the rule's classes are δ ∈ (-(45-m), 45-m) front, (45+m, 135-m) right, its mirror left,
    and |δ| > 135 + m back. So φ = β - 180 - δ ranges over ``δ_centre ± (45 - m)``.
    """
    if want not in _DELTA_CENTRE:
        raise ConfigError(f"unknown label {want!r}; expected one of {LABELS}")
    m = check_margin(margin_deg)
    rx, ry = float(target[0]) - float(source[0]), float(target[1]) - float(source[1])
    if rx == 0.0 and ry == 0.0:
        raise ConfigError(f"relation: source and target coincide in XY at ({source[0]}, {source[1]})")
    beta = math.degrees(math.atan2(ry, rx))
    return Sector((float(source[0]), float(source[1])), _wrap(beta - 180.0 - _DELTA_CENTRE[want]), 45.0 - m)


# --- uniform on a convex polygon ------------------------------------------------------------------
class ConvexRegion:
    """Uniform sampling on a convex polygon: fan triangles from the first vertex, one picked with
    probability ∝ area, then a uniform point in it (the folded unit square). Exact."""

    def __init__(self, vertices: np.ndarray):
        v = np.asarray(vertices, float)
        self.vertices = v
        if len(v) < 3:
            self.tris = np.zeros((0, 3, 2))
            self.cum = np.zeros(0)
            self.area = 0.0
            return
        self.tris = np.stack([np.stack([v[0], v[i], v[i + 1]]) for i in range(1, len(v) - 1)])
        e1, e2 = self.tris[:, 1] - self.tris[:, 0], self.tris[:, 2] - self.tris[:, 0]
        areas = 0.5 * np.abs(e1[:, 0] * e2[:, 1] - e1[:, 1] * e2[:, 0])
        self.area = float(areas.sum())
        self.cum = np.cumsum(areas) / self.area if self.area > 0 else np.zeros(len(areas))

    def sample(self, rng: np.random.Generator) -> tuple[float, float]:
        if self.area <= 0.0:
            raise ConfigError("cannot sample an empty region")
        k = min(int(np.searchsorted(self.cum, rng.random(), side="right")), len(self.cum) - 1)
        a, b, c = self.tris[k]
        u, v = rng.random(), rng.random()
        if u + v > 1.0:
            u, v = 1.0 - u, 1.0 - v
        p = a + u * (b - a) + v * (c - a)
        return float(p[0]), float(p[1])

    def sample_many(self, rng: np.random.Generator, n: int) -> np.ndarray:
        """(n, 2) independent uniform points (as :meth:`sample`, vectorised)."""
        if self.area <= 0.0:
            raise ConfigError("cannot sample an empty region")
        k = np.minimum(np.searchsorted(self.cum, rng.random(n), side="right"), len(self.cum) - 1)
        u, v = rng.random(n), rng.random(n)
        flip = u + v > 1.0
        u, v = np.where(flip, 1.0 - u, u), np.where(flip, 1.0 - v, v)
        a, b, c = self.tris[k, 0], self.tris[k, 1], self.tris[k, 2]
        return a + u[:, None] * (b - a) + v[:, None] * (c - a)


def square_sector_region(
    centre: Sequence[float], half_range: float, sector: Sector | None, discs: Sequence[tuple[Sequence[float], float]] = ()
) -> ConvexRegion:
    """The square ``centre ± half_range`` (X and Y) intersected with ``sector`` (if any; its
    radius is ignored) and with discs ``((x, y), radius)`` as circumscribed polygons (supersets:
    the caller still applies the exact rule). Convex."""
    from shapely.geometry import box

    sq = box(centre[0] - half_range, centre[1] - half_range, centre[0] + half_range, centre[1] + half_range)
    region = sq
    if sector is not None:
        reach = 4.0 * (half_range + math.hypot(sector.apex[0] - centre[0], sector.apex[1] - centre[1])) + 1.0
        region = sector.polygon(reach).intersection(sq)
    for (cx, cy), radius in discs:
        if math.isfinite(radius):
            region = region.intersection(Sector((cx, cy), 0.0, 180.0, radius).polygon())
    if region.is_empty or region.geom_type != "Polygon":
        return ConvexRegion(np.zeros((0, 2)))
    return ConvexRegion(np.asarray(region.exterior.coords)[:-1])


def max_useful_distance(
    corners: np.ndarray, min_px: float, fov_deg: float, width: int, height: int
) -> tuple[tuple[float, float], float]:
    """Centre (XY) and distance beyond which a camera certainly sees the prism ``corners`` smaller than
    ``min_px`` (projected box's longest edge), or out of frame: ``inf`` if there is no such bound.

    The prism lies in a sphere of radius r around its centre; seen from distance D its points'
    directions are within 2·asin(r/D) of each other. If the view passes ``in_frame`` they all
    lie in the cap of angle θ_d (half the diagonal field of view), where the pinhole projection
    stretches angles by at most f·sec²θ_d px/rad; so the projected box spans at most
    2·asin(r/D)·f·sec²θ_d px, which is < ``min_px`` once D > r / sin(min_px / (2 f sec²θ_d)).
    The bound is conservative (it never removes a view the rules would keep); like the rules it
    allows the rasteriser's extra pixel (``screens.RASTER_SLACK_PX``): the bound is for a box of
    ``min_px - RASTER_SLACK_PX``.
    """
    min_px = float(min_px) - RASTER_SLACK_PX
    pts = np.asarray(corners, float)
    centre = (pts.min(axis=0) + pts.max(axis=0)) / 2.0
    r = float(np.max(np.linalg.norm(pts - centre, axis=1)))
    f = (width / 2.0) / math.tan(math.radians(fov_deg) / 2.0)
    theta_d = math.atan(math.hypot(width / 2.0, height / 2.0) / f)
    x = min_px / (2.0 * f / math.cos(theta_d) ** 2)
    xy = (float(centre[0]), float(centre[1]))
    if min_px <= 0.0 or x >= math.pi / 2.0 or r <= 0.0:
        return xy, math.inf
    return xy, r / math.sin(x)


# --- Gaussian restricted to a region: truncated to its bounding box, then membership ---------------
def truncated_normal(rng: np.random.Generator, mu: float, sigma: float, lo: float, hi: float) -> float | None:
    """One draw of N(mu, σ²) restricted to [lo, hi] by inverse CDF (on the tail side that keeps
    precision); ``None`` if the interval's probability underflows (a region ~40σ away)."""
    from scipy.special import ndtr, ndtri

    a, b = (lo - mu) / sigma, (hi - mu) / sigma
    u = rng.random()
    if a > 0.0:  # upper tail: sample the mirror image, where the CDF is small and exact
        pa, pb = float(ndtr(-b)), float(ndtr(-a))
        if pb <= pa:
            return None
        z = -float(ndtri(pa + u * (pb - pa)))
    else:
        pa, pb = float(ndtr(a)), float(ndtr(b))
        if pb <= pa:
            return None
        z = float(ndtri(pa + u * (pb - pa)))
    return min(max(mu + sigma * z, lo), hi)


def gaussian_in_box(
    rng: np.random.Generator, centre: Sequence[float], sigma: float, bounds: Sequence[float]
) -> tuple[float, float] | None:
    """N(centre, σ² I) restricted to ``bounds`` = (xmin, ymin, xmax, ymax): separable, so X and
    Y are independent truncated normals. Followed by a membership test of a region inside the
    box, this is exact rejection sampling of the Gaussian restricted to the region."""
    x = truncated_normal(rng, centre[0], sigma, bounds[0], bounds[2])
    y = truncated_normal(rng, centre[1], sigma, bounds[1], bounds[3])
    return None if x is None or y is None else (x, y)


# --- Gaussian restricted to a polygon: a mixture of truncated boxes over its triangles -------------
def _interval_mass(mu: float, sigma: float, lo: float, hi: float) -> float:
    """P(lo <= N(mu, σ²) <= hi), on the tail side that keeps precision."""
    from scipy.special import ndtr

    a, b = (lo - mu) / sigma, (hi - mu) / sigma
    return float(ndtr(-a) - ndtr(-b)) if a > 0.0 else float(ndtr(b) - ndtr(a))


class GaussianOnPolygon:
    """N(centre, σ² I) restricted to a polygon (holes and several parts allowed), exactly.

    The polygon is cut by a ``cells × cells`` grid over its bounding box into pieces (cell ∩
    polygon: disjoint, together the polygon). A draw picks piece k with probability ∝ the
    Gaussian mass of its bounding box, draws the Gaussian truncated to that box
    (:func:`gaussian_in_box`) and keeps the point if it lies in piece k (else the caller draws
    again, from the start). The proposal density is Σ_k [x ∈ box_k] φ(x) / Z, so a kept point has
    density ∝ φ(x) Σ_k [x ∈ piece_k] = φ(x) [x ∈ polygon]: exact rejection sampling. Whole cells
    fill their box, so most tries are kept however small the polygon's share of the Gaussian is
    (a box around a thin wedge, or a triangle fan of one, keeps few)."""

    def __init__(self, polygon, centre: Sequence[float], sigma: float, cells: int = 8):
        import shapely
        from shapely.geometry import box

        self.centre, self.sigma = (float(centre[0]), float(centre[1])), float(sigma)
        self.pieces, boxes = [], []
        if not polygon.is_empty:
            x0, y0, x1, y1 = polygon.bounds
            w, h = (x1 - x0) / cells, (y1 - y0) / cells
            for i in range(cells):
                for j in range(cells):
                    piece = polygon.intersection(box(x0 + i * w, y0 + j * h, x0 + (i + 1) * w, y0 + (j + 1) * h))
                    if piece.is_empty or piece.area <= 0.0:
                        continue
                    shapely.prepare(piece)
                    self.pieces.append(piece)
                    boxes.append(piece.bounds)
        self.boxes = np.array(boxes, float).reshape(-1, 4)
        mass = np.array(
            [
                _interval_mass(self.centre[0], sigma, b[0], b[2]) * _interval_mass(self.centre[1], sigma, b[1], b[3])
                for b in self.boxes
            ]
        )
        self.total = float(mass.sum())
        self.cum = np.cumsum(mass) / self.total if self.total > 0.0 else np.zeros(0)

    @property
    def empty(self) -> bool:
        return self.total <= 0.0

    def draw(self, rng: np.random.Generator) -> tuple[float, float] | None:
        """One try: a point of the restricted Gaussian, or None (rejected: draw again)."""
        import shapely

        if self.empty:
            return None
        k = min(int(np.searchsorted(self.cum, rng.random(), side="right")), len(self.cum) - 1)
        p = gaussian_in_box(rng, self.centre, self.sigma, self.boxes[k])
        if p is None or not shapely.contains_xy(self.pieces[k], p[0], p[1]):
            return None
        return p


def clearance_radius(footprint: np.ndarray) -> float:
    """Radius of the largest disc around the local origin inside a footprint polygon (0 if the
    origin is outside): wherever the object stands and however it turns, its footprint covers
    that disc around its position."""
    from shapely.geometry import Point, Polygon

    poly = Polygon(np.asarray(footprint, float))
    return float(poly.exterior.distance(Point(0.0, 0.0))) if poly.contains(Point(0.0, 0.0)) else 0.0


def free_region(region, obstacles, gap_cm: float, clearance_cm: float):
    """``region`` minus the places where an object whose footprint covers a disc of
    ``clearance_cm`` around its position certainly overlaps an obstacle buffered by ``gap_cm``
    (the ``overlap`` rule): obstacles buffered by ``0.9·clearance + 0.99·gap`` (shapely's
    polygonal buffers lie inside the true ones; the 1 % and 10 % cover that), so the result
    still contains every position the rule keeps. Without clearance nothing is removed."""
    from shapely.ops import unary_union

    if clearance_cm <= 0.0 or not obstacles:
        return region
    grow = 0.9 * clearance_cm + 0.99 * gap_cm
    return region.difference(unary_union([o.buffer(grow) for o in obstacles]))
