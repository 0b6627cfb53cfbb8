"""Geometry of one SpaRRTa sample: object placement (a *scene group*) and the view (camera, and
the human figure for the allocentric task). Pure: no renderer, only rules from ``sampling``.

A scene group (source, target, background clutter) is shared by ``samples_per_scene``
consecutive indices of a unit and has its own RNG, so it is the same whichever worker builds
it; each sample then draws its camera (and human) from its own RNG until the cheap geometric
rules pass. Draws are conditioned on the sample's label (``scenarios.sampling.conditioned``: the observer
is drawn from its prior restricted to the label's sector), so the label rules, still applied,
almost never reject; camera clearance, in-frame and projected size are rejection rules.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field, replace

import numpy as np

from sceneforge.core.errors import PlacementError
from sceneforge.engine.world import Actor, Camera, Ground, instance_color
from sceneforge.scenarios.sampling.conditioned import (
    ConvexRegion,
    GaussianOnPolygon,
    Sector,
    clearance_radius,
    free_region,
    gaussian_in_box,
    max_useful_distance,
    observer_sector,
    square_sector_region,
)
from sceneforge.scenarios.sampling.screens import screen_aimed_cameras
from sceneforge.scenarios.sparrta.camera_policy import aims_at_screen
from sceneforge.scenarios.sparrta.quotas import view_features
from sceneforge.scenarios.sampling.shapes import ShapeCache
from sceneforge.scenarios.sampling.silhouette import big_enough_silhouettes
from sceneforge.scenarios.sampling.rejection import (
    AssetShape,
    Placed,
    aimed_camera,
    camera_clear,
    label_rules,
    no_overlap,
    projection_rules,
    resample_batched,
    resample_while,
    sample_object,
    jittered_aims,
    standing,
    within_distance,
)
from sceneforge.scenarios.sampling.relations import angle_and_cross, heading_relation

IN_FRAME_MARGIN = 0.02  # fraction of the image size kept free at the border
CAMERA_CLEARANCE_CM = 50.0
OBJECT_GAP_CM = 20.0
GROUND_FEATURE_CM = 30.0  # clutter at most this tall (streets, ponds, markings) is walkable


@dataclass(frozen=True)
class Setting:
    """Resolved sampling parameters of one unit (environment defaults + config overrides)."""

    sigma_cm: float
    max_pair_dist_cm: float
    cam_xy_range_cm: float
    cam_height_range_cm: tuple[float, float]
    fov_deg: float
    size: int
    margin_deg: float
    min_visible_ratio: float
    min_bbox_px: float
    max_tries: int
    centre: tuple[float, float] = (0.0, 0.0)
    figure_yaw: str = "random"  # allo figure: "random" (uniform) or "face_source"
    aim_jitter_deg: float = 0.0  # camera aim: centroid turned by uniform ±this yaw and pitch
    # camera_policy "balanced": the source's centre at this (x, y) image fraction, drawn per sample
    # independently of the label (camera_policy.py); None: aim at the centroid (± aim_jitter_deg)
    source_screen: tuple[float, float] | None = None
    # camera_policy "decorrelated" (camera_policy.py): the anchor ("pair": the midpoint of the
    # source's and the target's centres; "source") at this (x, y) image fraction, drawn per sample
    # independently of the label; and (ego) the relation must also clear the margin around the
    # camera's heading (rule "heading"), not only around the camera→source line
    anchor_screen: tuple[float, float] | None = None
    anchor: str = "pair"
    heading_margin: bool = False
    # camera_policy "decorrelated": the layout quota of this (env, task, triple) (quotas.py): a
    # view is kept with its boxes' acceptance probability (None: no quota)
    quota: object | None = None


@dataclass
class Group:
    """Objects shared by the samples of one scene: spawn order = source, target, clutter."""

    key: tuple
    source: Placed
    target: Placed
    clutter: list[Placed]
    actors: list[Actor]
    counts: Counter = field(default_factory=Counter)
    viewpoint: AssetShape | None = None  # the allo figure's asset (spawned after ``actors``)
    regions: dict = field(default_factory=dict)  # per-group caches: label regions, rules


@dataclass(frozen=True)
class View:
    camera: Camera
    human: Placed | None
    angle_deg: float


def build_group(
    rng: np.random.Generator,
    key: tuple,
    source_cls: str,
    target_cls: str,
    shapes: ShapeCache,
    st: Setting,
    ground: Ground,
    clutter_fn=None,
) -> Group:
    """Source (Gaussian around the centre), target (no overlap, within max distance), clutter."""
    counts: Counter = Counter()
    src_shape, tgt_shape = shapes.pick(rng, source_cls), shapes.pick(rng, target_cls)
    source = sample_object(rng, "source", src_shape, st.centre, st.sigma_cm, ground)
    near, no_source = within_distance([source], st.max_pair_dist_cm), no_overlap([source], OBJECT_GAP_CM)
    R = st.max_pair_dist_cm
    bounds = (source.x - R, source.y - R, source.x + R, source.y + R)  # the distance rule's disc, boxed

    def draw_target(r: np.random.Generator):  # the Gaussian prior restricted to the disc (exact)
        p = gaussian_in_box(r, st.centre, st.sigma_cm, bounds)
        yaw = float(r.uniform(-180.0, 180.0))
        if p is None or math.hypot(p[0] - source.x, p[1] - source.y) > R:
            return None, False  # the "proposal" rule rejects it before anything looks at it
        return standing("target", tgt_shape, p[0], p[1], yaw, ground), True

    target = resample_while(
        draw_target,
        [("proposal", lambda c: c[1]), ("overlap", lambda c: no_source(c[0])), ("distance", lambda c: near(c[0]))],
        rng,
        st.max_tries,
        counts,
        what=f"placing {target_cls} near {source_cls}",
    )[0]
    clutter = _clutter(rng, clutter_fn, [source, target], shapes)
    actors = [source.actor(instance_color(0)), target.actor(instance_color(1))] + [c for _, c in clutter]
    return Group(key, source, target, [p for p, _ in clutter], actors, counts)


def _clutter(rng, clutter_fn, placed: list[Placed], shapes: ShapeCache) -> list[tuple[Placed, Actor]]:
    """The environment's background objects, kept clear of the labelled ones, renamed
    ``clutter_K`` so they never collide with our names."""
    if clutter_fn is None:
        return []
    keep_out = [(p.x, p.y, _radius(p) + 150.0) for p in placed]
    out = []
    for k, a in enumerate(clutter_fn(rng, keep_out)):
        shape = shapes(a.asset_id)
        sx, sy = abs(a.transform.scale[0]), abs(a.transform.scale[1])
        scaled = AssetShape(
            shape.asset_id, shape.cls, shape.footprint * np.array([sx, sy]), shape.height * abs(a.transform.scale[2])
        )
        loc = a.transform.location
        p = Placed(f"clutter_{k}", scaled, loc[0], loc[1], loc[2], a.transform.rotation.yaw)
        # the server colours actors in spawn order (source 0, target 1, clutter_K 2 + K, then the
        # parked human): the colour we record must be the one its mask draws
        out.append((p, replace(a, name=p.name, color=instance_color(2 + k))))
    return out


def obstacles(group: Group) -> list[Placed]:
    """Clutter that blocks the camera and the figure: everything but ground features (a street
    crossing, a pond: the environments' ``flat`` landmarks, under ``GROUND_FEATURE_CM`` tall),
    which are walkable and would otherwise cover the whole scene."""
    return [c for c in group.clutter if c.shape.height > GROUND_FEATURE_CM]


def _radius(p: Placed) -> float:
    return float(np.max(np.hypot(p.shape.footprint[:, 0], p.shape.footprint[:, 1])))


# camera_policy decorrelated, allo: whole views (figure and camera) a sample may draw before its
# layout quota gives up on the scene (PlacementError rule "quota"; the job moves to another scene)
QUOTA_TRIES = 200


def sample_view(
    rng: np.random.Generator,
    group: Group,
    task: str,
    want: str,
    st: Setting,
    ground: Ground,
    human_shape: AssetShape | None,
    counts: Counter,
) -> View:
    """A view (:func:`draw_view`) that, with a layout quota (``st.quota``, quotas.py), is kept
    with its boxes' acceptance probability; a rejected view is drawn again *whole*, figure
    included, so the kept views are distributed as the pilot's views times their weights (a
    camera redrawn around a kept figure would leave the figure's own cells unweighted). The
    acceptance uniform is the next draw of the sample's own ``rng``."""
    if st.quota is None:
        return draw_view(rng, group, task, want, st, ground, human_shape, counts)
    names = [group.source, group.target]
    for _ in range(QUOTA_TRIES):
        view = draw_view(rng, group, task, want, st, ground, human_shape, counts)
        objects = names + ([view.human] if view.human is not None else [])
        if rng.uniform() < st.quota.accept_prob(want, view_features(view.camera, objects)):
            return view
        counts["quota"] += 1
    raise PlacementError(
        f"{task} view for label {want!r}: the layout quota kept none of {QUOTA_TRIES} views",
        rule="quota",
        tries=QUOTA_TRIES,
        rejections={"quota": QUOTA_TRIES},
    )


def draw_view(
    rng: np.random.Generator,
    group: Group,
    task: str,
    want: str,
    st: Setting,
    ground: Ground,
    human_shape: AssetShape | None,
    counts: Counter,
) -> View:
    """Camera (ego: drawn inside the label's region) and, for allo, the human figure placed for
    the label. The label rules still run on every candidate (a check that almost never fires:
    only on floating-point boundaries), then clearance, in-frame and projected size."""
    src, tgt = group.source, group.target
    human = None
    if task == "allo":
        human = _sample_human(rng, group, want, st, ground, human_shape, counts)
    objects = [src, tgt] + ([human] if human else [])
    rules = []
    if task == "ego":
        rules += label_rules(lambda c: c.location, src.location, tgt.location, st.margin_deg, want)
        if st.heading_margin:  # the same label, clear of the band, read along the camera's heading
            rules += [("heading", lambda c: heading_relation(c.rotation.yaw, src.location, tgt.location, st.margin_deg) == want)]
    clear_of_scene = _cached(group, "camera_clear", lambda: camera_clear([src, tgt] + obstacles(group), CAMERA_CLEARANCE_CM))
    clear = clear_of_scene if human is None else _both(clear_of_scene, camera_clear([human], CAMERA_CLEARANCE_CM))
    rules += [("too_far", _cached(group, ("too_far", st.min_bbox_px, st.fov_deg, st.size), lambda: _near_enough(group, st)))]
    rules += projection_rules(objects, IN_FRAME_MARGIN * st.size, st.min_bbox_px)  # one projection, 2 rules
    silhouettes = [
        _cached(group, "drawable", lambda: src.drawable_world()),
        _cached(group, "drawable_target", lambda: tgt.drawable_world()),
    ] + ([human.drawable_world()] if human else [])
    rules += [("small_projection", big_enough_silhouettes(silhouettes, st.min_bbox_px))]
    rules += [("camera_clear", clear)]  # last: a city has ~100 footprints to keep clear of
    centroid = tuple(np.mean([o.centre() for o in objects], axis=0))
    anchor = {
        "source": lambda: src.centre(),
        "pair": lambda: np.mean([src.centre(), tgt.centre()], axis=0),
        "all": lambda: np.mean([o.centre() for o in objects], axis=0),
    }[st.anchor]()
    base_z = float(np.mean([o.z for o in objects]))
    lo, hi = st.cam_height_range_cm
    region = _camera_region(group, want if task == "ego" else None, st)
    if region.area <= 0.0:  # the label's sector or the useful discs miss the camera square
        rule = "too_far" if _camera_region(group, None, st).area <= 0.0 else "label"
        counts[rule] += 1
        raise PlacementError(
            f"{task} camera for label {want!r}: no camera position in the square passes {rule!r}",
            rule=rule,
            tries=1,
            rejections={rule: 1},
        )

    def draw(r: np.random.Generator, n: int) -> np.ndarray:  # uniform on the region = the prior given what it excludes
        xy = region.sample_many(r, n)
        eyes = np.column_stack([xy, base_z + r.uniform(lo, hi, n)])
        if st.anchor_screen is not None:  # decorrelated: the anchor at the sample's label-free point
            return np.column_stack([eyes, aims_at_screen(eyes, anchor, st.anchor_screen, st.fov_deg)])
        if st.source_screen is not None:  # balanced: the source where the sample's quota put it
            return np.column_stack([eyes, aims_at_screen(eyes, src.centre(), st.source_screen, st.fov_deg)])
        if st.aim_jitter_deg <= 0.0:
            return np.column_stack([eyes, np.tile(centroid, (n, 1))])
        jitter = r.uniform(-st.aim_jitter_deg, st.aim_jitter_deg, (n, 2))
        return np.column_stack([eyes, jittered_aims(eyes, centroid, jitter)])  # (n, 6): eye, aim point

    prisms = [o.corners() for o in objects]

    def screen(cands: np.ndarray) -> list:  # the projection rules on every eye at once (a necessary condition)
        return screen_aimed_cameras(
            cands[:, :3], cands[:, 3:6], st.fov_deg, st.size, prisms, IN_FRAME_MARGIN * st.size, st.min_bbox_px
        )

    cam = resample_batched(
        draw,
        screen,
        lambda e: aimed_camera(float(e[0]), float(e[1]), float(e[2]), tuple(float(v) for v in e[3:6]), st.fov_deg, st.size),
        rules,
        rng,
        st.max_tries,
        counts,
        what=f"{task} camera for label {want!r}",
    )
    observer = cam.location if task == "ego" else human.location
    return View(cam, human, _angle(observer, src.location, tgt.location))


def _cached(group: Group, key, make):
    """A rule (or region) that depends only on the scene group: built once per group."""
    if key not in group.regions:
        group.regions[key] = make()
    return group.regions[key]


def _both(a, b):
    return lambda c: a(c) and b(c)


def _camera_region(group: Group, want: str | None, st: Setting) -> ConvexRegion:
    """Where the camera's prior may put it, computed once per (scene, label, setting): the
    square of its prior ∩ (ego) the label's sector ∩ the discs (as circumscribed polygons)
    beyond which source or target certainly fail ``small_projection``. Uniform on it is the
    prior restricted to a superset of what every rule keeps, so exact; ``too_far`` still checks
    the exact discs."""

    def make() -> ConvexRegion:
        sector = None
        if want is not None:
            sector = observer_sector(group.source.location, group.target.location, st.margin_deg, want)
        return square_sector_region(st.centre, st.cam_xy_range_cm, sector, _useful_discs(group, st))

    return _cached(
        group, ("camera_region", want, st.margin_deg, st.centre, st.cam_xy_range_cm, st.min_bbox_px, st.fov_deg, st.size), make
    )


def _useful_discs(group: Group, st: Setting):
    return [max_useful_distance(o.corners(), st.min_bbox_px, st.fov_deg, st.size, st.size) for o in (group.source, group.target)]


def _near_enough(group: Group, st: Setting):
    """Rule ``too_far``: the camera is within the distance (XY) beyond which source or target
    would certainly fail ``small_projection`` (``conditioned.max_useful_distance``, a provable
    bound): two hypot()s instead of projecting every prism, and it never rejects a view the
    projection rules would keep."""
    discs = _useful_discs(group, st)
    return lambda cam: all(math.hypot(cam.location[0] - x, cam.location[1] - y) <= d for (x, y), d in discs)


# Proposals of the allo figure from the Gaussian truncated to the region's bounding box before
# the exact polygon sampler (GaussianOnPolygon) is built for its (scene, label): most scenes need
# one or two; where obstacles cover most of the region (the bridge's pond, a town's houses) the
# box proposal wastes hundreds and the polygon sampler keeps one try in two.
BOX_PROPOSALS = 8


def _sample_human(rng, group: Group, want: str, st: Setting, ground: Ground, shape: AssetShape, counts: Counter) -> Placed:
    """The viewpoint figure: Gaussian around the centre restricted to the label's sector within
    the distance limit of the source (exact: see ``conditioned.gaussian_in_box`` + membership).

    The first ``BOX_PROPOSALS`` tries draw from the Gaussian truncated to the bounding box of
    sector ∩ discs; later ones from the Gaussian restricted to that region minus the obstacles
    the figure would certainly overlap (``conditioned.GaussianOnPolygon``). Each try is exact
    rejection sampling of the same restricted prior, so switching after failed tries keeps the
    distribution (the first kept try is distributed as every try's kept points are).

    Its yaw is not part of the label (SpaRRTa's rule looks from the figure's *position* through
    the source). ``st.figure_yaw == "random"`` draws it uniformly, as SpaRRTa's own scenes do: a
    figure that always looks at the source would show the label's frame in its pose, so a model
    could read the relation off the figure instead of taking its perspective."""
    src, tgt = group.source, group.target
    R = st.max_pair_dist_cm
    sector = observer_sector(src.location, tgt.location, st.margin_deg, want)
    sector = Sector(sector.apex, sector.centre_deg, sector.half_deg, R)
    bounds = _cached(group, ("human_box", want, st.margin_deg, R), lambda: _human_bounds(sector, tgt, R))
    others = [src, tgt] + obstacles(group)
    tries = [0]
    if bounds is None:  # sector and the target's disc do not meet: no position can pass
        _impossible(counts, want, "the label's sector misses the distance discs")

    def polygon_sampler() -> GaussianOnPolygon:
        return _cached(
            group,
            ("human_polygon", want, st.margin_deg, R, st.centre, st.sigma_cm, shape.asset_id),
            lambda: _human_polygon(sector, tgt, R, others, shape, st),
        )

    def draw(r: np.random.Generator):  # the Gaussian prior restricted to sector ∩ both discs (exact)
        tries[0] += 1
        if tries[0] <= BOX_PROPOSALS:
            p = None if bounds is None else gaussian_in_box(r, st.centre, st.sigma_cm, bounds)
        else:
            sampler = polygon_sampler()
            if sampler.empty:  # obstacles cover the whole region: every further try would fail
                _impossible(counts, want, "obstacles cover every place the label allows", tries[0] - 1)
            p = sampler.draw(r)
        free_yaw = float(r.uniform(-180.0, 180.0))  # drawn on every try: the stream does not depend on the mode
        if p is None or not sector.contains(p) or math.hypot(p[0] - tgt.x, p[1] - tgt.y) > R:
            return None, False  # the "proposal" rule rejects it before anything looks at it
        yaw = free_yaw if st.figure_yaw == "random" else math.degrees(math.atan2(src.y - p[1], src.x - p[0]))
        return standing("human", shape, p[0], p[1], yaw, ground), True

    rules = [("proposal", lambda c: c[1])]
    rules += [
        (name, lambda c, ok=ok: ok(c[0]))
        for name, ok in label_rules(lambda h: h.location, src.location, tgt.location, st.margin_deg, want)
    ]
    overlap = _cached(group, "human_overlap", lambda: no_overlap(others, OBJECT_GAP_CM))
    distance = within_distance([src, tgt], st.max_pair_dist_cm)
    rules += [("overlap", lambda c: overlap(c[0])), ("distance", lambda c: distance(c[0]))]
    return resample_while(draw, rules, rng, st.max_tries, counts, what=f"allo viewpoint for label {want!r}")[0]


def _impossible(counts: Counter, want: str, why: str, tries: int = 0) -> None:
    """No figure position of this scene can have the label: fail now instead of after
    ``max_tries`` rejections (the rules reject every candidate there; the caller moves on to
    another scene, as it would after the tries)."""
    counts["proposal"] += 1
    raise PlacementError(
        f"allo viewpoint for label {want!r}: {why} (after {tries} tries)",
        rule="proposal",
        tries=max(tries, 1),
        rejections={"proposal": 1},
    )


def _human_polygon(
    sector: Sector, target: Placed, radius: float, others: list[Placed], shape: AssetShape, st: Setting
) -> GaussianOnPolygon:
    """The figure's prior restricted to sector ∩ the target's disc minus the obstacles it would
    certainly overlap (``conditioned.free_region``): a superset of every position the rules keep."""
    from shapely.geometry import MultiPolygon, Polygon

    region = sector.polygon().intersection(Sector((target.x, target.y), 0.0, 180.0, radius).polygon())
    region = free_region(region, [o.polygon() for o in others], OBJECT_GAP_CM, clearance_radius(shape.footprint))
    parts = [g for g in getattr(region, "geoms", [region]) if isinstance(g, Polygon) and not g.is_empty]
    return GaussianOnPolygon(MultiPolygon(parts) if parts else Polygon(), st.centre, st.sigma_cm)


def _human_bounds(sector: Sector, target: Placed, radius: float):
    """Bounding box of the label's sector (cut at the distance limit) ∩ the target's disc, or
    None when they do not meet (the label is impossible within the distance rule)."""
    region = sector.polygon().intersection(Sector((target.x, target.y), 0.0, 180.0, radius).polygon())
    return None if region.is_empty else tuple(region.bounds)


def _angle(observer, source, target) -> float:
    return angle_and_cross(observer, source, target)[0]
