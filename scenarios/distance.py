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

What it costs: this module (its class registers itself: ``@register_scenario``; a scenario outside
this repository is the same class behind an entry point, ``examples/sceneforge-height``); its
command line is generated from :class:`DistanceConfig` (``sceneforge run distance --env desert --n 8 --out D``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from sceneforge.engine.world import instance_color
from sceneforge.scenarios.config import ScenarioConfig, option
from sceneforge.scenarios.output.writers import (
    atomic_write_bytes,
    atomic_write_json,
    encode_image,
    intrinsics,
    npy_bytes,
    pose_block,
)
from sceneforge.scenarios.registry import register_scenario
from sceneforge.scenarios.sampling.pairs import PairMaker, PairScenario, record_path
from sceneforge.scenarios.world.environments import load_env


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
        return self.memo("env", lambda: load_env(self.env))


class Maker(PairMaker):
    """The kit's two-object sampler (:class:`scenarios.sampling.pairs.PairMaker`) with this
    scenario's rule (the label must be clear from the camera) and files."""

    TASK = "distance"

    def camera_rules(self, placed):
        cfg = self.cfg

        def distinct(cam) -> bool:  # the label must be clear: relative gap of the two distances
            da, db = (distance_cm(cam.location, p.centre()) for p in placed)
            return abs(da - db) >= cfg.min_gap * max(da, db)

        return [("ambiguous", distinct)]

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


@register_scenario
class Distance(PairScenario):
    """The scenario: the runner builds it once per process (the config parsed once) and calls its
    steps (the kit's :class:`~scenarios.sampling.pairs.PairScenario`); its own part is its table columns."""

    NAME = "distance"
    Config = DistanceConfig
    MAKER = Maker

    def row(self, rec: dict, i: int) -> dict:
        a, b = rec["objects"]["a"], rec["objects"]["b"]
        return {
            **super().row(rec, i),
            "class_a": a["class"],
            "class_b": b["class"],
            "distance_a_cm": a["distance_cm"],
            "distance_b_cm": b["distance_cm"],
        }


def distance_cm(eye, point) -> float:
    return float(math.dist(tuple(map(float, eye)), tuple(map(float, point))))


def closer(da: float, db: float) -> str:
    """The label: ``a`` when ``a``'s centre is nearer the camera."""
    return "a" if da < db else "b"
