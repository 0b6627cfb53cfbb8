"""The kit's two-object sampler: two assets of an environment's triple classes placed apart around
its sampling centre, a camera drawn until both are clear and in frame, the render server's
visibility rule, and the loop that retries all of it. A scenario that labels a *pair* of objects
from their 3-D geometry (``distance``: which is nearer; ``examples/sceneforge-height``: which
stands taller) is a :class:`PairScenario` with a :class:`PairMaker`: it writes only its label
rule, its files and its table columns.

The RNG of sample ``i`` is ``sample_rng(seed, env, task, "pair", i)``: output is a pure function
of (config, index), whichever worker makes it. Units: cm, Z up (UnrealCV).
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Callable, ClassVar

import numpy as np

from sceneforge.core.errors import PlacementError
from sceneforge.core.visibility import visibility_failure
from sceneforge.engine.world import Camera, instance_color
from sceneforge.scenarios.contract import JobPlan, Scenario, ServerSpec, Shard, ShardResult
from sceneforge.scenarios.output.writers import write_table
from sceneforge.scenarios.pipeline.shard import run_shard
from sceneforge.scenarios.sampling.rejection import (
    Placed,
    camera_clear,
    in_frame,
    no_overlap,
    resample_while,
    sample_camera,
    sample_object,
    sample_rng,
)
from sceneforge.scenarios.sampling.shapes import ShapeCache

LABELS = ("a", "b")  # the two objects' names; instance colours 0 and 1
OBJECT_GAP_CM = 30.0  # footprints at least this far apart
CAMERA_CLEARANCE_CM = 50.0
IN_FRAME_MARGIN_PX = 2.0


def pair_classes(env) -> list[str]:
    """The classes a pair draws from: every source and target class of the environment's triples."""
    return sorted({c for t in env.triples for c in (t.source_class, t.target_class)})


def place_two(rng: np.random.Generator, env, shapes: ShapeCache, counts: Counter, max_tries: int) -> list[Placed]:
    """``a`` then ``b``: a class drawn uniformly, an asset of it (``shapes.pick``), a pose Gaussian
    around the environment's sampling centre (``sigma_cm``), redrawn while it overlaps the first."""
    s, classes = env.sampling, pair_classes(env)
    placed: list[Placed] = []
    for name in LABELS:
        shape = shapes.pick(rng, classes[int(rng.integers(len(classes)))])
        placed.append(
            resample_while(
                lambda r, sh=shape, n=name: sample_object(r, n, sh, s.centre_cm, s.sigma_cm, env.ground),
                [("overlap", no_overlap(placed, OBJECT_GAP_CM))],
                rng,
                max_tries,
                counts,
                what=f"placing {name}",
            )
        )
    return placed


def camera_on(
    rng: np.random.Generator,
    env,
    placed: list[Placed],
    image_size: int,
    counts: Counter,
    max_tries: int,
    rules: list[tuple[str, Callable[[Camera], bool]]] = (),
    what: str = "pair camera",
) -> Camera:
    """A camera in the environment's camera box aimed at the pair's centroid, redrawn until it is
    clear of both objects, both are in frame and every one of the scenario's ``rules`` passes."""
    s = env.sampling
    aim = tuple(np.mean([p.centre() for p in placed], axis=0))
    base_z = float(np.mean([p.z for p in placed]))
    return resample_while(
        lambda r: sample_camera(r, s.centre_cm, s.cam_xy_range_cm, s.cam_height_range_cm, base_z, aim, s.fov_deg, image_size),
        [
            ("camera_clear", camera_clear(placed, CAMERA_CLEARANCE_CM)),
            ("in_frame", in_frame(placed, IN_FRAME_MARGIN_PX)),
            *rules,
        ],
        rng,
        max_tries,
        counts,
        what=what,
    )


class PairMaker:
    """One sample at a time on one render client (the maker of
    :func:`scenarios.pipeline.shard.run_shard`): place two objects, draw a camera, ask the server
    whether both are visible enough, retry up to ``cfg.max_views`` times, then :meth:`write`.

    The config needs ``env`` (a name or path), ``seed``, ``image_size``, ``max_tries``,
    ``max_views``, ``min_visible_ratio``, ``min_bbox_px`` and ``load_env()``. A subclass sets
    ``TASK`` (its RNG stream and error messages), may refuse a pair (:meth:`placement_rule`) or
    a camera (:meth:`camera_rules`), and writes the sample (:meth:`write`). Each of the
    ``max_views`` tries places a fresh pair and draws one camera.
    """

    TASK = "pair"

    def __init__(self, cfg, client, out: Path):
        self.cfg, self.client, self.out = cfg, client, Path(out)
        self.env = cfg.load_env()
        self.name = Path(cfg.env).stem
        self.shapes = ShapeCache(self.env.library, lambda c: self.env.variants(c, self.env.library))
        self.world_set = False

    def make_sample(self, i: int, upcoming=()) -> dict:
        rng = sample_rng(self.cfg.seed, self.name, self.TASK, "pair", i)
        counts: Counter = Counter()
        for _ in range(self.cfg.max_views):
            placed = place_two(rng, self.env, self.shapes, counts, self.cfg.max_tries)
            unusable = self.placement_rule(placed)
            if unusable is not None:  # the pair itself cannot carry the label: a fresh pair
                counts[unusable] += 1
                continue
            cam = camera_on(
                rng,
                self.env,
                placed,
                self.cfg.image_size,
                counts,
                self.cfg.max_tries,
                self.camera_rules(placed),
                f"{self.TASK} camera",
            )
            vis = self.visible(placed, cam)
            if vis is None:
                return self.write(i, placed, cam, counts)
            counts[vis] += 1
        raise PlacementError(
            f"{self.name} {self.TASK} sample {i}: no view in {self.cfg.max_views}: {dict(sorted(counts.items()))}",
            rule=counts.most_common(1)[0][0],
            tries=sum(counts.values()),
            rejections=dict(counts),
        )

    def placement_rule(self, placed: list[Placed]) -> str | None:
        """The name of the rule the pair breaks (counted; the next try places a fresh pair), or
        None. For a label that does not depend on the camera (which object is taller)."""
        return None

    def camera_rules(self, placed: list[Placed]) -> list[tuple[str, Callable[[Camera], bool]]]:
        """Extra rules a camera must pass (e.g. the label must be clear from it)."""
        return []

    def visible(self, placed: list[Placed], cam: Camera) -> str | None:
        """None when both objects pass the visibility rule on the server, else the failed rule."""
        if not self.world_set:
            self.client.set_world(self.env.world)
            self.world_set = True
        self.client.reset()
        self.client.spawn([p.actor(instance_color(k)) for k, p in enumerate(placed)])
        counts = self.client.visibility(0, list(LABELS), camera=cam)
        return visibility_failure(counts, LABELS, self.cfg.min_visible_ratio, self.cfg.min_bbox_px)

    def write(self, i: int, placed: list[Placed], cam: Camera, counts: Counter) -> dict:
        raise NotImplementedError


def record_path(out: Path, cfg, i: int) -> Path:
    """``OUT/<env>/sample_NNNNNN.json``: the record that marks sample ``i`` complete."""
    return Path(out) / Path(cfg.env).stem / f"sample_{i:06d}.json"


class PairScenario(Scenario):
    """The scenario steps of a two-object scenario: ``n`` samples of one environment, each made
    by ``MAKER`` (a :class:`PairMaker`), complete when its record exists, and a table
    (``samples.parquet``/``metadata.csv``) with one :meth:`row` per record. A subclass sets
    ``NAME``, ``Config`` (with the fields :class:`PairMaker` reads) and ``MAKER``, and adds its
    columns in :meth:`row`."""

    MAKER: ClassVar[type[PairMaker]] = PairMaker

    def plan(self) -> JobPlan:
        cfg = self.config
        return JobPlan(cfg.n, cfg.fingerprint(), f"{cfg.n} {self.NAME} images: {cfg.env}", config=cfg.to_dict())

    def server_spec(self) -> ServerSpec:
        return ServerSpec(assets=tuple(self.config.load_env().asset_packs()))

    def run(self, shard: Shard, out_dir: Path, *, server: str, progress=None) -> ShardResult:
        cfg, out = self.config, Path(out_dir)
        return run_shard(
            shard,
            server,
            complete=lambda i: record_path(out, cfg, i).is_file(),
            maker=lambda client, todo: self.MAKER(cfg, client, out),
            progress=progress,
        )

    def finalize(self, out_dir: Path) -> dict:
        cfg, out = self.config, Path(out_dir)
        rows = [self.row(json.loads(record_path(out, cfg, i).read_text()), i) for i in range(cfg.n)]
        write_table(rows, out)
        return {"samples": len(rows), "by_label": dict(sorted(Counter(r["label"] for r in rows).items()))}

    def row(self, rec: dict, i: int) -> dict:
        """Sample ``i``'s table row from its record: image, label, environment, index (a subclass
        adds its own columns after these)."""
        return {"file_name": rec["files"]["image"], "label": rec["label"], "env": rec["env"], "index": i}
