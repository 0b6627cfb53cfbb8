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
settled without it, by conservative bounds that decide only when they clear the threshold by a
slack (a billionth of the magnitudes involved, far above float error); anything closer goes to
shapely. So the outcome is byte-identical to asking shapely every time (checked against the
previous implementation, tests/scenarios/reference_placement.py), only without building most
polygons and points. That machinery lives beside this module, one concern each:

* scenarios/world/placement_bounds.py: an object's shape (:class:`Candidate`, geometry on demand) and
  its bounds (boxes, oriented boxes, inner discs, cores, fill; ``slack``);
* scenarios/world/occupancy.py: :class:`Occupancy`, what already stands (grid-indexed) and the
  collision rule;
* scenarios/world/zones.py: :class:`Zone` (rectangles and their shapely union) and :func:`in_zones`.

This module draws the spots (rings, :class:`Line`), holds an environment's :class:`Site` (zones
and lines), the per-library memo of asset footprints and variants, and :func:`place_group`, which
ties them together in the order of draws that determinism depends on.
"""

from __future__ import annotations

import bisect
import math
import weakref
from typing import TYPE_CHECKING

import numpy as np

from sceneforge.core.errors import ConfigError
from sceneforge.scenarios.world.occupancy import Occupancy
from sceneforge.scenarios.world.placement_bounds import AssetFootprint, Candidate, ScaledFootprint
from sceneforge.scenarios.world.zones import Zone, in_zones

if TYPE_CHECKING:  # annotations only: environments imports this module
    from sceneforge.scenarios.world.env_schema import ClutterGroup

TRIES = 40  # candidate spots per object before it is dropped (a crowded ring never loops)


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
        # the same numbers as plain floats: draw() runs ~10 times per object placed, and numpy
        # on two-element vectors costs more than the arithmetic
        self._cum = self.cum.tolist()
        self._rows = list(
            zip(map(tuple, self.seg[:, :2].tolist()), map(tuple, self.dir.tolist()), map(tuple, self.side.tolist()))
        )

    def draw(self, rng: np.random.Generator):
        """(point, direction, side) at a uniform position along the whole line, as (x, y) tuples
        (the same float operations, element by element, as the vector form)."""
        cum = self._cum
        t = rng.uniform(0, cum[-1])
        i = min(bisect.bisect_right(cum, t), len(cum) - 1)
        along = t - (cum[i - 1] if i else 0.0)
        (sx, sy), d, n = self._rows[i]
        return (sx + along * d[0], sy + along * d[1]), d, n


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


def ring_candidate(rng: np.random.Generator, centre, ring, radius: float) -> Candidate:
    """A spot uniform over the ring's area, random yaw; the object is its footprint disc."""
    d = math.sqrt(rng.uniform(ring[0] ** 2, ring[1] ** 2))
    a = rng.uniform(0, 2 * math.pi)
    x, y = centre[0] + d * math.cos(a), centre[1] + d * math.sin(a)
    yaw = float(rng.uniform(-180, 180))
    return Candidate(x, y, yaw, radius)  # its geometry, Point(x, y), only if shapely is asked


def line_candidate(
    rng: np.random.Generator, line: Line, offset_cm: float, facing: str, footprint, scale: float, centre, ring, inner: float = 0.0
) -> Candidate | None:
    """A spot along ``line`` on its side; the object is its rotated footprint polygon.
    None when the spot lies outside ``ring`` around ``centre`` (no polygon is built then).
    ``footprint``: the asset's local footprint, or its :class:`ScaledFootprint` (turned once per
    yaw); ``inner``: radius of a disc around the origin inside the (unscaled) footprint."""
    shapes = (
        footprint if isinstance(footprint, ScaledFootprint) else ScaledFootprint(AssetFootprint(np.asarray(footprint)), scale)
    )
    p, d, n = line.draw(rng)
    if facing == "line":  # forward (+X) back towards the line, front edge at the offset
        yaw = math.degrees(math.atan2(-n[1], -n[0]))
        front = shapes.front * scale
        k = offset_cm + front
        x, y = p[0] + n[0] * k, p[1] + n[1] * k
    elif facing == "along":
        yaw = math.degrees(math.atan2(d[1], d[0]))
        x, y = p[0] + n[0] * offset_cm, p[1] + n[1] * offset_cm
    else:  # random
        yaw = float(rng.uniform(-180, 180))
        x, y = p[0] + n[0] * offset_cm, p[1] + n[1] * offset_cm
    if not ring[0] <= math.hypot(x - centre[0], y - centre[1]) <= ring[1]:
        return None
    return Candidate(x, y, yaw, 0.0, inner=(x, y, inner * scale) if inner > 0 else None, shapes=shapes)


# --- what placement remembers of a library -----------------------------------------------------
_LIBRARIES: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


_last = (lambda: None, {})  # (weak reference to the library asked for last, its memo): one tuple, swapped whole


def _library_memo(lib) -> dict:
    """Per-library memo (assets, variants): a library does not change once loaded."""
    global _last
    ref, memo = _last
    if ref() is lib:
        return memo
    try:
        memo = _LIBRARIES.setdefault(lib, {})
        _last = (weakref.ref(lib), memo)
    except TypeError:  # not weak-referenceable: remember nothing
        return {}
    return memo


def _asset(lib, asset_id: str, memo: dict | None = None) -> AssetFootprint:
    memo = _library_memo(lib) if memo is None else memo
    key = ("asset", asset_id)
    if key not in memo:
        memo[key] = AssetFootprint(np.asarray(lib.footprint(asset_id)))
    return memo[key]


# --- placing one clutter group (moved from scenarios/world/environments.py) -----------------------
def footprint_radius(lib, asset_id: str) -> float:
    """Footprint radius (cm) around the asset origin (computed once per library and asset)."""
    return _asset(lib, asset_id).radius


def ground_z_under(ground, x: float, y: float, r: float) -> float:
    """Lowest terrain height under the footprint, so the base never floats on a slope."""
    if getattr(ground, "relief_amplitude", None) == 0:  # flat: Ground.height is 0 everywhere
        return 0.0
    xs = np.array([x, x + r, x - r, x, x])
    ys = np.array([y, y, y, y + r, y - r])
    return float(ground.height(xs, ys).min())  # ndarray.min: np.min's reduction, less wrapping


def pick_variants(lib, cls: str, tags, exclude=()) -> list[str]:
    """Active asset ids of ``cls`` without any of the ``exclude`` tags, narrowed to those with any
    of ``tags`` when some have them (no ``tags``: every one left, whatever its style: snowy pines
    and palms too). ``cls`` may also be an asset id: the environment pins that asset (``[cls]``,
    even if it carries an excluded tag: it was named)."""
    if cls in set(lib.ids()) and cls not in set(lib.classes()):
        return [cls]
    infos = lib.by_class(cls)
    if not infos:
        raise ConfigError(f"class {cls!r} has no asset in the library")
    kept = [i for i in infos if not set(i.tags) & set(exclude)]
    if not kept:
        raise ConfigError(
            f"class {cls!r}: every variant ({', '.join(i.id for i in infos)}) carries an excluded style tag "
            f"({', '.join(exclude)}); remove one from exclude_style_tags"
        )
    styled = [i.id for i in kept if set(i.tags) & set(tags)]
    return styled or [i.id for i in kept]


def _variants(lib, cls: str, tags, memo: dict, exclude=()) -> list[str]:
    """pick_variants, remembered per library (asked for every object placed)."""
    key = ("variants", cls, tuple(tags), tuple(exclude))
    if key not in memo:
        memo[key] = pick_variants(lib, cls, tags, exclude)
    return memo[key]


def place_group(
    group: "ClutterGroup",
    rng: np.random.Generator,
    lib,
    occupied: Occupancy,
    centre,
    style=(),
    geometry=({}, {}),
    index: int = 0,
    exclude=(),
):
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
        ids = _variants(lib, cls, [group.prefer_tag] if group.prefer_tag else style, memo, exclude)
        asset_id = ids[int(rng.integers(len(ids)))]
        s = float(rng.uniform(*group.scale))
        asset = _asset(lib, asset_id, memo)
        rad = asset.radius * s
        shapes = ScaledFootprint(asset, s) if line is not None else None
        for _try in range(TRIES):
            if line is None:
                c = ring_candidate(rng, centre, group.ring_cm, rad)
            else:
                c = line_candidate(rng, line, group.offset_cm, group.facing, shapes, s, centre, group.ring_cm, asset.inner)
                if c is None:
                    continue
            # both tests are pure (no draws), so the cheaper zone test goes first: same answer
            if in_zones(c, rad, avoid, within) and occupied.clear(c, rad, group.gap_cm, index if group.overlap else None):
                occupied.add_candidate(c, rad, index)
                yield asset_id, c.x, c.y, c.yaw, s
                break
