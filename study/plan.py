"""``sceneforge study CONFIG --out DIR --plan``: the bill before the run.

What the study would do, without doing any of it (nothing generated, loaded, trained or written;
``DIR`` is only read): the datasets it must generate, the cells it must run (layout floors and,
per backbone and its random twin, layer × dataset × n_train rows not in ``DIR/results.jsonl`` yet),
the features it must extract, and an estimated time from **measured** per-image costs, each
printed with where and on which machine it was measured.

Where the costs come from, best first:

1. ``DIR/timings.jsonl``, when the study has run before (a pilot with a small ``n``, or a killed
   run): that machine's own per-image extraction cost per backbone and per-train-image head cost
   per backbone, at this protocol, on the same device kind.
2. Another backbone's measurement in the same ``DIR/timings.jsonl``: extraction of the same
   spec (a random-init twin extracts exactly as its pretrained model does), and for heads the
   measured rows' seconds per train image scaled by tokens × width (the backbone's layers from its
   architecture against the measured backbone's) and batch size; the range is that of the
   measured rows (early stopping ended them at different epochs), so it carries this machine's
   load and this protocol's schedule rather than a reference's.
3. The reference measurements below (:data:`GENERATE_IMAGES_PER_S`, :data:`EXTRACT_MS`,
   :data:`HEAD_MS`), all on the shared 2-core development machine (2 torch threads). A backbone
   without a measurement uses ViT-S/14's cost and says so.

Head training is a range: early stopping (``patience``) can end a config at ``max(warmup,
patience)`` epochs, and no later than ``epochs``; the head cost per (train image × epoch) is the
3-head × 9-config grid's, scaled by the grid's size, the backbone's tokens × width where known and
the row's batch size (:func:`batch_factor`: small train sets train in small, costlier batches).
There is no GPU measurement in the reference: a plan for ``--device cuda`` without GPU timings of
its own prints the CPU figures as what they are (an upper bound) and says so.

Disk, beside the time: the datasets to generate (images × bytes per image on disk: measured in
``DIR`` where a dataset is there, else :data:`BYTES_PER_IMAGE`, measured per environment × task)
and per backbone × dataset the feature cache, exact from the cache format
(:func:`probing.features.entry_bytes`: images × (tokens + prefix) × width × 2 bytes per layer),
the shapes from ``DIR/timings.jsonl`` where the study extracted before, else from the model's
architecture built on torch's ``meta`` device (timm; nothing loaded), minus the entries already in
``DIR/cache``; their total against the free space of ``DIR``'s file system. ``keep_features:
false`` counts only the largest unit's features (one unit's are on disk at a time).
"""

from __future__ import annotations

import json
import math
import os
import shutil
import statistics
from dataclasses import dataclass, field
from pathlib import Path

from sceneforge.core.errors import ConfigError
from sceneforge.probing.timm_backbone import shape_backbone
from sceneforge.probing.data import read_tables
from sceneforge.probing.features import BLOCK, NPY_HEADER, entry_bytes, layer_shapes
from sceneforge.scenarios.sparrta.config import SparrtaConfig
from sceneforge.study.config import StudyConfig, batch_for, resolve_weights
from sceneforge.study.results import HEADER, RESULTS, cache_records, check_protocol, read_header, read_rows
from sceneforge.study.run import _resolve, gb, plan_datasets

TIMINGS = "timings.jsonl"
MACHINE = "the shared 2-core development machine, 2 torch threads"

# labelled images/s of `sceneforge generate` at 0.7.0's default (decorrelated), with the number of
# render workers it was measured with (GENERATE_WORKERS; one where not listed).
# ego: issue 46's re-run (benchmarks/studies/default_070.yaml) generating 5,000 images per
# environment, wall time from each dataset's .farm/summary.json, 2026-12-07 15:17-15:35 at load ~2.
# desert, city, forest allo: the allo re-run (default_070_allo.yaml, `--backend local --workers 2`),
# 10,000 images each, .farm/summary.json, 2026-12-08 00:41-01:36 at load 2-4 (tests beside it):
# desert 798 s, forest 682 s; city 1,714 s over two runs (730 s, SIGTERM, resumed: 984 s).
# winter town and bridge allo: the rendered 1,000-image rows of docs/validation.md "0.7.0: layout
# quotas" (with quotas), one worker at load 6-9 with several jobs side by side; desert, city and
# forest were 3.0x, 2.2x and 1.3x lower per worker there than in the 10,000-image runs.
GENERATE_IMAGES_PER_S = {
    ("desert", "ego"): 17.98,
    ("city", "ego"): 13.32,
    ("forest", "ego"): 15.19,
    ("winter_town", "ego"): 23.51,
    ("bridge", "ego"): 30.61,
    ("desert", "allo"): 12.53,
    ("city", "allo"): 5.83,
    ("forest", "allo"): 14.66,
    ("winter_town", "allo"): 4.27,
    ("bridge", "allo"): 1.79,
}
GENERATE_WORKERS = {("desert", "allo"): 2, ("city", "allo"): 2, ("forest", "allo"): 2}
REFERENCE_CORES = 2  # the machine the rates were measured on: workers beyond its cores added nothing there
GENERATE_SOURCE = {
    "ego": f"default_070.yaml's 5,000-image datasets (.farm/summary.json, load ~2), one worker, {MACHINE}, 2026-12-07",
    "allo-run": f"default_070_allo.yaml's 10,000 images (.farm/summary.json, load 2-4), 2 workers, {MACHINE}, 2026-12-08",
    "allo": (
        "docs/validation.md '0.7.0: layout quotas' (1,000 images, load 6-9, likely pessimistic), "
        f"one worker, {MACHINE}, 2026-12-07"
    ),
}


def generate_rate(env: str, task: str, workers: int) -> tuple[float, str]:
    """Images/s of generating (env, task) with ``workers`` render workers, and where from. A rate
    measured with another worker count is scaled by the workers that can run at once, capped at
    the cores (this machine's, and the reference machine's for the measurement): rejection
    sampling and the CPU renderer keep one core busy per worker, so a third worker on two cores
    adds nothing. Where (env, task) is not measured, the slowest measured rate stands in."""
    key = (env, task)
    rate = GENERATE_IMAGES_PER_S.get(key)
    if rate is None:
        rate, key = min((v, k) for k, v in GENERATE_IMAGES_PER_S.items())
        note = f"; {env} {task} not measured: the slowest measured rate ({key[0]} {key[1]})"
    else:
        note = ""
    source = GENERATE_SOURCE["allo-run" if key in GENERATE_WORKERS else key[1]]
    measured = GENERATE_WORKERS.get(key, 1)
    workers = max(1, int(workers or 1))
    running = min(workers, os.cpu_count() or 1)
    if running != min(measured, REFERENCE_CORES):
        rate = rate * running / min(measured, REFERENCE_CORES)
        note += f"; scaled x {running}/{min(measured, REFERENCE_CORES)} for {workers} worker{'s' * (workers > 1)}"
        if workers > running:
            note += f" on {running} cores"
    return rate, source + note


# feature extraction, ms per image (every wanted layer in one pass, batch 64), by probing spec:
# the reduced desert ego study's timings.jsonl (benchmarks/results/study_desert_ego_reduced/),
# 400 images at 224², 2026-12-07 at light load
EXTRACT_MS = {"dinov2-s-imgfocus": 158.65, "efficientnet-lite0": 70.67}
EXTRACT_SOURCE = f"benchmarks/results/study_desert_ego_reduced/timings.jsonl (400 images), {MACHINE}, 2026-12-07"
FALLBACK_EXTRACT = "dinov2-s-imgfocus"

# heads: the batched 3-head x 9-config grid, ms per (train image x epoch) on ViT-S/16-shaped tokens
# (196 x 384): 414 s for 4,000 train images x 100 epochs (docs/probing.md, SpaRRTa-scale row,
# `benchmarks/probe.py --skip extract`, 2026-11-27, load 3.3-3.9)
HEAD_MS = 414_000 / (4000 * 100)
HEAD_SHAPE = (196, 384)
HEAD_SOURCE = f"docs/probing.md SpaRRTa-scale row (3 heads x 9 configs, 196 x 384 tokens), {MACHINE}, 2026-11-27"
# tokens x width of the layers a spec gives, where known (the head cost scales with both)
TOKEN_SHAPES = {"dinov2-s-imgfocus": (256, 384)}
# small train sets train in small batches (batch_for: 32 at n_train 300), which cost more per image:
# CPU ms per (train image x epoch) of the same 3-head x 9-config grid on 256 x 384 tokens at batch
# 32 / 62 / 250 = 8.36 / 4.22 / 2.66 (benchmarks/study_head_cost.py, 2026-12-07 11:03, load ~9, one
# process back to back); fitted as a + b / batch (a 1.818, b 209.3 ms), relative to batch 256
HEAD_BATCH_FIT = (1.818, 209.3)
HEAD_BATCH_SOURCE = "batch factor: benchmarks/study_head_cost.py, 2026-12-07 (batch 32 costs 3.2x per image of batch 256)"


def batch_factor(batch: int) -> float:
    """Per-image head cost at ``batch`` relative to batch 256 (the reference's)."""
    a, b = HEAD_BATCH_FIT
    return (a + b / batch) / (a + b / 256)


# bytes on disk per labelled image of `sceneforge generate` at its defaults (224² jpg, quality 95, no
# depth or masks, decorrelated): `du -B1` of a 40-image dataset per environment x task (seed 31:
# images, params/scene/record JSON in 4 KiB blocks, the tables), divided by 40; 2026-12-07
BYTES_PER_IMAGE = {
    ("desert", "ego"): 92_160,
    ("city", "ego"): 206_131,
    ("forest", "ego"): 399_564,
    ("winter_town", "ego"): 135_372,
    ("bridge", "ego"): 134_860,
    ("desert", "allo"): 109_363,
    ("city", "allo"): 216_678,
    ("forest", "allo"): 412_364,
    ("winter_town", "allo"): 142_336,
    ("bridge", "allo"): 149_094,
}
BYTES_SOURCE = "du of 40-image `sceneforge generate` datasets at its defaults (224² jpg q95), 2026-12-07"
REFERENCE_SIZE = 224
# a backbone whose architecture cannot be built without weights (hf:) and that has not run in DIR:
# ViT-S/16's 196 patches + CLS, 384 wide (a guess, said so)
FALLBACK_SHAPE = (196, 1, 384)

REPORT_S = 2.0  # probe's report.html per run (backbone x dataset x n_train): ~1.7 s measured (docs/study.md)


@dataclass
class Cost:
    """Seconds (a range when early stopping makes it one) and where the per-unit cost was measured."""

    low: float
    high: float
    source: str

    @classmethod
    def of(cls, seconds: float, source: str) -> "Cost":
        return cls(seconds, seconds, source)


@dataclass
class DatasetPlan:
    name: str
    dir: Path
    images: int  # to generate, or there
    generate: bool
    approx: bool  # train rows estimated from the split pattern (not generated yet)
    cost: Cost | None = None
    groups: dict[tuple[str, str], list[int]] = field(default_factory=dict)  # (env, task) -> n_train sizes
    disk_have: int = 0  # bytes on disk now (4 KiB blocks)
    disk_need: int = 0  # bytes still to write (generation)
    disk_source: str = ""  # where the bytes per image come from


@dataclass
class BackbonePlan:
    name: str
    kind: str
    spec: str
    layers: str  # as printed
    n_layers: int
    rows_todo: int
    rows_done: int
    extract_images: int
    extract: Cost | None
    heads: Cost | None
    notes: list[str] = field(default_factory=list)
    features: dict[str, int] = field(default_factory=dict)  # dataset -> cache bytes still to write (its unit)
    features_there: int = 0  # bytes of the needed entries already in DIR/cache
    shapes: dict[int, tuple[int, int, int]] = field(default_factory=dict)  # layer -> (tokens, prefix, width)
    shape_source: str = ""
    shapes_known: bool = False  # shapes from the architecture or a measurement, not FALLBACK_SHAPE
    reclaim: int = 0  # keep_features false: bytes of finished units' entries the run deletes before any work


@dataclass
class StudyPlan:
    out: Path
    device: str
    datasets: list[DatasetPlan]
    layout_todo: int
    layout_done: int
    backbones: list[BackbonePlan]
    notes: list[str] = field(default_factory=list)
    keep_features: bool = True
    free: int | None = None  # bytes free on DIR's file system
    fs: Path | None = None  # the existing folder it was measured at (DIR or its nearest parent)

    def disk_data(self) -> int:
        """Bytes the datasets still to generate will take (under DIR/data)."""
        return sum(d.disk_need for d in self.datasets)

    def units(self) -> list[tuple[str, str, int]]:
        """(backbone, dataset, cache bytes to write) of every unit with features to extract."""
        return [(b.name, d, n) for b in self.backbones for d, n in b.features.items() if n]

    def disk_features(self) -> int:
        """Cache bytes at the peak: every unit's (``keep_features``), else the largest unit's."""
        sizes = [n for _, _, n in self.units()]
        return (sum(sizes) if self.keep_features else max(sizes, default=0)) if sizes else 0

    def disk_total(self) -> int:
        return self.disk_data() + self.disk_features()

    def reclaim(self) -> int:
        return sum(b.reclaim for b in self.backbones)

    def total(self) -> tuple[float, float]:
        parts = [d.cost for d in self.datasets if d.cost] + [c for b in self.backbones for c in (b.extract, b.heads) if c]
        return sum(c.low for c in parts), sum(c.high for c in parts)


def measured_timings(out: Path, device: str) -> tuple[dict[str, float], dict[str, float], str]:
    """From ``DIR/timings.jsonl`` on the device kind of ``device``: extraction ms/image per
    backbone name, head seconds per train image per backbone name, and where (the device label)."""
    extract, train, where = _timing_lists(out, device)
    return *_medians(extract, train), where


def _medians(extract: dict, train: dict) -> tuple[dict[str, float], dict[str, float]]:
    """Per backbone name the median of :func:`_timing_lists`' measurements."""
    med = statistics.median
    return {k: med(v) for k, v in extract.items()}, {k: med([s for s, _ in v]) for k, v in train.items()}


def _timing_lists(out: Path, device: str) -> tuple[dict[str, list[float]], dict[str, list[tuple[float, int]]], str]:
    """Every measurement behind :func:`measured_timings`: ms/image per extraction, and per trained
    row (seconds per train image, n_train), per backbone name."""
    path = Path(out) / TIMINGS
    extract: dict[str, list[float]] = {}
    train: dict[str, list[tuple[float, int]]] = {}
    where = ""
    if not path.is_file():
        return {}, {}, where
    kind = device.split(":")[0]
    for line in path.read_text().splitlines():
        try:
            t = json.loads(line)
        except json.JSONDecodeError:  # a torn last line
            continue
        if not str(t.get("device", "")).startswith(kind):
            continue
        where = str(t.get("device"))
        if t.get("what") == "extract" and t.get("images"):
            extract.setdefault(t["backbone"], []).append(float(t["seconds"]) * 1000 / t["images"])
        elif t.get("what") == "train" and t.get("n_train"):
            row = (float(t["seconds"]) / t["n_train"], int(t["n_train"]))
            train.setdefault(str(t["row"]).split("__")[0], []).append(row)
    return extract, train, where


def _spec(entry) -> str:
    """What fixes a backbone's extraction cost: its spec and model arguments (not its weights)."""
    return json.dumps([entry.backbone, dict(entry.model_args or {})], sort_keys=True, default=str)


def _tokens_x_width(shapes: dict) -> float | None:
    """Mean tokens x width over a backbone's layers ({layer: (tokens, prefix, width)}): what a
    head's cost per image scales with. None where no shape is known."""
    sizes = [t * w for t, _, w in shapes.values()]
    return sum(sizes) / len(sizes) if sizes else None


def _heads_from_peers(
    name: str, tw: float | None, n_trains: list[int], batch: int | None, train_rows: dict, measured_shapes: dict, where: str
) -> Cost | None:
    """Head time of ``name``'s rows (their n_train values) from the other backbones' rows measured in
    this study (same machine, protocol and grid), each scaled by tokens x width and batch factor;
    the range spans the measured rows. None where nothing comparable was measured."""
    if tw is None or not n_trains:
        return None
    per_unit = []  # seconds per train image at batch 256 and per tokens x width, one per measured row
    peers = []
    for other, rows in sorted(train_rows.items()):
        other_tw = _tokens_x_width(measured_shapes.get(other, {}))
        if other == name or other_tw is None:
            continue
        peers.append(other)
        per_unit += [s / batch_factor(batch or batch_for(n)) / other_tw for s, n in rows]
    if not per_unit:
        return None
    need = sum(n * batch_factor(batch or batch_for(n)) for n in n_trains) * tw
    lo, mid, hi = min(per_unit) * need, statistics.median(per_unit) * need, max(per_unit) * need
    theirs = sorted({round(_tokens_x_width(measured_shapes[p])) for p in peers})
    src = (
        f"median {_dur(mid)}; scaled from {len(per_unit)} rows of {', '.join(peers)} measured in {TIMINGS} on {where}: "
        f"seconds per train image x tokens x width {tw:.0f} / theirs {', '.join(map(str, theirs))} x batch factor; "
        f"the range spans those rows"
    )
    return Cost(lo, hi, src)


def _train_fraction(generate: dict) -> float:
    """The share of train images under the dataset's split pattern (default 8 / 1 / 1)."""
    pattern = SparrtaConfig.from_dict(generate, "study data").split_pattern or ("train",) * 8 + ("val", "test")
    return pattern.count("train") / len(pattern)


def _datasets(cfg: StudyConfig, out: Path, workers: int) -> list[DatasetPlan]:
    plans = []
    for spec in plan_datasets(cfg, out):
        exists = (spec.dir / "samples.parquet").is_file() or (spec.generate is None and spec.dir.is_dir())
        if exists:
            table = read_tables(spec.dir)
            groups = {}
            for (env, task), g in table.groupby(["env", "task"], sort=True):
                have = int((g["split"] == "train").sum())
                groups[(env, task)] = [n for n in (cfg.n_train or (have,)) if n <= have]
            used = disk_bytes(spec.dir)
            src = f"{used / max(1, len(table)) / 1000:.0f} KB/image on disk, measured in {spec.dir}"
            plans.append(DatasetPlan(spec.name, spec.dir, len(table), False, False, None, groups, used, 0, src))
            continue
        if spec.generate is None:
            raise ConfigError(f"datasets: {spec.dir}: no such directory")
        env, task = spec.generate["envs"][0], spec.generate["tasks"][0]
        have = int(cfg.n * _train_fraction(spec.generate))
        rate, source = generate_rate(env, task, workers)
        policy = spec.generate.get("camera_policy")
        if policy and policy != "decorrelated":
            source += f"; measured for decorrelated, this config asks {policy}"
        cost = Cost.of(cfg.n / rate, source)
        groups = {(env, task): [n for n in (cfg.n_train or (have,)) if n <= have]}
        per_image, disk_src = _bytes_per_image(spec.generate, env, task)
        partial = disk_bytes(spec.dir)  # a generation killed midway: what it wrote stays
        need = max(0, int(cfg.n * per_image) - partial)
        plans.append(DatasetPlan(spec.name, spec.dir, cfg.n, True, True, cost, groups, partial, need, disk_src))
    return plans


def disk_bytes(root: Path) -> int:
    """Bytes ``root``'s files take on disk (allocated blocks, as ``du``); 0 where it does not exist."""
    total = 0
    for folder, _, files in os.walk(root):
        for f in files:
            try:
                total += os.lstat(os.path.join(folder, f)).st_blocks * 512
            except OSError:
                pass
    return total


def _bytes_per_image(generate: dict, env: str, task: str) -> tuple[float, str]:
    """Bytes per labelled image on disk for this dataset's generate config, and where from."""
    g = SparrtaConfig.from_dict(generate, "study data")
    known = BYTES_PER_IMAGE.get((env, task))
    per = known or max(BYTES_PER_IMAGE.values())
    src = f"{per / 1000:.0f} KB/image, {BYTES_SOURCE}"
    if not known:
        src += f"; {env} {task} not measured: the largest measured"
    if g.image_size != REFERENCE_SIZE:
        per *= (g.image_size / REFERENCE_SIZE) ** 2
        src += f"; scaled by ({g.image_size}/{REFERENCE_SIZE})² for image_size {g.image_size}"
    if g.depth:
        per += -(-(NPY_HEADER + 4 * g.image_size**2) // BLOCK) * BLOCK
        src += "; + depth (float32 .npy per image, exact)"
    odd = [f"{k} {v}" for k, v, d in (("image_format", g.image_format, "jpg"), ("jpeg_quality", g.jpeg_quality, 95)) if v != d]
    odd += ["masks"] if g.masks else []
    if odd:
        src += f"; measured at jpg q95 without masks, this config asks {', '.join(map(str, odd))}: not modelled"
    return per, src


def _shapes(
    entry, cfg: StudyConfig, layers: list[int] | None, measured: dict[int, tuple], out: Path
) -> tuple[list[int] | None, dict[int, tuple], str]:
    """(the layers, resolved by the architecture where the config leaves them to the model;
    {layer: (tokens, prefix, width)}; where the shapes come from)."""
    if layers is not None and layers and all(n in measured for n in layers):
        return layers, {n: measured[n] for n in layers}, f"measured in {out / TIMINGS}"
    try:
        bb = shape_backbone(entry.backbone, dict(entry.model_args or {}))
    except ConfigError:
        bb = None
    if bb is not None:
        if layers is None:
            try:
                layers = _resolve(entry.layers or cfg.layers, bb.num_layers)
            except ConfigError:  # a layer past the model's depth: the run refuses it (one line)
                return None, {}, "the architecture (its layers are out of range: the run would refuse)"
        try:
            return layers, layer_shapes(bb, layers), "the architecture, built without weights (timm on torch's meta device)"
        except Exception:  # noqa: BLE001 - a model whose forward needs real tensors: fall back, say so
            pass
    return layers, {}, f"{entry.backbone}'s shapes not known without loading it: ViT-S/16's {FALLBACK_SHAPE} stand in"


def _layers(entry, cfg: StudyConfig, header: dict) -> tuple[list | None, str, int]:
    """(resolved layers or None, how to print them, how many rows per cell)."""
    wanted = entry.layers or cfg.layers
    resolved = (header.get("layers") or {}).get(entry.name)
    if resolved:
        return list(resolved), ", ".join(f"L{x}" for x in resolved), len(resolved)
    if "auto" in wanted:
        return None, "auto (4 quarter-depth blocks, resolved when the model loads)", 4
    if any(v < 0 for v in wanted):
        return None, ", ".join(f"L{v}" for v in wanted) + " (counted from the last)", len(set(wanted))
    return sorted(set(wanted)), ", ".join(f"L{x}" for x in sorted(set(wanted))), len(set(wanted))


def plan_study(cfg: StudyConfig, out: str | Path, device: str = "cpu", workers: int | None = None) -> StudyPlan:
    """What ``run_study(cfg, out, device=device, workers=workers)`` would run and an estimate of
    its time; reads ``out`` (rows done, resolved layers, timings) and writes nothing. ``workers``:
    the render workers generating (default the config's ``workers``, else one)."""
    import torch

    out = Path(out)
    notes = []
    device = (device or "cpu").strip().lower()
    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    elif device.startswith("cuda") and not torch.cuda.is_available():
        notes.append(f"--device {device}: torch sees no CUDA device on this machine (planned for one; the run here would refuse)")
    elif device != "cpu" and not device.startswith("cuda"):
        raise ConfigError(f"--device {device!r}: expected auto, cpu, cuda or cuda:N")
    header = read_header(out) if (out / HEADER).is_file() else None
    check_protocol(out, header, cfg.protocol(), cfg.protocol_fingerprint())  # the run would refuse: so does the plan
    header = header or {}
    done = {(r["kind"], r["backbone"], r["dataset"], r["env"], r["task"], r["layer"], r["n_train"])
            for r in read_rows(out / RESULTS)} if (out / RESULTS).is_file() else set()  # fmt: skip
    datasets = _datasets(cfg, out, workers or cfg.workers or 1)
    ext_lists, train_rows, where = _timing_lists(out, device)  # timings.jsonl read once
    ext_here, train_here = _medians(ext_lists, train_rows)
    spec_of = {e.name: _spec(e) for e in cfg.entries()}
    ext_by_spec: dict[str, list[float]] = {}  # a twin extracts as its model does: same spec, same cost
    for name, v in ext_lists.items():
        if name in spec_of:
            ext_by_spec.setdefault(spec_of[name], []).extend(v)
    gpu = device.startswith("cuda")
    layout_todo = layout_done = 0
    if cfg.layout:
        for d in datasets:
            for (env, task), sizes in d.groups.items():
                for n in sizes:
                    key = ("layout", "layout", d.name, env, task, 0, n)
                    layout_done += key in done
                    layout_todo += key not in done
    lo_epochs = max(cfg.warmup or 0, cfg.patience) if cfg.patience else cfg.epochs
    lo_epochs = min(lo_epochs, cfg.epochs)
    grid = len(cfg.lrs) * len(cfg.dropouts) * len(cfg.heads) / 27
    backbones = []
    measured_shapes, cached_keys = cache_records(out)
    for entry in cfg.entries():
        layers, shown, per_cell = _layers(entry, cfg, header)
        todo = done_n = images = train_images = runs = 0
        weighted = 0.0  # train images x the batch factor of their row
        n_trains: list[int] = []  # per row to run
        unit_layers: dict[str, set] = {}  # dataset -> the layers whose features its rows need
        for d in datasets:
            unit_todo = 0
            for (env, task), sizes in d.groups.items():
                for n in sizes:
                    runs_here = 0
                    for layer in layers or [None] * per_cell:
                        key = (entry.kind, entry.name, d.name, env, task, layer, n)
                        if layer is not None and key in done:
                            done_n += 1
                            continue
                        todo += 1
                        unit_todo += 1
                        runs_here = 1
                        train_images += n
                        n_trains.append(n)
                        weighted += n * batch_factor(cfg.batch_size or batch_for(n))
                        unit_layers.setdefault(d.name, set()).add(layer)
                    runs += runs_here
            if unit_todo:
                images += d.images
        bp = BackbonePlan(entry.name, entry.kind, entry.backbone, shown, per_cell, todo, done_n, images, None, None)
        if unit_layers:
            _features(bp, entry, cfg, layers, per_cell, unit_layers, datasets, measured_shapes, cached_keys, out)
        # finished units' entries this study recorded: a keep_features false run deletes them first
        bp.reclaim = sum(
            disk_bytes(out / "cache" / key)
            for (b, d, _), key in cached_keys.items()
            if b == entry.name and d in {x.name for x in datasets} and d not in unit_layers
        )
        try:
            resolve_weights(entry)
        except ConfigError as e:
            bp.notes.append(f"the run would stop here: {e}")
        if images:
            if entry.name in ext_here:
                bp.extract = Cost.of(
                    images * ext_here[entry.name] / 1000,
                    f"{ext_here[entry.name]:.0f} ms/image measured in {out / TIMINGS} on {where}",
                )
            elif ext_by_spec.get(_spec(entry)):
                ms = statistics.median(ext_by_spec[_spec(entry)])
                bp.extract = Cost.of(
                    images * ms / 1000,
                    f"{ms:.0f} ms/image measured in {out / TIMINGS} on {where} for the same spec ({entry.backbone})",
                )
            else:
                ms = EXTRACT_MS.get(entry.backbone, EXTRACT_MS[FALLBACK_EXTRACT])
                src = f"{ms:.0f} ms/image, {EXTRACT_SOURCE}"
                if entry.backbone not in EXTRACT_MS:
                    src += f"; {entry.backbone} not measured: {FALLBACK_EXTRACT}'s cost stands in"
                if gpu:
                    src += "; a CPU measurement (no GPU timing yet): an upper bound for a GPU"
                bp.extract = Cost.of(images * ms / 1000, src)
        if train_images:
            if entry.name in train_here:
                s = train_here[entry.name] * train_images + REPORT_S * runs * cfg.reports
                bp.heads = Cost.of(
                    s,
                    f"{1000 * train_here[entry.name]:.1f} ms per train image, measured in {out / TIMINGS} on {where}",
                )
            elif peer := _heads_from_peers(
                entry.name, _tokens_x_width(bp.shapes), n_trains, cfg.batch_size, train_rows, measured_shapes, where
            ):
                extra = REPORT_S * runs * cfg.reports
                bp.heads = Cost(peer.low + extra, peer.high + extra, peer.source)
            else:
                if bp.shapes_known and bp.shapes:  # the architecture's (or measured) tokens x width
                    tw = _tokens_x_width(bp.shapes)
                else:
                    tw = math.prod(TOKEN_SHAPES.get(entry.backbone, HEAD_SHAPE))
                scale = tw / (HEAD_SHAPE[0] * HEAD_SHAPE[1]) * grid
                per = HEAD_MS / 1000 * scale * weighted
                extra = REPORT_S * runs * cfg.reports
                src = (
                    f"{HEAD_MS:.2f} ms per train image x epoch x {scale:.2f} (tokens x width, grid size) x "
                    f"{weighted / train_images:.2f} (batch), {HEAD_SOURCE}; {HEAD_BATCH_SOURCE}"
                )
                if not bp.shapes_known and entry.backbone not in TOKEN_SHAPES:
                    src += f"; {entry.backbone}'s token shape not known: ViT-S/16's"
                if gpu:
                    src += "; a CPU measurement (no GPU timing yet): an upper bound for a GPU"
                src += f"; {lo_epochs}-{cfg.epochs} epochs (early stopping)"
                bp.heads = Cost(per * lo_epochs + extra, per * cfg.epochs + extra, src)
        backbones.append(bp)
    fs = next(p for p in [out, *out.absolute().parents] if p.exists())
    free = shutil.disk_usage(fs).free
    return StudyPlan(out, device, datasets, layout_todo, layout_done, backbones, notes, cfg.keep_features, free, fs)


def _features(bp, entry, cfg, layers, per_cell, unit_layers, datasets, measured_shapes, cached_keys, out) -> None:
    """Per dataset the cache bytes ``bp``'s unit still has to write: its needed layers' entries
    (exact from the cache format) less those already in DIR/cache."""
    resolved, shapes, bp.shape_source = _shapes(entry, cfg, layers, measured_shapes.get(entry.name, {}), out)
    images = {d.name: d.images for d in datasets}
    for name, wanted in unit_layers.items():
        needed = sorted(wanted) if None not in wanted else (resolved or [None] * per_cell)
        need = 0
        for layer in needed:
            key = cached_keys.get((entry.name, name, layer))
            size = entry_bytes(images[name], *shapes.get(layer, FALLBACK_SHAPE))
            if key and (out / "cache" / key / "meta.json").is_file():
                bp.features_there += size
                continue
            need += size
        bp.features[name] = need
    bp.shapes = {n: shapes.get(n, FALLBACK_SHAPE) for n in (resolved or [])}
    bp.shapes_known = bool(shapes)


def _span(c: Cost | None) -> str:
    if c is None:
        return "-"
    return _dur(c.low) if round(c.low) == round(c.high) else f"{_dur(c.low)} - {_dur(c.high)}"


def _dur(s: float) -> str:
    if s < 90:
        return f"{s:.0f} s"
    if s < 5400:
        return f"{s / 60:.0f} min"
    return f"{s / 3600:.1f} h"


def format_plan(plan: StudyPlan, config: str = "") -> str:
    """The plan as the lines ``--plan`` prints."""
    lines = [f"study plan{f' of {config}' if config else ''} in {plan.out}: nothing is run or written"]
    lines.append(f"device: {plan.device} (features and heads)")
    lines += [f"  note: {n}" for n in plan.notes]
    gen = [d for d in plan.datasets if d.generate]
    lines.append(f"datasets: {len(plan.datasets)} ({len(gen)} to generate, {len(plan.datasets) - len(gen)} there)")
    for d in plan.datasets:
        sizes = "; ".join(
            f"{e} {t} n_train {', '.join(map(str, s)) or '(none: too few train rows)'}" for (e, t), s in d.groups.items()
        )
        approx = " (train rows estimated from the split pattern)" if d.approx else ""
        if d.generate:
            there = f" ({gb(d.disk_have)} there)" if d.disk_have else ""
            lines.append(
                f"  {d.name}: generate {d.images:,} images in {d.dir}: {_span(d.cost)}, {gb(d.disk_need)} on disk{there}; "
                f"{sizes}{approx}"
            )
            lines.append(f"      measured: {d.cost.source}")
            lines.append(f"      disk: {d.disk_source}")
        else:
            lines.append(f"  {d.name}: {d.images:,} images in {d.dir} ({gb(d.disk_have)} on disk); {sizes}")
    if plan.layout_todo or plan.layout_done:
        lines.append(f"layout floors: {plan.layout_todo} rows to run, {plan.layout_done} done (seconds each: no backbone)")
    lines.append("backbones (cells: layer x dataset x n_train, each training every head's grid):")
    for b in plan.backbones:
        lines.append(f"  {b.name} [{b.kind}] {b.spec}, {b.layers}: {b.rows_todo} rows to run, {b.rows_done} done")
        if b.extract:
            lines.append(f"      features of {b.extract_images:,} images: {_span(b.extract)}  [{b.extract.source}]")
        if b.heads:
            lines.append(f"      heads: {_span(b.heads)}  [{b.heads.source}]")
        if b.features:
            shapes = sorted({f"{t} + {p} tokens x {w}" for t, p, w in b.shapes.values()}) or ["?"]
            per = ", ".join(f"{d} {gb(n)}" for d, n in b.features.items())
            there = f", {gb(b.features_there)} of it in the cache already" if b.features_there else ""
            lines.append(
                f"      feature cache: {gb(sum(b.features.values()))} to write ({per}){there}  "
                f"[fp16, images x (tokens + prefix) x width x 2 bytes per layer; {'; '.join(shapes)} per image "
                f"from {b.shape_source}]"
            )
        lines += [f"      note: {n}" for n in b.notes]
    low, high = plan.total()
    span = _dur(low) if round(low) == round(high) else f"{_dur(low)} - {_dur(high)}"
    lines.append(
        f"estimated total: {span} (sum of the above; heads as a range: early stopping at the earliest vs the full schedule)"
    )
    lines += disk_lines(plan)
    return "\n".join(lines)


def disk_lines(plan: StudyPlan) -> list[str]:
    """The disk the run needs beside DIR's free space, and, when it does not fit, what would."""
    units = plan.units()
    biggest = max(units, key=lambda u: u[2], default=None)
    if plan.keep_features:
        feats = f"features {gb(sum(n for _, _, n in units))} (keep_features true: every unit's stays in DIR/cache)"
    else:
        where = f" ({biggest[0]} on {biggest[1]})" if biggest else ""
        feats = f"features at most {gb(plan.disk_features())}{where} (keep_features false: one unit's at a time)"
    need, free, reclaim = plan.disk_total(), plan.free or 0, plan.reclaim()
    freed = ""
    if reclaim and not plan.keep_features:
        freed = f" + {gb(reclaim)} of finished units' features the run deletes first"
        free += reclaim
    lines = [
        f"disk: {gb(need)} to write = datasets {gb(plan.disk_data())} + {feats}; {gb(plan.free or 0)} free{freed} on {plan.fs}"
    ]
    if need <= free:
        return lines
    if plan.keep_features and biggest:
        peak = plan.disk_data() + biggest[2]
        first = f"; it deletes the {gb(reclaim)} of finished units' features first" if reclaim else ""
        lines.append(
            f"does not fit: {gb(need)} needed, {gb(free)} free; set keep_features: false in the study config "
            f"(each unit's features deleted once its rows are written: at most {gb(biggest[2])}, {gb(peak)} in all{first})"
            + ("" if peak <= free + reclaim else "; even so it does not fit: free space or use another --out")
        )
    else:
        lines.append(f"does not fit: {gb(need)} needed, {gb(free)} free; free space or use another --out")
    return lines


__all__ = ["StudyPlan", "disk_lines", "format_plan", "measured_timings", "plan_study"]
