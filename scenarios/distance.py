"""``distance``: which of two objects is closer to the camera. A scenario built from the kit alone.

Sample ``i`` of environment ``e`` places two objects of the environment's triple classes (``a``
and ``b``, Gaussian around the sampling centre, no overlap), draws a camera until both pass the
visibility rule, and labels the image ``a`` or ``b``: the object whose centre (the middle of its
standing box) is nearer the camera, in 3-D, in cm. The label is exact geometry, never a guess
from pixels; pairs whose distances differ by less than ``min_gap`` (relative) are redrawn, so a
viewer of the image would not dispute it. RNG from ``(seed, env, "distance", i)``.

Files (``OUT/<env>/``): ``img_NNNNNN.<fmt>``, ``mask_NNNNNN.png`` (instance colours: ``a`` is
``instance_color(0)``, ``b`` ``instance_color(1)``), optional ``depth_NNNNNN.npy`` and
``sample_NNNNNN.json`` (camera, both objects' pose, class, colour and distance, the label), written
last so it marks the sample complete. ``finalize`` writes ``samples.parquet``/``metadata.csv``.

What it costs: this module and one line in :data:`scenarios.registry.BUILTIN`; its command line
is generated from :class:`DistanceConfig` (``sceneforge run distance --env desert --n 8 --out D``).
"""

from __future__ import annotations

import json
import math
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from sceneforge.core.errors import PlacementError
from sceneforge.core.visibility import visibility_failure
from sceneforge.engine.world import instance_color
from sceneforge.scenarios.config import ScenarioConfig, option
from sceneforge.scenarios.contract import JobPlan, ServerSpec, Shard, ShardResult
from sceneforge.scenarios.output.writers import (
    atomic_write_bytes,
    atomic_write_json,
    encode_image,
    intrinsics,
    npy_bytes,
    pose_block,
    write_table,
)
from sceneforge.scenarios.pipeline.shard import run_shard

# Imported inside functions: environments (pydantic, ~0.3 s), sampling.rejection (shapely) and
# sparrta.scene, because `sceneforge run` reads Config from this module while building its parser.

NAME = "distance"
LABELS = ("a", "b")


@dataclass(frozen=True)
class DistanceConfig(ScenarioConfig):
    SCENARIO = "distance"

    env: str = option("desert", help="environment name or YAML path")
    n: int = option(8, integer=True, bounds=(1, 1_000_000), help="images")
    seed: int = option(0, integer=True, bounds=(0, 2**63 - 1), help="random seed")
    image_size: int = option(224, integer=True, bounds=(16, 4096), flag="--size", help="square image size, px")
    image_format: str = option("jpg", choices=("jpg", "png"), flag="--format", help="image format")
    depth: bool = option(False, help="also write depth_NNNNNN.npy (ray depth, cm)")
    min_gap: float = option(0.2, bounds=(0.0, 0.9), help="the farther centre is at least this much (relative) farther")
    min_visible_ratio: float = option(0.5, bounds=(0.0, 1.0), help="visible/unoccluded pixels per object")
    min_bbox_px: float = option(8.0, bounds=(0.0, 4096.0), help="longest edge of each object's visible box, px")
    max_tries: int = option(400, integer=True, bounds=(1, 100_000), help="geometric candidates per draw")
    max_views: int = option(20, integer=True, bounds=(1, 1000), help="rendered visibility checks per sample")

    def check(self, source: str) -> None:
        self.need(
            self.min_bbox_px <= self.image_size,
            "min_bbox_px",
            f"must be <= image_size={self.image_size}",
            self.min_bbox_px,
            source,
        )

    def load_env(self):
        # pydantic+shapely, ~90 ms: kept off `sceneforge --help` (the CLI parser imports this module)
        from sceneforge.scenarios.world.environments import load_env

        return load_env(self.env)


Config = DistanceConfig


def plan(config: dict) -> JobPlan:
    cfg = Config.from_dict(config)
    return JobPlan(cfg.n, cfg.fingerprint(), f"{cfg.n} distance images: {cfg.env}", config=cfg.to_dict())


def server_spec(config: dict) -> ServerSpec:
    return ServerSpec(assets=tuple(Config.from_dict(config).load_env().asset_packs()))


def record_path(out: Path, cfg: DistanceConfig, i: int) -> Path:
    return out / Path(cfg.env).stem / f"sample_{i:06d}.json"


def run(config: dict, shard: Shard, out_dir: Path, *, server: str, progress=None) -> ShardResult:
    cfg, out = Config.from_dict(config), Path(out_dir)
    return run_shard(
        shard,
        server,
        complete=lambda i: record_path(out, cfg, i).is_file(),
        maker=lambda client, todo: Maker(cfg, client, out),
        progress=progress,
    )


def finalize(config: dict, out_dir: Path) -> dict:
    cfg, out = Config.from_dict(config), Path(out_dir)
    rows = []
    for i in range(cfg.n):
        rec = json.loads(record_path(out, cfg, i).read_text())
        rows.append(
            {
                "file_name": rec["files"]["image"],
                "label": rec["label"],
                "env": rec["env"],
                "index": i,
                "class_a": rec["objects"]["a"]["class"],
                "class_b": rec["objects"]["b"]["class"],
                "distance_a_cm": rec["objects"]["a"]["distance_cm"],
                "distance_b_cm": rec["objects"]["b"]["distance_cm"],
            }
        )
    write_table(rows, out)
    return {"samples": len(rows), "by_label": dict(sorted(Counter(r["label"] for r in rows).items()))}


class Maker:
    """Makes one sample at a time on one render client (see :func:`scenarios.pipeline.shard.run_shard`)."""

    def __init__(self, cfg: DistanceConfig, client, out: Path):
        # shapely, ~19 ms: kept off `sceneforge --help` (the CLI parser imports this module)
        from sceneforge.scenarios.sparrta.scene import ShapeCache

        self.cfg, self.client, self.out = cfg, client, out
        self.env = cfg.load_env()
        self.name = Path(cfg.env).stem
        self.shapes = ShapeCache(self.env.library, lambda c: self.env.variants(c, self.env.library))
        self.world_set = False

    def make_sample(self, i: int, upcoming=()) -> dict:
        # shapely, ~16 ms: kept off `sceneforge --help` (the CLI parser imports this module)
        from sceneforge.scenarios.sampling.rejection import sample_rng

        rng = sample_rng(self.cfg.seed, self.name, "distance", "pair", i)
        counts: Counter = Counter()
        for _ in range(self.cfg.max_views):
            placed = self.place(rng, counts)
            cam = self.camera(rng, placed, counts)
            vis = self.visible(placed, cam)
            if vis is None:
                return self.write(i, placed, cam, counts)
            counts[vis] += 1
        raise PlacementError(
            f"{self.name} distance sample {i}: no view in {self.cfg.max_views}: {dict(sorted(counts.items()))}",
            rule=counts.most_common(1)[0][0],
            tries=sum(counts.values()),
            rejections=dict(counts),
        )

    def place(self, rng, counts):
        # shapely, ~16 ms: kept off `sceneforge --help` (the CLI parser imports this module)
        from sceneforge.scenarios.sampling.rejection import no_overlap, resample_while, sample_object

        s = self.env.sampling
        classes = sorted({c for t in self.env.triples for c in (t.source_class, t.target_class)})
        placed = []
        for name in LABELS:
            shape = self.shapes.pick(rng, classes[int(rng.integers(len(classes)))])
            placed.append(
                resample_while(
                    lambda r, sh=shape, n=name: sample_object(r, n, sh, s.centre_cm, s.sigma_cm, self.env.ground),
                    [("overlap", no_overlap(placed, 30.0))],
                    rng,
                    self.cfg.max_tries,
                    counts,
                    what=f"placing {name}",
                )
            )
        return placed

    def camera(self, rng, placed, counts):
        # shapely, ~16 ms: kept off `sceneforge --help` (the CLI parser imports this module)
        from sceneforge.scenarios.sampling.rejection import camera_clear, in_frame, resample_while, sample_camera

        s, cfg = self.env.sampling, self.cfg
        aim = tuple(np.mean([p.centre() for p in placed], axis=0))
        base_z = float(np.mean([p.z for p in placed]))

        def distinct(cam) -> bool:  # the label must be clear: relative gap of the two distances
            da, db = (distance_cm(cam.location, p.centre()) for p in placed)
            return abs(da - db) >= cfg.min_gap * max(da, db)

        return resample_while(
            lambda r: sample_camera(
                r, s.centre_cm, s.cam_xy_range_cm, s.cam_height_range_cm, base_z, aim, s.fov_deg, cfg.image_size
            ),
            [("camera_clear", camera_clear(placed, 50.0)), ("in_frame", in_frame(placed, 2.0)), ("ambiguous", distinct)],
            rng,
            cfg.max_tries,
            counts,
            what="distance camera",
        )

    def visible(self, placed, cam) -> str | None:
        if not self.world_set:
            self.client.set_world(self.env.world)
            self.world_set = True
        self.client.reset()
        self.client.spawn([p.actor(instance_color(k)) for k, p in enumerate(placed)])
        counts = self.client.visibility(0, list(LABELS), camera=cam)
        return visibility_failure(counts, LABELS, self.cfg.min_visible_ratio, self.cfg.min_bbox_px)

    def write(self, i: int, placed, cam, counts) -> dict:
        cfg, stem = self.cfg, f"{self.name}/%s_{i:06d}"
        kinds = ("lit", "object_mask") + (("depth",) if cfg.depth else ())
        img = self.client.render(0, kinds, camera=cam)
        files = {"image": stem % "img" + "." + cfg.image_format, "mask": stem % "mask" + ".png"}
        atomic_write_bytes(self.out / files["image"], encode_image(img["lit"], cfg.image_format))
        atomic_write_bytes(self.out / files["mask"], encode_image(img["object_mask"], "png"))
        if cfg.depth:
            files["depth"] = stem % "depth" + ".npy"
            atomic_write_bytes(self.out / files["depth"], npy_bytes(img["depth"].astype("float32")))
        dist = {p.name: distance_cm(cam.location, p.centre()) for p in placed}
        rot = cam.rotation
        rec = {
            "env": self.name,
            "index": i,
            "label": closer(dist["a"], dist["b"]),
            "files": files,
            "camera": {**pose_block(cam.location, (rot.pitch, rot.yaw, rot.roll)), **intrinsics(cam)},
            "objects": {
                p.name: {
                    "class": p.shape.cls,
                    "asset": p.shape.asset_id,
                    "location": list(p.location),
                    "centre": [float(v) for v in p.centre()],
                    "yaw": p.yaw,
                    "color": list(instance_color(k)),
                    "distance_cm": dist[p.name],
                }
                for k, p in enumerate(placed)
            },
            "rejections": dict(sorted(counts.items())),
        }
        atomic_write_json(record_path(self.out, cfg, i), rec)
        return rec


def distance_cm(eye, point) -> float:
    return float(math.dist(tuple(map(float, eye)), tuple(map(float, point))))


def closer(da: float, db: float) -> str:
    """The label: ``a`` when ``a``'s centre is nearer the camera."""
    return "a" if da < db else "b"
