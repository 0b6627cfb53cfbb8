"""Rejection sampling: small samplers ``(rng) -> candidate``, named predicates, one loop.

Every rule is a named predicate ``(candidate) -> bool`` (True = keep). :func:`resample_while`
draws candidates until all rules pass, counts which rule rejected each candidate (first failing
rule, so put cheap rules first), and after ``max_tries`` raises
:class:`~core.errors.PlacementError` naming the rule that rejected most.

Geometry is in UE units (cm, X forward / Y right / Z up, yaw in degrees, +yaw turns X towards Y).
Nothing here talks to a renderer: the visibility rule takes pixel counts already fetched.

RNG: :func:`sample_rng` derives an independent generator per sample from
``(seed, env, task, triple, index)`` with ``numpy.random.SeedSequence``, so output does not depend
on worker count, shard boundaries or the order samples are made in.
"""

from __future__ import annotations

import hashlib
import math
from collections import Counter
from dataclasses import dataclass
from typing import Callable, Iterable, Sequence, TypeVar

import numpy as np
from shapely.geometry import Polygon

from sceneforge.core.errors import ConfigError, PlacementError
from sceneforge.core.visibility import visibility_failure  # noqa: F401 - the rule lives in core (the server runs it too)
from sceneforge.engine.world import Actor, Camera, Ground, Rotator, Transform, look_at_rotation
from sceneforge.scenarios.sampling.relations import relation
from sceneforge.scenarios.sampling.screens import RASTER_SLACK_PX

C = TypeVar("C")
Rule = tuple[str, Callable[[C], bool]]


# --- RNG ------------------------------------------------------------------------------------
def stable_key(*parts: str) -> tuple[int, ...]:
    """Four uint32 words of SHA-256 over ``parts``: stable across processes and Python runs
    (unlike ``hash()``), so it can key a SeedSequence."""
    digest = hashlib.sha256("\x1f".join(parts).encode("utf-8")).digest()
    return tuple(int.from_bytes(digest[i : i + 4], "little") for i in range(0, 16, 4))


def sample_rng(seed: int, env: str, task: str, triple: str, index: int, stream: int = 0) -> np.random.Generator:
    """Generator for one sample (``stream`` separates e.g. a scene group from a sample)."""
    if int(seed) < 0 or int(index) < 0:
        raise ConfigError(f"seed and index must be >= 0, got seed={seed} index={index}")
    ss = np.random.SeedSequence(entropy=int(seed), spawn_key=(*stable_key(env, task, triple), int(stream), int(index)))
    return np.random.default_rng(ss)


# --- the loop -------------------------------------------------------------------------------
def resample_while(
    sample: Callable[[np.random.Generator], C],
    rules: Sequence[Rule],
    rng: np.random.Generator,
    max_tries: int,
    counts: Counter | None = None,
    what: str = "sample",
) -> C:
    """Draw ``sample(rng)`` until every rule passes; count rejections per rule into ``counts``.

    Example::

        x = resample_while(lambda r: r.normal(), [("positive", lambda v: v > 0)], rng, 100)
    """
    if max_tries < 1:
        raise ConfigError(f"max_tries must be >= 1, got {max_tries}")
    local: Counter = Counter()
    for _ in range(max_tries):
        cand = sample(rng)
        failed = next((name for name, ok in rules if not ok(cand)), None)
        if failed is None:
            if counts is not None:
                counts.update(local)
            return cand
        local[failed] += 1
    if counts is not None:
        counts.update(local)
    rule, n = local.most_common(1)[0]
    raise PlacementError(
        f"{what}: no valid candidate in {max_tries} tries; rule {rule!r} rejected most "
        f"({n}); all rejections: {dict(sorted(local.items()))}",
        rule=rule,
        tries=max_tries,
        rejections=dict(local),
    )


def resample_batched(
    draw_batch: Callable[[np.random.Generator, int], Sequence],
    screen: Callable[[object], list],
    make: Callable[[object], C],
    rules: Sequence[Rule],
    rng: np.random.Generator,
    max_tries: int,
    counts: Counter | None = None,
    what: str = "sample",
    batch: int = 32,
) -> C:
    """:func:`resample_while` for cheap candidates drawn and screened many at a time.

    ``draw_batch(rng, n)`` draws n i.i.d. raw candidates; ``screen(raw)`` names, per candidate,
    the first rule it certainly fails (None: may pass) from vectorised arithmetic that must be a
    *necessary* condition of ``rules`` (it never fails a candidate the rules keep); survivors
    are turned into candidates by ``make`` and checked by ``rules`` in draw order. The first to
    pass is returned: the same distribution as drawing one at a time, at a fraction of the cost
    when most candidates fail a screened rule.
    """
    if max_tries < 1:
        raise ConfigError(f"max_tries must be >= 1, got {max_tries}")
    local: Counter = Counter()
    tried = 0
    while tried < max_tries:
        n = min(batch, max_tries - tried)
        raw = draw_batch(rng, n)
        fails = screen(raw)
        for k in range(n):
            tried += 1
            if fails[k] is not None:
                local[fails[k]] += 1
                continue
            cand = make(raw[k])
            failed = next((name for name, ok in rules if not ok(cand)), None)
            if failed is None:
                if counts is not None:
                    counts.update(local)
                return cand
            local[failed] += 1
        batch = min(batch * 2, 512)
    if counts is not None:
        counts.update(local)
    rule, n = local.most_common(1)[0]
    raise PlacementError(
        f"{what}: no valid candidate in {max_tries} tries; rule {rule!r} rejected most "
        f"({n}); all rejections: {dict(sorted(local.items()))}",
        rule=rule,
        tries=max_tries,
        rejections=dict(local),
    )


# --- placed objects ---------------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class AssetShape:
    """What placement needs to know about an asset: footprint polygon (local XY, cm) and height;
    optionally ``silhouette()``: local points whose hull holds everything drawn for it
    (scenarios/sampling/silhouette.py), computed on first use."""

    asset_id: str
    cls: str
    footprint: np.ndarray
    height: float
    silhouette: Callable[[], np.ndarray] | None = None

    def drawable(self) -> np.ndarray | None:
        """``silhouette()``, computed once (None when the shape has none)."""
        if self.silhouette is None:
            return None
        if "_drawable" not in self.__dict__:
            object.__setattr__(self, "_drawable", np.asarray(self.silhouette(), float))
        return self.__dict__["_drawable"]


@dataclass(frozen=True, eq=False)
class Placed:
    """An asset at a pose on the ground (base at ``z``), yaw only."""

    name: str
    shape: AssetShape
    x: float
    y: float
    z: float
    yaw: float

    @property
    def location(self) -> tuple[float, float, float]:
        return (self.x, self.y, self.z)

    def _turned(self, xy: np.ndarray) -> np.ndarray:
        """Local XY points (n, 2) turned by the yaw and moved to the pose."""
        c, s = math.cos(math.radians(self.yaw)), math.sin(math.radians(self.yaw))
        return np.stack([xy[:, 0] * c - xy[:, 1] * s + self.x, xy[:, 0] * s + xy[:, 1] * c + self.y], axis=1)

    def footprint_world(self) -> np.ndarray:
        return self._turned(np.asarray(self.shape.footprint, dtype=float))

    def polygon(self) -> Polygon:
        return Polygon(self.footprint_world())

    def corners(self) -> np.ndarray:
        """World points (2N, 3) of the footprint prism: what must project inside the frame."""
        fp = self.footprint_world()
        lo = np.column_stack([fp, np.full(len(fp), self.z)])
        hi = np.column_stack([fp, np.full(len(fp), self.z + self.shape.height)])
        return np.vstack([lo, hi])

    def drawable_world(self) -> np.ndarray | None:
        """The shape's silhouette points (``AssetShape.drawable``) at this pose, or None."""
        pts = self.shape.drawable()
        return None if pts is None else np.column_stack([self._turned(pts[:, :2]), pts[:, 2] + self.z])

    def centre(self) -> np.ndarray:
        return np.array([self.x, self.y, self.z + self.shape.height / 2.0])

    def actor(self, color: tuple[int, int, int], tint=None) -> Actor:
        return Actor(
            self.name,
            self.shape.asset_id,
            Transform((self.x, self.y, self.z), Rotator(0.0, self.yaw, 0.0)),
            color=color,
            tint=tint,
        )


def sample_object(
    rng: np.random.Generator,
    name: str,
    shape: AssetShape,
    centre: Sequence[float],
    sigma: float,
    ground: Ground,
    yaw: float | None = None,
) -> Placed:
    """Gaussian XY around ``centre`` (σ cm), uniform random yaw unless given, standing on the
    lowest terrain point under its footprint (so it never floats on a slope)."""
    x, y = rng.normal(centre[0], sigma), rng.normal(centre[1], sigma)
    yaw_deg = float(rng.uniform(-180.0, 180.0)) if yaw is None else float(yaw)
    return standing(name, shape, float(x), float(y), yaw_deg, ground)


def standing(name: str, shape: AssetShape, x: float, y: float, yaw: float, ground: Ground) -> Placed:
    """``shape`` at (x, y) with ``yaw``, its base on the lowest terrain point under its footprint."""
    p = Placed(name, shape, float(x), float(y), 0.0, float(yaw))
    fp = p.footprint_world()
    z = min(float(np.min(ground.height(fp[:, 0], fp[:, 1]))), float(ground.height(x, y)))
    return Placed(name, shape, p.x, p.y, z, p.yaw)


def no_overlap(others: Iterable[Placed], gap_cm: float = 0.0) -> Callable[[Placed], bool]:
    """Rule: the candidate's rotated footprint does not intersect any other (plus a gap).

    Only the others whose footprint disc (plus the gap, plus 1 cm) reaches the candidate's are
    tested with shapely: farther ones cannot intersect it, so the answer is the same (an allo
    figure was tested against every obstacle of a forest, ~140 polygon checks per candidate)."""
    from shapely.prepared import prep

    others = list(others)
    polys: dict[int, object] = {}  # prepared (buffered) footprints, made when first needed

    def poly(k: int):
        if k not in polys:
            o = others[k]
            polys[k] = prep(o.polygon().buffer(gap_cm) if gap_cm else o.polygon())  # same answers, faster
        return polys[k]

    centres = np.array([(o.x, o.y) for o in others], dtype=float).reshape(-1, 2)
    reach = np.array([_footprint_radius(o) for o in others], dtype=float) + float(gap_cm) + 1.0

    def ok(p: Placed) -> bool:
        if not others:
            return True
        d = np.hypot(centres[:, 0] - p.x, centres[:, 1] - p.y)
        near = np.flatnonzero(d <= reach + _footprint_radius(p))
        if len(near) == 0:
            return True
        mine = p.polygon()
        return not any(poly(int(k)).intersects(mine) for k in near)

    return ok


def _footprint_radius(p: Placed) -> float:
    """Largest distance from the pose to a footprint vertex (the footprint's disc about the pose)."""
    fp = np.asarray(p.shape.footprint, dtype=float)
    return float(np.max(np.hypot(fp[:, 0], fp[:, 1]))) if len(fp) else 0.0


def within_distance(others: Iterable[Placed], max_cm: float) -> Callable[[Placed], bool]:
    """Rule: XY distance from the candidate to each of ``others`` is at most ``max_cm``."""
    pts = [(o.x, o.y) for o in others]
    return lambda p: all(math.hypot(p.x - x, p.y - y) <= max_cm for x, y in pts)


# --- camera -----------------------------------------------------------------------------------
def sample_camera(
    rng: np.random.Generator,
    centre_xy: Sequence[float],
    xy_range: float,
    height_range: Sequence[float],
    base_z: float,
    aim: Sequence[float],
    fov_deg: float,
    size: int,
    aim_jitter_deg: float = 0.0,
) -> Camera:
    """Uniform in ``centre ± xy_range`` (X and Y) and ``base_z + height_range``, aimed at ``aim``
    turned by a uniform yaw and pitch offset in ``±aim_jitter_deg`` (see :func:`jittered_aims`)."""
    x = float(rng.uniform(centre_xy[0] - xy_range, centre_xy[0] + xy_range))
    y = float(rng.uniform(centre_xy[1] - xy_range, centre_xy[1] + xy_range))
    z = float(base_z + rng.uniform(height_range[0], height_range[1]))
    if aim_jitter_deg > 0.0:
        jitter = rng.uniform(-aim_jitter_deg, aim_jitter_deg, (1, 2))
        aim = tuple(jittered_aims(np.array([[x, y, z]]), aim, jitter)[0])
    return aimed_camera(x, y, z, aim, fov_deg, size)


def jittered_aims(eyes: np.ndarray, aim: Sequence[float], jitter_deg: np.ndarray) -> np.ndarray:
    """Aim points (n, 3): the direction from each eye to ``aim`` turned by (Δyaw, Δpitch) degrees
    (``jitter_deg``, shape (n, 2)), at the same distance; pitch kept within ±89°.

    Why: a camera aimed exactly at the labelled objects' centroid puts each object's offset from
    the image centre along the label's direction (target right of the source ⇒ source left of
    centre), so one object's position gives the label away. An aim drawn around the centroid
    independently of the label breaks that, while ``in_frame`` keeps every object in view."""
    eyes = np.asarray(eyes, float).reshape(-1, 3)
    d = np.asarray(aim, float)[None, :] - eyes
    dist = np.linalg.norm(d, axis=1)
    yaw = np.arctan2(d[:, 1], d[:, 0]) + np.radians(jitter_deg[:, 0])
    pitch = np.clip(
        np.arctan2(d[:, 2], np.hypot(d[:, 0], d[:, 1])) + np.radians(jitter_deg[:, 1]), -math.radians(89.0), math.radians(89.0)
    )
    fwd = np.stack([np.cos(pitch) * np.cos(yaw), np.cos(pitch) * np.sin(yaw), np.sin(pitch)], axis=1)
    return eyes + dist[:, None] * fwd


def aimed_camera(x: float, y: float, z: float, aim: Sequence[float], fov_deg: float, size: int) -> Camera:
    """A square camera at (x, y, z) looking at ``aim`` (roll 0)."""
    if (x, y, z) == tuple(float(a) for a in aim):
        z += 1.0  # look_at needs a direction; probability ~0 but keep the sampler total
    return Camera((x, y, z), look_at_rotation((x, y, z), tuple(aim)), fov_deg, size, size)


def camera_clear(objects: Iterable[Placed], min_cm: float) -> Callable[[Camera], bool]:
    """Rule: the camera is at least ``min_cm`` (XY) outside every object's footprint.

    Only footprints whose bounding circle comes within ``min_cm`` of the camera are measured
    exactly (a city has a hundred obstacles; the circle test is one vectorised hypot): a
    footprint farther than that is farther than ``min_cm`` too, so the answers are the same."""
    objs = list(objects)
    fps = [o.footprint_world() for o in objs]
    polys: dict[int, Polygon] = {}  # footprints, made when a camera first comes near
    centres = np.array([(f.min(axis=0) + f.max(axis=0)) / 2.0 for f in fps]).reshape(-1, 2)
    radii = np.array([np.max(np.hypot(*(f - c).T)) for f, c in zip(fps, centres)]).reshape(-1)
    slack = 1e-6 * (1.0 + abs(min_cm))  # the circle test may only skip footprints clearly far

    def ok(cam: Camera) -> bool:
        from shapely.geometry import Point

        x, y = cam.location[0], cam.location[1]
        near = np.hypot(centres[:, 0] - x, centres[:, 1] - y) - radii < min_cm + slack
        if not near.any():
            return True
        pt = Point(x, y)
        for k in np.flatnonzero(near):
            k = int(k)
            if k not in polys:
                polys[k] = Polygon(fps[k])
            if polys[k].distance(pt) < min_cm:
                return False
        return True

    return ok


def in_frame(objects: Iterable[Placed], margin_px: float, near_cm: float = 10.0) -> Callable[[Camera], bool]:
    """Rule: every corner of every object's footprint prism projects inside the image, at least
    ``margin_px`` from the border, and in front of the camera."""
    pts = np.vstack([o.corners() for o in objects])

    def ok(cam: Camera) -> bool:
        uv, depth = cam.project(pts)
        if np.any(depth <= near_cm):
            return False
        return bool(np.all((uv >= margin_px) & (uv <= np.array([cam.width, cam.height]) - margin_px)))

    return ok


def big_enough(objects: Iterable[Placed], min_px: float) -> Callable[[Camera], bool]:
    """Rule: each object's projected footprint prism spans at least ``min_px - RASTER_SLACK_PX``
    (longest edge): what a mask box of ``min_px`` pixels needs.

    The prism's box bounds the rendered silhouette's box from above, so this never rejects a view
    the mask-based ``too_small`` rule would keep; it only saves renders.
    """
    prisms = [o.corners() for o in objects]

    def ok(cam: Camera) -> bool:
        for pts in prisms:
            uv, _ = cam.project(pts)
            if np.max(uv.max(axis=0) - uv.min(axis=0)) < min_px - RASTER_SLACK_PX:
                return False
        return True

    return ok


def projection_rules(objects: Iterable[Placed], margin_px: float, min_px: float, near_cm: float = 10.0) -> list[Rule]:
    """``small_projection`` (:func:`big_enough`) and ``in_frame`` (:func:`in_frame`) from ONE
    projection of every prism per camera: the two rules project the same points. Same answers;
    ``small_projection`` comes first because it rejects most (a small object far away)."""
    prisms = [o.corners() for o in objects]
    pts = np.vstack(prisms)
    ends = np.cumsum([0] + [len(p) for p in prisms])
    last: list = [None, None]  # (camera, (uv, depth)) of the latest candidate

    def project(cam: Camera):
        if last[0] is not cam:
            last[0], last[1] = cam, cam.project(pts)
        return last[1]

    def big(cam: Camera) -> bool:
        uv, _ = project(cam)
        for a, b in zip(ends[:-1], ends[1:]):
            seg = uv[a:b]
            if np.max(seg.max(axis=0) - seg.min(axis=0)) < min_px - RASTER_SLACK_PX:
                return False
        return True

    def inside(cam: Camera) -> bool:
        uv, depth = project(cam)
        if np.any(depth <= near_cm):
            return False
        return bool(np.all((uv >= margin_px) & (uv <= np.array([cam.width, cam.height]) - margin_px)))

    return [("small_projection", big), ("in_frame", inside)]


# --- labels ---------------------------------------------------------------------------------
def label_rules(
    observer: Callable[[C], Sequence[float]], source: Sequence[float], target: Sequence[float], margin_deg: float, want: str
) -> list[Rule]:
    """Two rules for a candidate whose observer position is ``observer(cand)``:
    ``ambiguity`` (within the margin of a diagonal) and ``label`` (not the label this sample
    index must have: the class-balance rule)."""

    def lab(c) -> str | None:
        o = observer(c)
        if math.hypot(o[0] - source[0], o[1] - source[1]) == 0.0:
            return None
        return relation(o, source, target, margin_deg)

    return [("ambiguity", lambda c: lab(c) is not None), ("label", lambda c: lab(c) == want)]
