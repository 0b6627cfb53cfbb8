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
from collections import Counter
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from sceneforge.core.config_names import as_recorded, check_image_size, from_recorded
from sceneforge.core.errors import PlacementError
from sceneforge.scenarios.config import ScenarioConfig, option
from sceneforge.scenarios.contract import JobPlan, ServerSpec, Shard, ShardResult
from sceneforge.scenarios.output.writers import atomic_write_bytes, atomic_write_json, encode_image, kind_bytes, kind_file
from sceneforge.scenarios.pipeline.shard import run_shard
from sceneforge.scenarios.vqa.record import load_scene, scene_path  # noqa: F401  (re-exported)
from sceneforge.engine.world import instance_color
from sceneforge.scenarios.vqa.record import scene_record

log = logging.getLogger(__name__)
NEEDS_SERVER = True
OBJECT_GAP_CM = 30.0


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

        return load_frozen_env(self.env_files, name)

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

    def complete(self, source: str) -> "VqaConfig":
        """The environments' content, read once (never looked up by name again)."""
        if self.env_files is not None:
            return self
        # pydantic+shapely, ~90 ms: kept off `sceneforge --help` (the CLI parser imports this module)
        from sceneforge.scenarios.world.environments import freeze_envs

        return replace(self, env_files=freeze_envs(self.envs, f"{source}: envs"))


NAME = "vqa"
Config = VqaConfig  # the registry's name for a scenario's config class


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
        self._load_env, self._envs, self._shapes, self._world = cfg.env, {}, {}, None

    def env(self, name: str):
        if name not in self._envs:
            # shapely, ~19 ms: kept off `sceneforge --help` (the CLI parser imports this module)
            from sceneforge.scenarios.sparrta.scene import ShapeCache

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
        for _ in range(self.cfg.max_scenes):
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
        k = int(rng.integers(self.cfg.min_objects, self.cfg.max_objects + 1))
        chosen = [classes[j] for j in rng.permutation(len(classes))[:k]]
        placed = []
        for j, cls in enumerate(chosen):
            shape = shapes.pick(rng, cls)
            placed.append(
                resample_while(
                    lambda r, sh=shape, n=f"obj_{j}": sample_object(r, n, sh, s.centre_cm, s.sigma_cm, env.ground),
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
        # shapely, ~16 ms: kept off `sceneforge --help` (the CLI parser imports this module)
        from sceneforge.scenarios.sampling.rejection import camera_clear, in_frame, resample_while, sample_camera

        # ~3 ms: kept off `sceneforge --help` (the CLI parser imports this module)
        from sceneforge.scenarios.vqa.templates import Rules, passes

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
        names = [a.name for a in actors]
        objs = self.objects(env_name, actors, colors)  # the same for every view of this scene
        for _ in range(cfg.max_views):
            try:
                cam = resample_while(
                    lambda r: sample_camera(
                        r,
                        s.centre_cm,
                        s.cam_xy_range_cm,
                        s.cam_height_range_cm,
                        base_z,
                        tuple(centroid),
                        s.fov_deg,
                        cfg.image_size,
                    ),
                    [("camera_clear", camera_clear(placed, 50.0)), ("in_frame", in_frame(placed, 2.0))],
                    rng,
                    cfg.max_tries,
                    counts,
                    what="vqa camera",
                )
            except PlacementError:
                return None
            vis = {
                n: {"visible": v.visible, "unoccluded": v.unoccluded, "bbox": list(v.bbox) if v.bbox else None}
                for n, v in self.client.visibility(0, names, camera=cam).items()
            }
            graph = self.graph(env_name, objs, cam, vis)
            n_ok = sum(passes(o, rules) for o in graph["objects"] if o["role"] == "object")
            if n_ok >= cfg.min_askable:
                return self.write(env, env_name, i, actors, colors, cam, with_relations(graph, objs, cam))
            counts["too_few_askable"] += 1
        return None

    def objects(self, env_name: str, actors, colors) -> list:
        """The scene's objects (:class:`~scenarios.output.scene_graph.SceneObject`: actors with their server
        colours, class, unscaled size in cm): built once per scene, shared by all its views."""
        from dataclasses import replace

        # ~4 ms: kept off `sceneforge --help` (the CLI parser imports this module)
        from sceneforge.scenarios.output.scene_graph import SceneObject

        lib = self._shapes[env_name].lib
        return [
            SceneObject(
                replace(a, color=colors[a.name]),
                lib.info(a.asset_id).cls,
                tuple(float(v) for v in lib.size_cm(a.asset_id)),
                "object" if a.name.startswith("obj_") else "clutter",
            )
            for a in actors
        ]

    def graph(self, env_name: str, objs: list, cam, vis) -> dict:
        """The view's graph without relations (``relations: []``): enough for the visibility rule.
        A city scene has ~68 objects = ~4,600 ordered pairs, and most views are rejected, so the
        relations are added (:func:`with_relations`) only to the view that is written."""
        # ~4 ms: kept off `sceneforge --help` (the CLI parser imports this module)
        from sceneforge.scenarios.output.scene_graph import scene_graph

        return scene_graph(objs, cam, world=self._envs[env_name].world, visibility=vis, relate=())

    def write(self, env, env_name, i, actors, colors, cam, graph) -> dict:
        cfg = self.cfg
        more = rendered_kinds(cfg)
        img = self.client.render(0, ("lit", *more.values()), camera=cam)
        files = file_names(cfg, env_name, i)
        atomic_write_bytes(self.out / files["image"], encode_image(img["lit"], cfg.image_format, cfg.jpeg_quality))
        for key, kind in more.items():
            atomic_write_bytes(self.out / files[key], kind_bytes(kind, img[kind]))
        rec = scene_record(
            env_name, i, cfg.seed, env.world, actors, colors, cam, files, cfg.image_format, cfg.jpeg_quality, graph
        )
        atomic_write_json(scene_path(self.out, env_name, i), rec)
        return rec
