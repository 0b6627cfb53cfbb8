"""Geometry of one SpaRRTa sample: object placement (a *scene group*) and the view (camera, and
the human figure for the allocentric task). Pure: no renderer, only rules from ``sampling``.

A scene group (source, target, background clutter) is shared by ``samples_per_scene``
consecutive indices of a unit and has its own RNG, so it is the same whichever worker builds
it; each sample then draws its camera (and human) from its own RNG until the cheap geometric
rules pass: label ambiguity and class balance first, then camera clearance and in-frame.
"""
from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field, replace

import numpy as np

from core.errors import ConfigError
from engine.world import Actor, Camera, Ground, instance_color
from scenarios.sampling import (AssetShape, Placed, big_enough, camera_clear, in_frame, label_rules, no_overlap,
                                resample_while, sample_camera, sample_object, within_distance)

IN_FRAME_MARGIN = 0.02   # fraction of the image size kept free at the border
CAMERA_CLEARANCE_CM = 50.0
OBJECT_GAP_CM = 20.0


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


@dataclass
class Group:
    """Objects shared by the samples of one scene: spawn order = source, target, clutter."""

    key: tuple
    source: Placed
    target: Placed
    clutter: list[Placed]
    actors: list[Actor]
    counts: Counter = field(default_factory=Counter)
    viewpoint: AssetShape | None = None   # the allo figure's asset (spawned after ``actors``)


@dataclass(frozen=True)
class View:
    camera: Camera
    human: Placed | None
    angle_deg: float


class CachedLibrary:
    """An asset library whose footprints (a convex hull each) are computed once: environments
    ask for them on every clutter placement. Everything else is forwarded unchanged."""

    def __init__(self, lib):
        self._lib = lib
        self._footprints: dict[str, np.ndarray] = {}

    def footprint(self, asset_id: str) -> np.ndarray:
        if asset_id not in self._footprints:
            self._footprints[asset_id] = self._lib.footprint(asset_id)
        return self._footprints[asset_id]

    def __getattr__(self, name: str):
        return getattr(self._lib, name)


class ShapeCache:
    """AssetShape per asset id (footprint hull + height), computed once per process.

    ``variants(cls) -> ids`` chooses the asset ids a class may draw from; pass the environment's
    ``env.variants`` so its style tags apply (snowy trees in Winter Town). Default: every active
    variant of the library.
    """

    def __init__(self, lib, variants=None):
        self.lib = lib if isinstance(lib, CachedLibrary) else CachedLibrary(lib)
        self._variants = variants or (lambda cls: [a.id for a in self.lib.by_class(cls)])
        self._shapes: dict[str, AssetShape] = {}

    def __call__(self, asset_id: str) -> AssetShape:
        if asset_id not in self._shapes:
            size = self.lib.size_cm(asset_id)
            self._shapes[asset_id] = AssetShape(asset_id, self.lib.info(asset_id).cls,
                                                np.asarray(self.lib.footprint(asset_id), float), float(size[2]))
        return self._shapes[asset_id]

    def pick(self, rng: np.random.Generator, cls: str) -> AssetShape:
        variants = self._variants(cls)
        if not variants:
            raise ConfigError(f"no asset of class {cls!r} in the asset library")
        return self(variants[int(rng.integers(len(variants)))])


def build_group(rng: np.random.Generator, key: tuple, source_cls: str, target_cls: str, shapes: ShapeCache,
                st: Setting, ground: Ground, clutter_fn=None) -> Group:
    """Source (Gaussian around the centre), target (no overlap, within max distance), clutter."""
    counts: Counter = Counter()
    src_shape, tgt_shape = shapes.pick(rng, source_cls), shapes.pick(rng, target_cls)
    source = sample_object(rng, "source", src_shape, st.centre, st.sigma_cm, ground)
    target = resample_while(
        lambda r: sample_object(r, "target", tgt_shape, st.centre, st.sigma_cm, ground),
        [("overlap", no_overlap([source], OBJECT_GAP_CM)), ("distance", within_distance([source], st.max_pair_dist_cm))],
        rng, st.max_tries, counts, what=f"placing {target_cls} near {source_cls}")
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
        scaled = AssetShape(shape.asset_id, shape.cls, shape.footprint * np.array([sx, sy]),
                            shape.height * abs(a.transform.scale[2]))
        loc = a.transform.location
        p = Placed(f"clutter_{k}", scaled, loc[0], loc[1], loc[2], a.transform.rotation.yaw)
        out.append((p, replace(a, name=p.name, color=instance_color(3 + k))))
    return out


def _radius(p: Placed) -> float:
    return float(np.max(np.hypot(p.shape.footprint[:, 0], p.shape.footprint[:, 1])))


def sample_view(rng: np.random.Generator, group: Group, task: str, want: str, st: Setting, ground: Ground,
                human_shape: AssetShape | None, counts: Counter) -> View:
    """Camera (ego: with the label rules) and, for allo, the human figure placed for the label."""
    src, tgt = group.source, group.target
    human = None
    if task == "allo":
        human = _sample_human(rng, group, want, st, ground, human_shape, counts)
    objects = [src, tgt] + ([human] if human else [])
    rules = []
    if task == "ego":
        rules += label_rules(lambda c: c.location, src.location, tgt.location, st.margin_deg, want)
    rules += [("camera_clear", camera_clear(objects + group.clutter, CAMERA_CLEARANCE_CM)),
              ("in_frame", in_frame(objects, IN_FRAME_MARGIN * st.size)),
              ("small_projection", big_enough(objects, st.min_bbox_px))]
    centroid = np.mean([o.centre() for o in objects], axis=0)
    base_z = float(np.mean([o.z for o in objects]))
    cam = resample_while(
        lambda r: sample_camera(r, st.centre, st.cam_xy_range_cm, st.cam_height_range_cm, base_z,
                                tuple(centroid), st.fov_deg, st.size),
        rules, rng, st.max_tries, counts, what=f"{task} camera for label {want!r}")
    observer = cam.location if task == "ego" else human.location
    return View(cam, human, _angle(observer, src.location, tgt.location))


def _sample_human(rng, group: Group, want: str, st: Setting, ground: Ground, shape: AssetShape,
                  counts: Counter) -> Placed:
    """The viewpoint figure: Gaussian around the centre, facing the source (its yaw is not part
    of the label, but a figure looking at the source reads naturally)."""
    src, tgt = group.source, group.target

    def draw(r: np.random.Generator) -> Placed:
        p = sample_object(r, "human", shape, st.centre, st.sigma_cm, ground, yaw=0.0)
        yaw = math.degrees(math.atan2(src.y - p.y, src.x - p.x))
        return Placed("human", shape, p.x, p.y, p.z, yaw)

    rules = label_rules(lambda h: h.location, src.location, tgt.location, st.margin_deg, want)
    rules += [("overlap", no_overlap([src, tgt] + group.clutter, OBJECT_GAP_CM)),
              ("distance", within_distance([src, tgt], st.max_pair_dist_cm))]
    return resample_while(draw, rules, rng, st.max_tries, counts, what=f"allo viewpoint for label {want!r}")


def _angle(observer, source, target) -> float:
    from scenarios.relations import angle_and_cross
    return angle_and_cross(observer, source, target)[0]
