"""Running a study: datasets → features (once per backbone × dataset, every layer in one pass) →
every head's grid per (layer, env, task, n_train) → one row each, plus the layout floors.

Order of work, and why:

1. **Data.** One ``sparrta`` dataset per (environment, task) under ``DIR/data/`` via the render
   farm's runner (:func:`renderfarm.run_job`, resumable itself); shared by every backbone. Its
   data fingerprint (the image bytes, labels, splits) goes into ``DIR/study.json``.
2. **Layout rows** (``kind`` ``layout``): the MLP on the source box, the target box and all boxes
   (:mod:`probing.layout`) on the very rows each n_train uses: seconds, no backbone.
3. **Backbone rows**, per backbone (and its random-init twin, ``kind`` ``random``): the features of
   every layer wanted are extracted in one pass into ``DIR/cache`` (fp16, reused by every n_train
   and every rerun), then each row trains the heads' lr × dropout grids as one batched module
   (:func:`probing.selection.run_grids`) on the first n_train train rows, selects on val, and
   reports test accuracy with its 95% Wilson interval. Each row's grid records and a probe report
   go to ``DIR/runs/<row id>/`` (the leaderboard links there) before the row is appended.

Disk: before a unit (backbone × dataset) extracts, the free space of ``DIR``'s file system is
checked against what its cache entries will take (:func:`probing.features.entry_bytes`, exact
from the cache format) and the study stops in one line if it does not fit, before writing any of
it. With ``keep_features: false`` a unit's cache entries (only the keys it computed) are deleted
once every row of it is written, so the peak is about one unit's features; the run reports and
the leaderboard are made from the rows and the records in ``DIR/runs``, never from features.

A row already in ``DIR/results.jsonl`` is skipped (and a backbone whose rows are all there is never
loaded): kill the study anywhere and rerun the same command. The device does not change a row's
identity but is recorded in it (``device``: cpu or cuda, ``precision``), and the hardware and
per-image costs are in ``timings.jsonl``.
"""

from __future__ import annotations

import hashlib
import json
import logging
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator

import numpy as np

from sceneforge.core.atomic import atomic_write_text
from sceneforge.core.errors import ConfigError
from sceneforge.core.signals import sigterm_as_interrupt
from sceneforge.probing.backbones import create_backbone
from sceneforge.probing.data import content_hash, label_ids, load_datasets
from sceneforge.probing.features import drop_entries, entry_bytes, extract_features, layer_shapes, sweep_trash
from sceneforge.probing.groups import Group, make_groups
from sceneforge.probing.layout import layout_baselines
from sceneforge.probing.report import write_layout, write_report, write_runs
from sceneforge.probing.selection import run_grids
from sceneforge.probing.sweep import save_predictions
from sceneforge.probing.stats import wilson_ci
from sceneforge.probing.train import ProbeSplits, TrainConfig
from sceneforge.renderfarm import exit_code, run_job
from sceneforge.study.config import BackboneEntry, StudyConfig, batch_for, load_study_config, resolve_weights
from sceneforge.study.leaderboard import write_leaderboard
from sceneforge.study.results import (
    FORMAT,
    HEADER,
    RESULTS,
    append_row,
    append_timing,
    cache_records,
    check_protocol,
    merge,
    read_header,
    read_rows,
    row_id,
    row_key,
    run_id,
    versions,
    write_header,
)

log = logging.getLogger(__name__)
Say = Callable[[str], None]


@dataclass
class DatasetSpec:
    """One dataset of the study: generated (``generate`` = its `sceneforge generate` config) or given."""

    name: str
    dir: Path
    generate: dict | None = None


@dataclass
class Dataset:
    """A dataset read from disk: its table, (env, task) groups, labels and fingerprint."""

    spec: DatasetSpec
    table: object
    groups: list[Group]
    labels: np.ndarray
    fingerprint: str
    sizes: dict[tuple, list[int]] = field(default_factory=dict)  # (env, task) -> the n_train it has rows for


def resolve_device(device: str) -> str:
    """The one device of the study: features are extracted and heads trained there.
    ``auto``: CUDA when torch sees a GPU, else CPU; ``cuda`` / ``cuda:N`` without one (or past
    the last GPU) is refused in one line, before any work."""
    import torch

    device = (device or "cpu").strip().lower()
    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device != "cpu" and device != "cuda" and not (device.startswith("cuda:") and device[5:].isdigit()):
        raise ConfigError(f"--device {device!r}: expected auto, cpu, cuda or cuda:N")
    if device.startswith("cuda"):
        if not torch.cuda.is_available():
            raise ConfigError(f"--device {device}: torch sees no CUDA device (use --device cpu or auto)")
        count = torch.cuda.device_count()
        if ":" in device and int(device[5:]) >= count:
            raise ConfigError(f"--device {device}: torch sees {count} CUDA device(s) (cuda:0..cuda:{count - 1})")
    return device


def device_label(device: str) -> str:
    """What the figures and timings say produced them: ``cpu (2 threads)``, ``cuda (NVIDIA H100 ...)``."""
    import torch

    if device.startswith("cuda"):
        return f"{device} ({torch.cuda.get_device_name(torch.device(device))})"
    n = torch.get_num_threads()
    return f"cpu ({n} thread{'s' if n != 1 else ''})"


def plan_datasets(cfg: StudyConfig, out: Path) -> list[DatasetSpec]:
    if cfg.datasets:
        specs = [DatasetSpec(Path(d).name, Path(d)) for d in cfg.datasets]
        names = [s.name for s in specs]
        if len(set(names)) != len(names):
            raise ConfigError(f"datasets: two directories share a name ({names}); a row names its dataset by it")
        return specs
    return [
        DatasetSpec(f"{env}_{task}", out / "data" / f"{env}_{task}", cfg.generate_config(env, task))
        for env in cfg.environments
        for task in cfg.tasks
    ]


def data_fingerprint(table) -> str:
    """The images' bytes in order plus every label, split, env, task and triple: two datasets
    with one fingerprint give the same rows (up to the device)."""
    h = hashlib.sha256(content_hash(table["path"].tolist()).encode())
    cols = table[["file_name", "label", "split", "env", "task", "triple"]].astype(str)
    h.update(cols.to_csv(index=False).encode())
    return h.hexdigest()[:16]


def generate(
    specs: list[DatasetSpec], *, backend: str, workers: int | None, ray_address: str | None, progress: bool, say: Say
) -> None:
    """Make every dataset not complete yet (the runner resumes a partial one)."""
    for s in specs:
        if s.generate is None or (s.dir / "samples.parquet").is_file():
            continue
        say(f"study: generating {s.name} ({s.generate['n']} images) in {s.dir}")
        summary = run_job(
            "sparrta",
            s.generate,
            s.dir,
            workers=workers,
            backend=backend,
            ray_address=ray_address,
            progress=progress,
        )
        if exit_code(summary):
            raise ConfigError(
                f"{s.dir}: {len(summary.get('failed') or {})} of {summary.get('samples')} samples failed; rerun to resume"
            )


def load_dataset(spec: DatasetSpec, cfg: StudyConfig) -> Dataset:
    table = load_datasets(spec.dir)
    groups = make_groups(table, ("within",))
    labels = np.asarray(label_ids(table["label"]), dtype=np.int64)
    ds = Dataset(spec, table, groups, labels, data_fingerprint(table))
    for g in groups:
        have = len(g.idx["train"])
        ds.sizes[(g.env, g.task)] = [n for n in (cfg.n_train or (have,)) if n <= have]
    return ds


def auto_layers(num_layers: int) -> list[int]:
    """``layers: auto``: the quarter-depth blocks (12 blocks: 3, 6, 9, 12); the leaderboard marks
    per cell the layer each head picks on val."""
    return sorted({max(1, round(num_layers * k / 4)) for k in (1, 2, 3, 4)})


def _layers_wanted(entry: BackboneEntry, cfg: StudyConfig) -> tuple:
    return entry.layers or cfg.layers


def _needs_depth(layers: tuple) -> bool:
    return "auto" in layers or any(isinstance(v, int) and v < 0 for v in layers)


def _resolve(layers: tuple, num_layers: int) -> list[int]:
    if "auto" in layers:
        return auto_layers(num_layers)
    out = sorted({num_layers + 1 + v if v < 0 else v for v in layers})
    bad = [v for v in out if not 1 <= v <= num_layers]
    if bad:
        raise ConfigError(f"layers {list(layers)}: {bad} out of range (1..{num_layers}, or -1 for the last)")
    return out


def _train_config(cfg: StudyConfig, n: int, device: str = "cpu") -> TrainConfig:
    """The heads' schedule of a row with ``n`` train images, trained on ``device`` (the study's)."""
    return TrainConfig(
        lrs=tuple(cfg.lrs),
        dropouts=tuple(cfg.dropouts),
        epochs=cfg.epochs,
        warmup=cfg.warmup,
        batch_size=cfg.batch_size or batch_for(n),
        seed=cfg.train_seed,
        patience=cfg.patience,
        device=device,
    )


def _cell(acc: float, n_test: int, **extra) -> dict:
    lo, hi = wilson_ci(acc, n_test)
    return {"test": round(float(acc), 4), "ci": [round(lo, 4), round(hi, 4)], **extra}


def _base_row(kind: str, backbone: str, ds: Dataset, g: Group, layer: int, idx: dict, protocol: str) -> dict:
    return {
        "format": FORMAT,
        "kind": kind,
        "backbone": backbone,
        "dataset": ds.spec.name,
        "env": g.env,
        "task": g.task,
        "layer": layer,
        "n_train": len(idx["train"]),
        "n_val": len(idx["val"]),
        "n_test": len(idx["test"]),
        "data_fingerprint": ds.fingerprint,
        "protocol": protocol,
    }


def _idx(g: Group, n: int) -> dict:
    return dict(g.idx, train=g.idx["train"][:n])


class Study:
    """One study directory: its config, protocol, rows done, and where things go."""

    def __init__(self, cfg: StudyConfig, out: Path, device: str, say: Say, progress: bool):
        self.cfg, self.out, self.device, self.say, self.progress = cfg, Path(out), device, say, progress
        self.protocol = cfg.protocol_fingerprint()
        self.results = self.out / RESULTS
        self.out.mkdir(parents=True, exist_ok=True)
        self.header = read_header(self.out)
        check_protocol(self.out, self.header, cfg.protocol(), self.protocol)
        self.done = {row_key(r) for r in read_rows(self.results, repair=True)}
        self.layout_cache: dict[tuple, dict] = {}
        self.cache = self.out / "cache"
        self.unit_keys: dict[tuple[str, str], list[str]] = {}  # (backbone, dataset) -> the cache keys it used

    def save_header(self, datasets: dict[str, Dataset], layers: dict[str, list[int]]) -> None:
        old = self.header or {}
        header = {
            "format": FORMAT,
            "config": self.cfg.to_dict(),
            "protocol": self.cfg.protocol(),
            "protocol_fingerprint": self.protocol,
            "versions": versions(),
            "device": device_label(self.device),  # features extracted here ...
            "train_device": device_label(self.device),  # ... and heads trained here
            "datasets": {
                **old.get("datasets", {}),
                **{
                    name: {
                        "dir": str(d.spec.dir),
                        "fingerprint": d.fingerprint,
                        "images": len(d.table),
                        "generate": d.spec.generate,
                    }
                    for name, d in datasets.items()
                },
            },
            "layers": {**old.get("layers", {}), **layers},
        }
        write_header(self.out, header)
        self.header = header

    def add(self, row: dict) -> None:
        append_row(self.results, row)
        self.done.add(row_key(row))

    # --- layout floors --------------------------------------------------------------------------
    def layout(self, ds: Dataset, g: Group, n: int) -> dict:
        key = (ds.spec.name, g.env, g.task, n)
        if key not in self.layout_cache:
            self.layout_cache[key] = layout_baselines(ds.table, _idx(g, n))
        return self.layout_cache[key]

    def layout_rows(self, ds: Dataset) -> None:
        for g in ds.groups:
            for n in ds.sizes[(g.env, g.task)]:
                idx = _idx(g, n)
                row = _base_row("layout", "layout", ds, g, 0, idx, self.protocol)
                if row_key(row) in self.done:
                    continue
                base = self.layout(ds, g, n)
                row["heads"] = {k: _cell(b.acc, b.n_test, boxes=list(b.boxes)) for k, b in base.items()}
                row["device"], row["precision"], row["train_device"] = "cpu", "fp64", "cpu"
                self.add(row)
                self.say(f"{ds.spec.name} layout n={n}: " + ", ".join(f"{k} {v['test']:.3f}" for k, v in row["heads"].items()))

    # --- backbone rows --------------------------------------------------------------------------
    def todo(self, entry: BackboneEntry, ds: Dataset, layers: list[int]) -> list[tuple[Group, int, int]]:
        out = []
        for layer in layers:
            for g in ds.groups:
                for n in ds.sizes[(g.env, g.task)]:
                    key = (entry.kind, entry.name, ds.spec.name, g.env, g.task, layer, n)
                    if key not in self.done:
                        out.append((g, layer, n))
        return sorted(out, key=lambda t: (t[2], t[0].env, t[0].task, t[1]))

    def backbone_rows(self, entry: BackboneEntry, bb, ds: Dataset, todo: list) -> Iterator[dict]:
        """Extract what ``todo`` needs (one pass, cached), then train its rows, yielding each."""
        import torch

        layers = sorted({layer for _, layer, _ in todo})
        batch = pick_batch(bb, self.device, self.cfg.extract_batch)
        calls = bb.forward_calls
        shapes: dict[int, tuple[int, int, int]] = {}

        def room_for(missing: list[int]) -> None:
            shapes.update(layer_shapes(bb, missing))
            self.check_space(entry, ds, {n: shapes[n] for n in missing})

        t0, c0 = time.perf_counter(), time.process_time()
        feats = extract_features(bb, ds.table["path"].tolist(), layers, self.cache, batch, self.progress, room_for)
        seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
        self.unit_keys[(entry.name, ds.spec.name)] = [feats[n].key for n in layers]
        if bb.forward_calls > calls:  # extracted now (not a cache hit): the per-image cost
            append_timing(
                self.out,
                {
                    "what": "extract",
                    "backbone": entry.name,
                    "dataset": ds.spec.name,
                    "layers": layers,
                    "images": len(ds.table),
                    "seconds": round(seconds, 2),
                    "ms_per_image": round(1000 * seconds / max(1, len(ds.table)), 2),
                    "cpu_seconds": round(cpu, 2),  # this process's CPU time: the cost on a shared machine
                    "batch": batch,
                    "device": device_label(self.device),
                    # what the plan reads back: which cache entry holds which layer, and its shape
                    "cache": {str(n): feats[n].key for n in layers if n in shapes},
                    "shapes": {str(n): list(shapes[n]) for n in sorted(shapes)},
                },
            )
            self.say(f"{entry.name} {ds.spec.name}: features of {len(ds.table)} images in {seconds:.0f} s ({batch}/batch)")
        precision = "fp32" if not bb.amp else ("bf16" if torch.cuda.is_bf16_supported() else "fp16")
        for g, layer, n in todo:
            idx = _idx(g, n)
            t1, c1 = time.perf_counter(), time.process_time()
            f = feats[layer]
            splits = ProbeSplits.from_index(f.patches, f.prefix, ds.labels, idx)
            by_head = run_grids(self.cfg.heads, splits, _train_config(self.cfg, n, self.device))
            row = _base_row(entry.kind, entry.name, ds, g, layer, idx, self.protocol)
            kind = self.device.split(":")[0]  # cpu / cuda: the features' device and the heads' (one study device)
            row.update(spec=entry.backbone, weights=bb.weights_hash[:16], device=kind, precision=precision, train_device=kind)
            heads, records = {}, []
            for h in self.cfg.heads:
                best = next(r for r in by_head[h] if r.selected)
                heads[h] = _cell(
                    best.test_acc, len(idx["test"]), val=round(float(best.val_acc), 4), lr=best.lr, dropout=best.dropout
                )
                records += [_record(r, row, h) for r in by_head[h]]
            row["heads"] = heads
            self.write_records(row, records, ds, g, n, by_head, splits)
            train_s = time.perf_counter() - t1
            append_timing(
                self.out,
                {
                    "what": "train",
                    "row": row_id(row),
                    "n_train": n,
                    "seconds": round(train_s, 2),
                    "cpu_seconds": round(time.process_time() - c1, 2),
                    "device": device_label(self.device),
                },
            )
            self.say(
                f"{entry.name} {ds.spec.name} L{layer} n={n}: "
                + ", ".join(f"{h} {v['test']:.3f}" for h, v in heads.items())
                + f" ({train_s:.0f} s)"
            )
            yield row

    def check_space(self, entry: BackboneEntry, ds: Dataset, shapes: dict[int, tuple[int, int, int]]) -> None:
        """Refuse, in one line and before anything of the unit is written, a unit whose cache
        entries (``shapes``: the missing layers) do not fit in the free space of DIR's file system
        with :func:`space_margin` to spare."""
        need = sum(entry_bytes(len(ds.table), *s) for s in shapes.values())
        self.cache.mkdir(parents=True, exist_ok=True)
        free = shutil.disk_usage(self.cache).free
        margin = space_margin(need)
        if free >= need + margin:
            return
        fix = (
            "keep_features is false already (one unit's features at a time): free space or use another --out"
            if not self.cfg.keep_features
            else "set keep_features: false in the study config (each unit's features deleted once its rows are written) "
            "or free space"
        )
        raise ConfigError(
            f"--out {self.out}: not enough disk for the features of {entry.name} on {ds.spec.name} "
            f"(layers {', '.join(map(str, sorted(shapes)))}): they need {gb(need)} (+ {gb(margin)} margin), "
            f"{gb(free)} free; {fix}"
        )

    def unit_done(self, entry: BackboneEntry, ds_name: str, keys: list[str] | None = None) -> None:
        """Every row of (``entry``, ``ds_name``) is in results.jsonl: with ``keep_features: false``
        its cache entries go: the keys it used now and those this study recorded for it in
        timings.jsonl (an earlier run's, e.g. before keep_features was turned off); nothing else."""
        keys = list(keys if keys is not None else self.unit_keys.pop((entry.name, ds_name), []))
        if self.cfg.keep_features:
            return
        _, recorded = cache_records(self.out)
        keys += [k for (b, d, _), k in sorted(recorded.items()) if b == entry.name and d == ds_name and k not in keys]
        freed = drop_entries(self.cache, keys)
        if freed:
            self.say(f"{entry.name} {ds_name}: rows written; features deleted ({gb(freed)}, keep_features: false)")

    def write_records(
        self, row: dict, records: list[dict], ds: Dataset, g: Group, n: int, by_head: dict, splits: ProbeSplits
    ) -> None:
        """``DIR/runs/<run id>/rows/<row id>.json``: the row's grid records in probe's format and
        the layout floors of the same rows; and ``DIR/runs/<run id>/predictions/<head>_L<layer>_
        within_<env>_<task>.csv``: each head's selected config's prediction for every test image,
        in probe's format, so a per-sample analysis (per object pair, per distance; `sceneforge
        browse DATA --predictions DIR/runs/<run id>`) needs no retraining. Both written before the
        row is appended (the run's report is made from them: :func:`write_reports`)."""
        run = self.out / "runs" / run_id(row)
        meta = {"layer": row["layer"], "protocol": "within", "env": g.env, "task": g.task}
        for h in self.cfg.heads:
            save_predictions(run, h, meta, by_head[h], splits, ds.table)
        layout = [{"protocol": "within", "env": g.env, "task": g.task, **b.as_dict()} for b in self.layout(ds, g, n).values()]
        records_json = json.dumps({"records": records, "layout": layout}, sort_keys=True)
        atomic_write_text(run / "rows" / f"{row_id(row)}.json", records_json)


def write_reports(out: Path, rows: list[dict]) -> int:
    """probe's report.html of every run (backbone × dataset × n_train) whose rows are newer than
    its report; returns how many were written. A run's report covers every layer and (env, task)
    of it: one report per run, not per row (each takes ~2 s of plotting)."""
    by_run: dict[str, list[dict]] = {}
    for r in rows:
        if r["kind"] != "layout":
            by_run.setdefault(run_id(r), []).append(r)
    written = 0
    quiet = logging.getLogger("sceneforge.probing.report")
    level = quiet.level
    quiet.setLevel(logging.ERROR)  # its small-split warnings: the leaderboard shows every CI
    try:
        for rid, run_rows in sorted(by_run.items()):
            run = Path(out) / "runs" / rid
            files = [run / "rows" / f"{row_id(r)}.json" for r in sorted(run_rows, key=row_key)]
            files = [f for f in files if f.is_file()]
            report = run / "report.html"
            if not files or (report.is_file() and report.stat().st_mtime >= max(f.stat().st_mtime for f in files)):
                continue
            records, layout = [], {}
            for f in files:
                d = json.loads(f.read_text())
                records += d["records"]
                for rec in d["layout"]:
                    layout[(rec["env"], rec["task"], rec["features"])] = rec
            write_layout(run, [layout[k] for k in sorted(layout)])
            write_runs(run, records, {"rows": [f.stem for f in files]})
            write_report(run, 0)
            written += 1
    finally:
        quiet.setLevel(level)
    return written


def _record(r, row: dict, head: str) -> dict:
    """One grid point in ``sceneforge probe``'s runs.jsonl format (its report reads it)."""
    return {
        "backbone": row["backbone"],
        "weights_hash": row["weights"],
        "data": row["dataset"],
        "layer": row["layer"],
        "protocol": "within",
        "env": row["env"],
        "task": row["task"],
        "n_train": row["n_train"],
        "n_val": row["n_val"],
        "n_test": row["n_test"],
        "head": head,
        "lr": r.lr,
        "dropout": r.dropout,
        "seed": r.seed,
        "selected": r.selected,
        "val_acc": r.val_acc,
        "test_acc": r.test_acc,
        "per_class_acc": r.per_class,
        "confusion": r.confusion,
    }


SPACE_MARGIN = 64 * 2**20  # headroom beyond a unit's features: rows, run records, reports, timings


def space_margin(need: int) -> int:
    """What a unit must leave free beyond its features: 2% of them, at most 64 MiB (rows, run
    records and reports are kilobytes to megabytes), at least 1 MiB."""
    return int(min(SPACE_MARGIN, max(2**20, 0.02 * need)))


def gb(n: float) -> str:
    """Bytes as the plan and the errors print them: GB (10^9) with 2 decimals, MB below 0.1 GB."""
    return f"{n / 1e9:.2f} GB" if n >= 1e8 else f"{n / 1e6:.1f} MB"


def pick_batch(bb, device: str, cpu_batch: int) -> int:
    """The extraction batch: the config's on CPU; on a GPU the largest of 256, 128, ... whose
    forward pass (the deepest layer, the model's input size) fits in memory."""
    if not device.startswith("cuda"):
        return cpu_batch
    import torch

    h, w = bb.preprocess.input_hw
    for b in (256, 128, 64, 32, 16, 8):
        try:
            bb.extract(torch.zeros(b, 3, h, w), [bb.num_layers])
            bb.forward_calls -= 1  # a probe, not an extraction
            return b
        except torch.cuda.OutOfMemoryError:
            torch.cuda.empty_cache()
    return 4


def run_study(
    cfg: StudyConfig,
    out: str | Path,
    *,
    device: str = "cpu",
    backend: str = "inline",
    workers: int | None = None,
    ray_address: str | None = None,
    progress: bool = True,
    say: Say = print,
) -> Path:
    """Run (or resume) the study in ``out``; returns ``out/leaderboard.csv``'s folder.

    SIGTERM takes Ctrl-C's path (``KeyboardInterrupt``: :mod:`sceneforge.core.signals`), so a
    study stopped by a scheduler or ``kill`` removes the feature build folder it was writing
    (``finally`` in ``probing.features``) and its Ray tasks, as Ctrl-C does; rows already appended
    stay, and the same command resumes."""
    with sigterm_as_interrupt():
        return _run_study(cfg, Path(out), device, backend, workers, ray_address, progress, say)


def _run_study(
    cfg: StudyConfig,
    out: Path,
    device: str,
    backend: str,
    workers: int | None,
    ray_address: str | None,
    progress: bool,
    say: Say,
) -> Path:
    import torch

    if cfg.threads:
        torch.set_num_threads(cfg.threads)
    device = resolve_device(device)
    for entry in cfg.entries():  # weights not built / not there: one line before any work
        resolve_weights(entry)
    study = Study(cfg, Path(out), device, say, progress)
    sweep_trash(study.cache)  # what a deletion killed midway left (never an entry that looks complete)
    specs = plan_datasets(cfg, study.out)
    generate(
        specs,
        backend=backend,
        workers=workers or (cfg.workers if backend != "inline" else None),
        ray_address=ray_address,
        progress=progress,
        say=say,
    )
    datasets = {s.name: load_dataset(s, cfg) for s in specs}
    layers = dict((study.header or {}).get("layers", {}))
    study.save_header(datasets, layers)
    if cfg.layout:
        for ds in datasets.values():
            study.layout_rows(ds)
    units = []
    for entry in cfg.entries():
        wanted = _layers_wanted(entry, cfg)
        bb = None
        if _needs_depth(wanted) and entry.name not in layers:
            bb = _build(entry, device)
            layers[entry.name] = _resolve(wanted, bb.num_layers)
            study.save_header(datasets, layers)
        resolved = layers[entry.name] if _needs_depth(wanted) else sorted(set(wanted))
        for ds in datasets.values():
            todo = study.todo(entry, ds, resolved)
            if todo:
                units.append((entry, ds, todo))
            else:  # finished earlier: under keep_features false, what an earlier run kept goes now
                study.unit_done(entry, ds.spec.name, [])
        if backend != "ray":
            for e, ds, todo in [u for u in units if u[0] is entry]:
                bb = bb or _build(e, device)
                if not _needs_depth(wanted):
                    _resolve(wanted, bb.num_layers)  # a layer past the model's depth: one line, before any work
                for row in study.backbone_rows(e, bb, ds, todo):
                    study.add(row)
                study.unit_done(e, ds.spec.name)
            del bb
    if backend == "ray":
        _run_on_ray(study, units, ray_address)
    if cfg.reports:
        write_reports(study.out, read_rows(study.results))
    write_leaderboard(study.out, say=say)
    return study.out


def _build(entry: BackboneEntry, device: str):
    bb = create_backbone(entry.backbone, resolve_weights(entry), dict(entry.model_args or {}))
    return bb.to(device) if device != "cpu" else bb


def _ray_unit(cfg: StudyConfig, out: str, device: str, entry: BackboneEntry, spec: DatasetSpec, todo_keys: list) -> dict:
    """One (backbone, dataset) unit on a Ray worker: the rows in ``todo_keys`` and the cache keys
    they used, returned to the driver (the one writer of results.jsonl, which deletes the features
    once the rows are appended under ``keep_features: false``). The output directory must be
    shared (one machine, or a shared file system): features and run reports are written there."""
    if cfg.threads:
        import torch

        torch.set_num_threads(cfg.threads)
    study = Study(cfg, Path(out), resolve_device(device), lambda s: print(s, flush=True), False)
    ds = load_dataset(spec, cfg)
    groups = {(g.env, g.task): g for g in ds.groups}
    todo = [(groups[(env, task)], layer, n) for env, task, layer, n in todo_keys]
    rows = list(study.backbone_rows(entry, _build(entry, study.device), ds, todo))
    return {"rows": rows, "keys": study.unit_keys.get((entry.name, spec.name), [])}


def _run_on_ray(study: Study, units: list, ray_address: str | None) -> None:
    """Every (backbone, dataset) unit as a Ray task, one per GPU (``--device cuda``/``auto`` with
    a GPU) or per ``threads`` CPUs; rows are appended by this process as units finish."""
    try:
        import ray
    except ImportError:
        raise ConfigError("--backend ray: ray is not installed (pip install 'sceneforge[ray]')") from None
    if not units:
        return
    if not ray.is_initialized():
        ray.init(address=ray_address, include_dashboard=False, log_to_driver=True)
    gpu = study.device.startswith("cuda")
    remote = ray.remote(num_gpus=1 if gpu else 0, num_cpus=0 if gpu else (study.cfg.threads or 1))(_ray_unit)
    pending = {
        remote.remote(
            study.cfg,
            str(study.out.resolve()),
            "cuda" if gpu else "cpu",
            entry,
            ds.spec,
            [(g.env, g.task, layer, n) for g, layer, n in todo],
        ): (entry, ds.spec.name)
        for entry, ds, todo in units
    }
    try:
        while pending:
            finished, _ = ray.wait(list(pending), num_returns=1)
            entry, ds_name = pending.pop(finished[0])
            try:
                unit = ray.get(finished[0])
            except ray.exceptions.RayTaskError as e:  # a worker's one-line refusal (e.g. no disk) stays one line
                if isinstance(getattr(e, "cause", None), ConfigError):
                    _cancel(ray, list(pending))
                    raise ConfigError(str(e.cause)) from None
                raise
            for row in unit["rows"]:
                if row_key(row) not in study.done:
                    study.add(row)
            study.unit_done(entry, ds_name, unit["keys"])
    except KeyboardInterrupt:  # Ctrl-C or SIGTERM: the running units stop too (their build folders go)
        _cancel(ray, list(pending))
        raise


def _cancel(ray, refs: list) -> None:
    """Stop the other units (their rows are not appended: a rerun resumes them) and collect their
    outcome, so that Ray prints no "unhandled error" of theirs after the one line."""
    for ref in refs:
        ray.cancel(ref)  # KeyboardInterrupt in a running unit: its temporary cache directory is removed
    for ref in refs:
        try:
            ray.get(ref)
        except Exception:  # noqa: BLE001 - cancelled, or refused as well: the first refusal is the message
            pass


def summary_line(out: Path) -> str:
    rows = read_rows(Path(out) / RESULTS)
    kinds = {k: sum(r["kind"] == k for r in rows) for k in ("model", "random", "layout")}
    return f"{len(rows)} rows ({', '.join(f'{v} {k}' for k, v in kinds.items())})"


def merge_studies(sources: list[Path], out: Path, say: Say = print) -> list[dict]:
    """``sceneforge study merge``: the rows of several study directories as one study in ``out``
    (refused in one line where protocols or data fingerprints differ), with its leaderboard."""
    out = Path(out)
    if any(Path(s).resolve() == out.resolve() for s in sources):
        raise ConfigError(f"--out {out}: is one of the sources; merge into a new directory")
    rows, _ = merge([Path(s) for s in sources], out)
    write_leaderboard(out, say=say)
    return rows


def report(out: Path, say: Say = print) -> None:
    """``sceneforge study report DIR``: the run reports and the leaderboard again, from the rows."""
    out = Path(out)
    if not (out / HEADER).is_file():
        raise ConfigError(f"{out}: no {HEADER} (not a `sceneforge study` output directory)")
    write_reports(out, read_rows(out / RESULTS))
    write_leaderboard(out, say=say)


__all__ = ["load_study_config", "merge_studies", "report", "run_study", "summary_line"]
