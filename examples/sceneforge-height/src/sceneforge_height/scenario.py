"""``height``: which of two objects reaches higher. A scenario outside sceneforge's tree.

Sample ``i`` of environment ``e`` places two objects of the environment's triple classes (``a``
and ``b``: the kit's two-object sampler, :class:`sceneforge.scenarios.sampling.pairs.PairMaker`),
draws a camera until both pass the server's visibility rule, and labels the image ``a`` or ``b``:
the object whose **top** (its base on the terrain + the asset's height, world Z, cm) is higher.
The label is 3-D geometry, never a guess from pixels: a pair whose tops differ by less than
``min_gap_cm`` is redrawn (rule ``ambiguous``), so nobody looking at the image would dispute it.
That is not the same question as "which looks taller in the image" (a near small object can
cover more rows than a far tall one): models that read image height instead of 3-D height fail.

Files (``OUT/<env>/``): ``img_NNNNNN.<fmt>``, ``mask_NNNNNN.png`` (``a`` has instance colour 0,
``b`` colour 1), ``sample_NNNNNN.json`` (camera, each object's class, asset, base, height and top,
the label) written last so it marks the sample complete; ``finalize`` writes
``samples.parquet``/``metadata.csv``.
"""

from __future__ import annotations

from dataclasses import dataclass

from sceneforge.engine.world import instance_color
from sceneforge.scenarios.config import ScenarioConfig, option
from sceneforge.scenarios.output.writers import (
    atomic_write_bytes,
    atomic_write_json,
    encode_image,
    intrinsics,
    pose_block,
)
from sceneforge.scenarios.registry import register_scenario
from sceneforge.scenarios.sampling.pairs import PairMaker, PairScenario, record_path
from sceneforge.scenarios.world.environments import load_env


@dataclass(frozen=True)
class HeightConfig(ScenarioConfig):
    SCENARIO = "height"  # error sources say "height config: ..."

    env: str = option("desert", help="environment name or YAML path")
    n: int = option(8, integer=True, bounds=(1, 1_000_000), help="images")
    seed: int = option(0, integer=True, bounds=(0, 2**63 - 1), help="random seed")
    image_size: int = option(224, integer=True, bounds=(16, 4096), flag="--size", help="square image size, px")
    image_format: str = option("jpg", choices=("jpg", "png"), flag="--format", help="image format")
    min_gap_cm: float = option(30.0, bounds=(0.0, 10_000.0), help="the tops differ by at least this much, cm")
    min_visible_ratio: float = option(0.5, bounds=(0.0, 1.0), help="visible/unoccluded pixels per object")
    min_bbox_px: float = option(8.0, bounds=(0.0, 4096.0), help="longest edge of each object's visible box, px")
    max_tries: int = option(400, integer=True, bounds=(1, 100_000), help="geometric candidates per draw")
    max_views: int = option(40, integer=True, bounds=(1, 1000), help="pairs and rendered visibility checks per sample")

    def check(self, source: str) -> None:
        self.need(
            self.min_bbox_px <= self.image_size,
            "min_bbox_px",
            f"must be <= image_size={self.image_size}",
            self.min_bbox_px,
            source,
        )

    def load_env(self):
        """The environment, built once per config object (a config is parsed once per process)."""
        return self.memo("env", lambda: load_env(self.env))


def top_cm(base_z: float, height: float) -> float:
    """The highest point of an object standing at ``base_z`` (cm, Z up)."""
    return float(base_z) + float(height)


def higher(top_a: float, top_b: float) -> str:
    """The label: ``a`` when ``a``'s top is higher."""
    return "a" if top_a > top_b else "b"


class HeightMaker(PairMaker):
    """The kit's two-object sampler with this scenario's rule (the tops must differ) and files."""

    TASK = "height"

    def placement_rule(self, placed) -> str | None:
        a, b = (top_cm(p.z, p.shape.height) for p in placed)
        return "ambiguous" if abs(a - b) < self.cfg.min_gap_cm else None

    def write(self, i: int, placed, cam, counts) -> dict:
        cfg, stem = self.cfg, f"{self.name}/%s_{i:06d}"
        img = self.client.render(0, ("lit", "object_mask"), camera=cam)
        files = {"image": stem % "img" + "." + cfg.image_format, "mask": stem % "mask" + ".png"}
        atomic_write_bytes(self.out / files["image"], encode_image(img["lit"], cfg.image_format))
        atomic_write_bytes(self.out / files["mask"], encode_image(img["object_mask"], "png"))
        tops = {p.name: top_cm(p.z, p.shape.height) for p in placed}
        rot = cam.rotation
        rec = {
            "env": self.name,
            "index": i,
            "label": higher(tops["a"], tops["b"]),
            "files": files,
            "camera": {**pose_block(cam.location, (rot.pitch, rot.yaw, rot.roll)), **intrinsics(cam)},
            "objects": {
                p.name: {
                    "class": p.shape.cls,
                    "asset": p.shape.asset_id,
                    "location": list(p.location),  # the base: terrain under the footprint
                    "yaw": p.yaw,
                    "height_cm": float(p.shape.height),
                    "top_cm": tops[p.name],
                    "color": list(instance_color(k)),
                }
                for k, p in enumerate(placed)
            },
            "rejections": dict(sorted(counts.items())),
        }
        atomic_write_json(record_path(self.out, cfg, i), rec)
        return rec


@register_scenario
class Height(PairScenario):
    """Which of two objects reaches higher (see the module docstring): the kit's two-object
    scenario steps (plan, server spec, shards, the table) with this maker and these columns."""

    NAME = "height"
    Config = HeightConfig
    MAKER = HeightMaker

    def row(self, rec: dict, i: int) -> dict:
        a, b = rec["objects"]["a"], rec["objects"]["b"]
        columns = {"class_a": a["class"], "class_b": b["class"], "top_a_cm": a["top_cm"], "top_b_cm": b["top_cm"]}
        return {**super().row(rec, i), **columns}
