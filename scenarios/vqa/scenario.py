"""Template-VQA images as a render-farm scenario: plan / run / finalize (scenarios.contract).

Sample ``i`` of environment ``e`` is a scene of 3–6 labelled objects (classes of the
environment's triples, Gaussian around the centre, no overlaps) plus the environment's clutter,
seen by a camera drawn until at least ``min_askable`` objects pass CRISP's visibility rule. Its
RNG comes from ``(seed, env, "vqa", i)``, so output does not depend on workers or shards.

Per sample (``<env>/``): ``img_NNNNNN.<fmt>``, ``mask_NNNNNN.png`` (instance colours),
optional ``depth_NNNNNN.npy``, and ``scene_NNNNNN.json`` — the complete scene record (world,
every actor with asset/pose/scale/colour, camera, renderer) and its metric scene graph — written
last, so its presence marks the sample complete. ``finalize`` asks the template questions in index
order (balanced answer positions across the dataset) and writes ``questions.jsonl``,
``samples.parquet`` (one row per image), ``objects.parquet`` (one row per object and image) and
``annotations.coco.json`` (COCO instances, RLE masks).
"""

from __future__ import annotations

import logging
import math
from collections import Counter
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from sceneforge.core.config_names import as_recorded, check_image_size, from_recorded
from sceneforge.core.errors import PlacementError
from sceneforge.scenarios.config import ScenarioConfig, option
from sceneforge.scenarios.contract import JobPlan, Scenario, ServerSpec, Shard, ShardResult
from sceneforge.scenarios.output.writers import atomic_write_bytes, encode_image, kind_bytes, kind_file
from sceneforge.scenarios.pipeline.shard import run_shard
from sceneforge.scenarios.registry import register_scenario
from sceneforge.scenarios.vqa.record import load_scene, scene_path  # noqa: F401  (re-exported)
from sceneforge.engine.world import Camera, instance_color, look_at_rotation
from sceneforge.scenarios.sampling.screens import RASTER_SLACK_PX
from sceneforge.scenarios.vqa.record import record_json, scene_record
from sceneforge.scenarios.vqa.templates import Rules, askable, is_surface, passes  # numpy + math, ~5 ms

log = logging.getLogger(__name__)
OBJECT_GAP_CM = 30.0
SPREAD_SIGMA_CM = (120.0, 320.0)  # labelled objects: Gaussian around the centre, sigma drawn in this range (cm)


_COUNT = (1, float("inf"))


@dataclass(frozen=True)
class VqaConfig(ScenarioConfig):
    SCENARIO = "vqa"
    ALIASES = {"env": "envs", **from_recorded("vqa")}  # + a job.json's size/min_box_px, read back silently

    envs: tuple[str, ...] = option(("desert",), flag="--env", help="environment name(s) or YAML path(s)")
    n: int = option(8, bounds=_COUNT, integer=True, help="images per environment")
    seed: int = option(0, help="random seed")
    image_size: int = option(448, flag="--size", help="square image size (CRISP's 40 px box rule)")
    min_objects: int = option(3, bounds=(2, float("inf")), integer=True, help="labelled objects per scene, at least")
    max_objects: int = option(6, help="labelled objects per scene, at most")
    min_askable: int = option(3, help="objects that must pass the visibility rule in a view")
    clutter: bool = option(True, flag="--no-clutter", help="leave out the environment's background objects")
    image_format: str = option("jpg", flag="--format", choices=("jpg", "png"), help="image format")
    jpeg_quality: int = option(95, bounds=(1, 100), help="JPEG quality, 1..100")
    depth: bool = option(False, help="also write depth (for `sceneforge degrade`)")
    max_scenes: int = option(30, help="fresh scenes per image before giving up")
    max_views: int = option(20, help="camera draws per scene")
    max_tries: int = option(200, help="geometric candidates per draw")
    count_group: int = option(
        6, bounds=(0, 12), integer=True, help="counting: one more class placed 2..N times in each scene (0: none)"
    )
    max_per_category: int = option(2, flag="--per-category", bounds=_COUNT, integer=True, help="questions per category and image")
    min_visible_ratio: float = option(0.8, bounds=(0.0, 1.0), help="CRISP's rule: visible/unoccluded pixels per object")
    min_bbox_px: float = option(40.0, help="CRISP's rule: visible box longest edge >= this many px (scale with --size)")
    margin_deg: float = option(15.0, bounds=(0.0, 44.9), help="direction questions: ambiguity margin, degrees")
    rank_gap: float = option(0.15, bounds=(0.0, 10.0), help="ranking questions: top two differ by at least this much (relative)")
    # the environments' content (scenarios.world.environments.freeze_envs), filled in by parse_config:
    # the job's identity and what workers rebuild the environments from (never looked up by name)
    env_files: dict | None = field(default=None, hash=False, compare=False)

    @property
    def env_names(self) -> tuple[str, ...]:
        """The environments' names (their ``name:`` field) in ``envs`` order: directory names."""
        by_ref = {e["source"]: n for n, e in (self.env_files or {}).items()}
        return tuple(e if e in (self.env_files or {}) else by_ref[e] for e in self.envs)

    def env(self, name: str):
        """The environment ``name`` rebuilt from the recorded content."""
        # pydantic+shapely, ~90 ms: kept off `sceneforge --help` (the CLI parser imports this module)
        from sceneforge.scenarios.world.environments import load_frozen_env

        return self.memo(("env", name), lambda: load_frozen_env(self.env_files, name))

    def to_dict(self) -> dict:
        """As every config's, under the names VQA datasets were first recorded with (``size``,
        ``min_box_px``: core/config_names.RECORDED_AS), so their job.json and fingerprint stay the same."""
        return as_recorded(super().to_dict(), "vqa")

    def check(self, source: str) -> None:
        """Rules between fields (one field's range is its ``option``: n, min_objects, jpeg_quality, ...)."""
        c = self
        check_image_size(c.image_size, source)
        c.need(c.max_objects >= c.min_objects, "max_objects", f"must be >= min_objects ({c.min_objects})", c.max_objects, source)
        c.need(
            1 <= c.min_askable <= c.max_objects,
            "min_askable",
            f"must be in [1, max_objects ({c.max_objects})]",
            c.min_askable,
            source,
        )
        # issue 39: --min-bbox-px nan reached json.dumps in a traceback
        c.need(
            _within(c.min_bbox_px, 0, c.image_size),
            "min_bbox_px",
            f"must be a number in [0, image_size ({c.image_size})]",
            c.min_bbox_px,
            source,
        )
        c.need(c.jpeg_quality == int(c.jpeg_quality), "jpeg_quality", "must be a whole number", c.jpeg_quality, source)
        c.need(c.count_group != 1, "count_group", "must be 0 (no counting group) or 2..12 instances", c.count_group, source)

    def complete(self, source: str) -> "VqaConfig":
        """The environments' content, read once (never looked up by name again)."""
        if self.env_files is not None:
            return self
        # pydantic+shapely, ~90 ms: kept off `sceneforge --help` (the CLI parser imports this module)
        from sceneforge.scenarios.world.environments import freeze_envs

        return replace(self, env_files=freeze_envs(self.envs, f"{source}: envs"))


def parse_config(config: dict, source: str = "vqa config") -> VqaConfig:
    return VqaConfig.from_dict(config, source)


def _within(value, low: float, high: float) -> bool:
    """A real number (not a bool, not NaN) in ``[low, high]``."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and low <= value <= high


def locate(cfg: VqaConfig, index: int) -> tuple[str, int]:
    return cfg.env_names[index // cfg.n], index % cfg.n


def file_names(cfg: VqaConfig, env: str, i: int) -> dict[str, str]:
    n = f"{i:06d}"
    files = {"image": f"{env}/img_{n}.{cfg.image_format}"}
    for key, kind in rendered_kinds(cfg).items():  # mask_N.png, depth_N.npy: as the kind's row says
        files[key] = f"{env}/{key}_{n}.{kind_file(kind)}"
    return files


def rendered_kinds(cfg: VqaConfig) -> dict[str, str]:
    """The files written of the render kinds besides the image: ``{file key: render kind}``."""
    return {"mask": "object_mask", **({"depth": "depth"} if cfg.depth else {})}


# --- contract ---------------------------------------------------------------------------------------
def plan(config: dict) -> JobPlan:
    cfg = parse_config(config)
    return JobPlan(
        n_samples=cfg.n * len(cfg.envs),
        fingerprint=cfg.fingerprint(),
        description=f"{cfg.n * len(cfg.envs)} VQA scenes: {', '.join(cfg.env_names)}",
        config=cfg.to_dict(),
    )


def server_spec(config: dict) -> ServerSpec:
    """Servers serve the default library + every selected environment's asset packs."""
    cfg = parse_config(config)
    packs: list[str] = []
    for name in cfg.env_names:
        packs += [p for p in cfg.env(name).asset_packs() if p not in packs]
    return ServerSpec(assets=tuple(packs))


def run(config: dict, shard: Shard, out_dir: Path, *, server: str, progress=None) -> ShardResult:
    """The shard's scenes in index order, complete ones skipped (:func:`scenarios.pipeline.shard.run_shard`)."""
    cfg, out = parse_config(config), Path(out_dir)  # the runner has claimed ``out``
    return run_shard(
        shard,
        server,
        complete=lambda idx: bool(load_scene(out, *locate(cfg, idx))),
        maker=lambda client, todo: Maker(cfg, client, out),
        progress=progress,
    )


def finalize(config: dict, out_dir: Path) -> dict:
    # ~31 ms: kept off `sceneforge --help` (the CLI parser imports this module)
    from sceneforge.scenarios.vqa.dataset import write_dataset

    cfg = parse_config(config)
    return write_dataset(cfg, Path(out_dir), [locate(cfg, k) for k in range(cfg.n * len(cfg.envs))])


@register_scenario
class Vqa(Scenario):
    """The ``vqa`` scenario: the steps above on the config parsed once (scenarios.contract)."""

    NAME = "vqa"
    Config = VqaConfig

    def plan(self) -> JobPlan:
        return plan(self.config)

    def server_spec(self) -> ServerSpec:
        return server_spec(self.config)

    def run(self, shard: Shard, out_dir: Path, *, server: str, progress=None) -> ShardResult:
        return run(self.config, shard, out_dir, server=server, progress=progress)

    def finalize(self, out_dir: Path) -> dict:
        return finalize(self.config, out_dir)


def with_relations(graph: dict, objs: list, cam) -> dict:
    """``graph`` with every ordered pair's relation (the scene record's contract: all objects,
    clutter included), in :func:`scenarios.output.scene_graph.scene_graph`'s order and key position."""
    # ~4 ms: kept off `sceneforge --help` (the CLI parser imports this module)
    from sceneforge.scenarios.output.scene_graph import relations

    graph["relations"] = relations(objs, cam)
    return graph


# --- making one scene ----------------------------------------------------------------------------------
class Maker:
    def __init__(self, cfg: VqaConfig, client, out: Path):
        self.cfg, self.client, self.out = cfg, client, out
        self._load_env, self._envs, self._shapes, self._world, self._vocab = cfg.env, {}, {}, None, {}

    def env(self, name: str):
        if name not in self._envs:
            # shapely, ~19 ms: kept off `sceneforge --help` (the CLI parser imports this module)
            from sceneforge.scenarios.sampling.shapes import ShapeCache

            env = self._load_env(name)
            self._envs[name] = env
            self._shapes[name] = ShapeCache(env.library, lambda cls, e=env: e.variants(cls, e.library))
        return self._envs[name]

    def make_sample(self, index: int, upcoming=()) -> dict:
        """Scene ``index`` of the job (the shard skeleton's call)."""
        return self.make(*locate(self.cfg, index))

    def make(self, env_name: str, i: int) -> dict:
        # shapely, ~16 ms: kept off `sceneforge --help` (the CLI parser imports this module)
        from sceneforge.scenarios.sampling.rejection import sample_rng

        env = self.env(env_name)
        rng = sample_rng(self.cfg.seed, env_name, "vqa", "scene", i)
        counts: Counter = Counter()
        self.last_counts = counts  # scenes drawn, views tried, rejections by rule: for benchmarks and tests
        for _ in range(self.cfg.max_scenes):
            counts["scenes"] += 1
            try:
                placed, actors = self.place(env, env_name, rng, counts)
            except PlacementError:
                counts["placement"] += 1
                continue
            rec = self.view(env, env_name, i, rng, placed, actors, counts)
            if rec is not None:
                return rec
        raise PlacementError(
            f"{env_name} vqa scene {i}: no view with {self.cfg.min_askable} askable objects in "
            f"{self.cfg.max_scenes} scenes: {dict(sorted(counts.items()))}",
            rule=(counts.most_common(1) or [("none", 0)])[0][0],
            tries=sum(counts.values()),
            rejections=dict(counts),
        )

    def place(self, env, env_name: str, rng, counts):
        from dataclasses import replace

        # shapely, ~16 ms: kept off `sceneforge --help` (the CLI parser imports this module)
        from sceneforge.scenarios.sampling.rejection import no_overlap, resample_while, sample_object

        s, shapes = env.sampling, self._shapes[env_name]
        classes = sorted({c for t in env.triples for c in (t.source_class, t.target_class)})
        group = self.cfg.count_group >= 2 and len(classes) > self.cfg.min_objects
        top = min(self.cfg.max_objects, len(classes) - 1 if group else len(classes))
        k = int(rng.integers(self.cfg.min_objects, top + 1))
        order = [classes[j] for j in rng.permutation(len(classes))]
        if group:  # one more class, 2..count_group instances: counting questions with answers that vary;
            # preferably a class the clutter never has (a clutter cactus in view makes the cacti uncountable)
            clutter = {c for g in env.spec.clutter for c in g.classes}
            last = next((c for c in reversed(order) if c not in clutter), order[-1])
            order = [c for c in order if c != last] + [last]
            chosen = order[:k] + [last] * int(rng.integers(2, self.cfg.count_group + 1))
        else:
            chosen = order[:k]
        # tighter than SpaRRTa's pairs: every object must be in the frame AND >= min_bbox_px (40 px
        # of 448: a 70 cm cone within ~8 m), which a 10 m spread rarely allows
        # the spread drawn per scene: tight groups seen from near, wide ones from far, so distances vary
        sigma = min(s.sigma_cm, float(rng.uniform(*SPREAD_SIGMA_CM)))
        placed = []
        for j, cls in enumerate(chosen):
            shape = shapes.pick(rng, cls)
            placed.append(
                resample_while(
                    lambda r, sh=shape, n=f"obj_{j}": sample_object(r, n, sh, s.centre_cm, sigma, env.ground),
                    [("overlap", no_overlap(placed, OBJECT_GAP_CM))],
                    rng,
                    self.cfg.max_tries,
                    counts,
                    what=f"placing {cls}",
                )
            )
        actors = [p.actor(instance_color(j)) for j, p in enumerate(placed)]
        if self.cfg.clutter:
            keep = [(p.x, p.y, float(np.max(np.hypot(*p.shape.footprint.T))) + 150.0) for p in placed]
            actors += [
                replace(a, color=instance_color(100 + n)) for n, a in enumerate(env.clutter(rng, keep, library=shapes.lib))
            ]
        return placed, actors

    def view(self, env, env_name, i, rng, placed, actors, counts) -> dict | None:
        """The first of ``max_views`` camera draws with ``min_askable`` askable labelled objects, written;
        None when none has (the caller draws a new scene).

        Why in stages: most draws are rejected (a cone 25 m away is 12 px). A draw must first pass
        geometry (camera clear, every labelled object's prism in the frame, ``min_askable`` of them
        projecting >= ``min_bbox_px``); then the server counts the labelled objects' pixels only
        (3-12 names, not the ~70 of a city); only a view that passes is measured in full
        (:meth:`measure`: every object, the part outside the frame) and rendered, and it is
        judged again on those final numbers (:meth:`judge`)."""
        # shapely, ~16 ms: kept off `sceneforge --help` (the CLI parser imports this module)
        from sceneforge.scenarios.sampling.rejection import camera_clear, in_frame, resample_while

        s, cfg = env.sampling, self.cfg
        if self._world != env_name:
            self.client.set_world(env.world)
            self._world = env_name
        self.client.reset()
        self.client.spawn(actors)
        colors = self.client.object_colors([a.name for a in actors])  # one request
        centroid = np.mean([p.centre() for p in placed], axis=0)
        base_z = float(np.mean([p.z for p in placed]))
        rules = Rules(cfg.min_visible_ratio, cfg.min_bbox_px, cfg.margin_deg, cfg.rank_gap)
        objs = self.objects(env_name, actors, colors)  # the same for every view of this scene
        labelled = [p.name for p in placed]
        nameable = _unique_class(objs, labelled)  # a class placed twice or more is counted, never named
        rules_geo = [
            ("camera_clear", camera_clear(placed, 50.0)),
            ("in_frame", in_frame(placed, 2.0)),
            ("small_projection", _enough_big([p for p in placed if p.name in nameable], cfg.min_bbox_px, cfg.min_askable)),
        ]
        near, far = _camera_range(
            placed, nameable, cam_focal(s.fov_deg, cfg.image_size), cfg.min_bbox_px, cfg.min_askable, s.fov_deg
        )
        if near > far:  # spread too wide for its objects to be both in the frame and big enough: redraw
            counts["spread"] += 1
            return None
        for _ in range(cfg.max_views):
            counts["views"] += 1
            try:
                cam = resample_while(
                    lambda r: _orbit_camera(r, centroid, base_z, near, far, s.cam_height_range_cm, s.fov_deg, cfg.image_size),
                    rules_geo,
                    rng,
                    cfg.max_tries,
                    counts,
                    what="vqa camera",
                )
            except PlacementError:
                return None
            quick = self.client.visibility(0, labelled, camera=cam)
            # visible / in-frame pixels bounds the final ratio (visible / alone) from above
            ok = sum(passes(_node(quick[n].visible, quick[n].unoccluded, quick[n].bbox), rules) for n in nameable if n in quick)
            if ok < cfg.min_askable:
                counts["too_few_askable"] += 1
                continue
            group = [n for n in labelled if n not in nameable]
            if not all(passes(_node(quick[n].visible, quick[n].unoccluded, quick[n].bbox), rules) for n in group if n in quick):
                counts["group_not_countable"] += 1  # the counting group must be countable too (else redraw)
                continue
            rec = self.write_if_askable(env, env_name, i, actors, colors, objs, cam, rules, counts)
            if rec is not None:
                return rec
        return None

    def measure(self, objs: list, cam, mask) -> dict:
        """Every object's pixels, as the record states them: ``visible`` and ``bbox`` from the
        written ``mask`` (H, W, 3: instance colours), ``unoccluded`` (alone, in the frame) from the
        server, and ``alone``: the pixels the object covers alone on an unbounded image plane.

        ``alone`` = ``unoccluded`` when the object's 3-D box projects inside the frame; else it is
        counted on a camera with the same pose and focal length and a canvas enlarged by half the
        image on each side (pixel (u, v) of the image is pixel (u + m, v + m) there), and is None
        (unknown, the object fails the rule) when the object reaches beyond that canvas or behind
        the camera: a border-cut object is then judged on the part a person actually sees."""
        names = [o.name for o in objs]
        full = self.client.visibility(0, names, camera=cam)
        visible, boxes = _mask_counts(mask, {o.name: o.actor.color for o in objs})
        out = {}
        cut = []
        w, h = cam.width, cam.height
        for o in objs:
            uv, depth = cam.project(o.static[1]["corners"])
            inside = bool(np.all(depth > 1.0) and np.all((uv >= 0) & (uv <= (w, h))))
            pc = full[o.name]
            out[o.name] = {"visible": visible.get(o.name, 0), "unoccluded": pc.unoccluded, "bbox": boxes.get(o.name)}
            out[o.name]["alone"] = pc.unoccluded if inside else None
            if not inside and visible.get(o.name, 0) > 0 and np.all(depth > 1.0):
                cut.append(o.name)
        if cut:
            m_x, m_y = w // 2, h // 2
            big = _enlarged(cam, m_x, m_y)
            for n, pc in self.client.visibility(0, cut, camera=big).items():
                if pc.bbox is not None:
                    x0, y0, x1, y1 = pc.bbox
                    if x0 > 0 and y0 > 0 and x1 < big.width - 1 and y1 < big.height - 1:
                        out[n]["alone"] = pc.unoccluded
        return out

    def write_if_askable(self, env, env_name, i, actors, colors, objs, cam, rules, counts) -> dict | None:
        """Render the view, measure it (:meth:`measure`) and write it when ``min_askable`` labelled
        objects are still askable on the final numbers; else None (nothing written)."""

        cfg = self.cfg
        more = rendered_kinds(cfg)
        img = self.client.render(0, ("lit", *more.values()), camera=cam)
        vis = self.measure(objs, cam, img["object_mask"])
        graph = vqa_pixels(self.graph(env_name, objs, cam, vis), vis)
        graph["classes"] = self.vocabulary(env_name)  # what "how many X" may ask about (0 included)
        if sum(o["role"] == "object" for o in askable(graph, rules)) < cfg.min_askable:
            counts["border_cut"] += 1  # the final numbers (the part outside the frame, the mask) fail
            return None
        graph = with_relations(graph, objs, cam)
        files = file_names(cfg, env_name, i)
        atomic_write_bytes(self.out / files["image"], encode_image(img["lit"], cfg.image_format, cfg.jpeg_quality))
        for key, kind in more.items():
            atomic_write_bytes(self.out / files[key], kind_bytes(kind, img[kind]))
        rec = scene_record(
            env_name, i, cfg.seed, env.world, actors, colors, cam, files, cfg.image_format, cfg.jpeg_quality, graph
        )
        atomic_write_bytes(scene_path(self.out, env_name, i), record_json(rec).encode("utf-8"))
        return rec

    def vocabulary(self, env_name: str) -> list[str]:
        """The thing classes a VQA scene of the environment may hold (its triples' source and target
        classes and its clutter, no surfaces), sorted: a counting question may ask about any of
        them, and 0 is the answer for those not in view."""

        if env_name in self._vocab:
            return self._vocab[env_name]
        env, lib = self._envs[env_name], self._shapes[env_name].lib
        out = set()
        placed = {c for t in env.triples for c in (t.source_class, t.target_class)}  # never the viewpoint human
        for cls in sorted(placed | {c for g in env.spec.clutter for c in g.classes}):
            for a in env.variants(cls, lib):
                info = lib.info(a)
                if "ground" not in info.tags and not is_surface(info.cls, lib.size_cm(a)):
                    out.add(info.cls)
        self._vocab[env_name] = sorted(out)
        return self._vocab[env_name]

    def objects(self, env_name: str, actors, colors) -> list:
        """The scene's objects (:class:`~scenarios.output.scene_graph.SceneObject`: actors with their server
        colours, class, unscaled size in cm): built once per scene, shared by all its views."""
        from dataclasses import replace

        # ~4 ms: kept off `sceneforge --help` (the CLI parser imports this module)
        from sceneforge.scenarios.output.scene_graph import SceneObject

        lib = self._shapes[env_name].lib
        out = []
        for a in actors:
            info, size = lib.info(a.asset_id), tuple(float(v) for v in lib.size_cm(a.asset_id))
            scaled = np.abs(np.asarray(size) * np.asarray(a.transform.scale))
            if "ground" in info.tags or is_surface(info.cls, scaled):
                role = "ground"  # streets, water, dunes: never named by a question (templates.is_surface)
            else:
                role = "object" if a.name.startswith("obj_") else "clutter"
            out.append(SceneObject(replace(a, color=colors[a.name]), info.cls, size, role))
        return out

    def graph(self, env_name: str, objs: list, cam, vis) -> dict:
        """The view's graph without relations (``relations: []``): enough for the visibility rule.
        A city scene has ~68 objects = ~4,600 ordered pairs, and most views are rejected, so the
        relations are added (:func:`with_relations`) only to the view that is written."""
        # ~4 ms: kept off `sceneforge --help` (the CLI parser imports this module)
        from sceneforge.scenarios.output.scene_graph import scene_graph

        return scene_graph(objs, cam, world=self._envs[env_name].world, visibility=vis, relate=())


# --- pixels ----------------------------------------------------------------------------------------
def _node(visible: int, unoccluded: int, bbox) -> dict:
    """The fields :func:`templates.passes` reads, from one pixel count."""
    return {"visible_ratio": visible / unoccluded if unoccluded else 0.0, "box2d": list(bbox) if bbox else None}


def _unique_class(objs: list, names: list[str]) -> set[str]:
    """The names among ``names`` whose class no other of ``names`` has (the nameable labelled objects)."""
    by = {o.name: o.cls for o in objs}
    n = Counter(by[x] for x in names)
    return {x for x in names if n[by[x]] == 1}


def _enough_big(placed: list, min_px: float, k: int):
    """Geometric rule: at least ``k`` of ``placed`` project a prism whose longest edge reaches
    ``min_px`` (less the raster slack). The prism's box bounds the mask's box from above, so it only
    rejects views the pixel rule would reject too, without a server round trip."""
    prisms = [p.corners() for p in placed]

    def ok(cam) -> bool:
        n = 0
        for pts in prisms:
            uv, _ = cam.project(pts)
            n += bool(np.max(uv.max(axis=0) - uv.min(axis=0)) >= min_px - RASTER_SLACK_PX)
        return n >= k

    return ok


def cam_focal(fov_deg: float, size: int) -> float:
    """Focal length in pixels of a square ``size`` image with horizontal FOV ``fov_deg``."""
    return (size / 2.0) / math.tan(math.radians(fov_deg) / 2.0)


def _camera_range(placed: list, nameable: set, focal: float, min_px: float, k: int, fov_deg: float) -> tuple[float, float]:
    """Horizontal distances from the objects' centroid within which a camera can see every placed
    object in the frame (``near``) and ``k`` nameable ones at >= ``min_px`` (``far``); near > far:
    no camera can (the scene is redrawn without a single render)."""
    c = np.mean([p.centre() for p in placed], axis=0)
    pts = np.vstack([p.corners() for p in placed])
    spread = float(np.max(np.hypot(pts[:, 0] - c[0], pts[:, 1] - c[1])))
    # a lower bound (the farthest point rarely lies across the line of sight; ``in_frame`` decides)
    near = 0.6 * spread / math.tan(math.radians(fov_deg) / 2.0)
    sizes = sorted(
        (
            max(p.shape.height, float(np.ptp(p.corners()[:, 0])), float(np.ptp(p.corners()[:, 1])))
            for p in placed
            if p.name in nameable
        ),
        reverse=True,
    )
    if len(sizes) < k:
        return near, -1.0
    far = focal * sizes[k - 1] / max(min_px, 1.0) + spread
    return near, far


def _orbit_camera(rng, centroid, base_z: float, near: float, far: float, heights, fov_deg: float, size: int):
    """A camera at a horizontal distance log-uniform in [near, far] from ``centroid``, any azimuth,
    ``base_z`` + a height from ``heights`` (at most the distance: pitch <= 45°), aimed at it."""
    r = float(math.exp(rng.uniform(math.log(near), math.log(far))))  # log-uniform: as many near views as far
    az = float(rng.uniform(0.0, 2.0 * math.pi))
    lo, hi = float(heights[0]), float(heights[1])
    z = base_z + float(rng.uniform(lo, max(lo, min(hi, r))))
    eye = (centroid[0] + r * math.cos(az), centroid[1] + r * math.sin(az), z)
    return Camera(eye, look_at_rotation(eye, tuple(float(v) for v in centroid)), fov_deg, size, size)


def _enlarged(cam, m_x: int, m_y: int):
    """``cam`` with the same pose and focal length and ``m_x`` / ``m_y`` more pixels on each side."""
    w = cam.width + 2 * m_x
    fov = 2.0 * float(np.degrees(np.arctan((w / 2.0) / cam.focal_px)))
    return Camera(cam.location, cam.rotation, fov, w, cam.height + 2 * m_y)


def _mask_counts(mask: np.ndarray, colors: dict) -> tuple[dict[str, int], dict[str, list[int]]]:
    """Visible pixels and inclusive box ``[x0, y0, x1, y1]`` of each named colour in ``mask``."""
    m = np.asarray(mask).astype(np.int64)
    code = (m[..., 0] << 16) | (m[..., 1] << 8) | m[..., 2]
    by_code = {(int(r) << 16) | (int(g) << 8) | int(b): n for n, (r, g, b) in colors.items()}
    flat = code.ravel()
    values, counts = np.unique(flat, return_counts=True)
    visible, boxes = {}, {}
    for v, c in zip(values.tolist(), counts.tolist()):
        name = by_code.get(v)
        if name is None:
            continue
        ys, xs = np.nonzero(code == v)
        visible[name] = int(c)
        boxes[name] = [int(xs.min()), int(ys.min()), int(xs.max()), int(ys.max())]
    return visible, boxes


def vqa_pixels(graph: dict, vis: dict) -> dict:
    """``graph``'s nodes with ``alone_px`` and the VQA ``visible_ratio`` = visible / alone (0 when
    the object's extent is unknown): the part outside the frame counts as not visible."""
    for o in graph["objects"]:
        v = vis[o["name"]]
        alone = v.get("alone")
        o["alone_px"] = alone
        o["visible_ratio"] = round(v["visible"] / alone, 6) if alone else 0.0
    return graph
