"""``StudyConfig``: one YAML file that says which backbones to probe on which data, and how.

Why one file and not flags: a study is a table of many cells (backbone × environment × task ×
layer × head × n_train) that is run for days, resumed, merged across machines and cited; what
produced it must be one reviewable, versionable object. It is a config like every other
(``core/config_base.py``): unknown keys, wrong kinds and bad values are refused in one line that
names the file, the key and the value (``study.yaml: epochs must be an integer in [1, inf], got 0``).

    backbones:                      # any probing spec: timm:<name>, hf:<id-or-dir>, or a preset
      - {name: dinov2-s, backbone: dinov2-s-imgfocus}          # weights built by `sceneforge weights build`
      - {name: vit-tiny, backbone: "timm:vit_tiny_patch16_224", weights: random, layers: [6]}
    environments: [desert, city]
    tasks: [ego, allo]
    n: 400                          # images per environment x task (sceneforge generate --n)
    data: {}                        # the data policy: any other `sceneforge generate` config field
    layers: [9]                     # 1-based blocks (-1 = last), or `auto` (quarter-depth sweep)
    n_train: [400, 1000]            # first n train rows; omitted = every train row
    heads: [linear, abmilp, efficient]
    epochs: 300                     # SpaRRTa's grid, 300 epochs / patience 40 (docs/validation.md)

The data policy (``data``) defaults to whatever ``sceneforge generate`` defaults to: the study
never names a camera policy of its own. ``datasets`` instead of ``environments`` probes
directories that exist already (any ``probe --data`` dataset; its env/task groups come from its
table).
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from sceneforge.core.config_base import ConfigBase, option
from sceneforge.core.errors import ConfigError
from sceneforge.probing.backbones import parse_spec
from sceneforge.probing.layout import HIDDEN, STEPS
from sceneforge.probing.pretrained import PRETRAINED, built_file
from sceneforge.probing.registry import HEADS
from sceneforge.scenarios.sparrta.config import SparrtaConfig

TASKS = ("ego", "allo")
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")  # a backbone or dataset name: a file name part
_COUNT = (1, float("inf"))
_NATURAL = (0, float("inf"))
BACKBONE_KEYS = ("name", "backbone", "weights", "model_args", "layers", "random_control")
# data-policy keys the study sets itself (one dataset per environment x task)
STUDY_DATA_KEYS = ("envs", "env", "tasks", "task", "n", "seed")


@dataclass(frozen=True)
class BackboneEntry:
    """One backbone of the study (a random-init twin is another entry, ``kind`` ``random``)."""

    name: str  # what the leaderboard calls it (unique, file-name safe)
    backbone: str  # a probing spec: timm:<name>, hf:<id-or-dir>, or a preset
    weights: str | None = None  # None (the spec's own), "random", a file/directory, a built name
    model_args: dict | None = None
    layers: tuple[int, ...] | None = None  # None: the study's layers
    kind: str = "model"  # model | random (random init: the control)
    twin_of: str | None = None  # the entry a random twin controls
    random_control: bool = True  # False: no random-init twin of this one

    @property
    def random(self) -> bool:
        return self.weights == "random"

    def as_dict(self) -> dict:
        return {
            "name": self.name,
            "backbone": self.backbone,
            "weights": self.weights,
            "model_args": dict(self.model_args or {}),
            "layers": list(self.layers) if self.layers else None,
            "kind": self.kind,
            "twin_of": self.twin_of,
            "random_control": self.random_control,
        }


@dataclass(frozen=True)
class StudyConfig(ConfigBase):
    """A study: backbones × datasets × layers × n_train, each probed by every head's grid, with
    the layout baselines and random-init controls as rows of the same table."""

    LABEL = "study config"

    backbones: tuple = option(help="list of {name, backbone, weights, model_args, layers, random_control}")
    environments: tuple[str, ...] = option((), help="environments to generate (one dataset per environment x task)")
    tasks: tuple[str, ...] = option(("ego",), choices=TASKS, help="ego and/or allo")
    n: int = option(400, bounds=_COUNT, integer=True, help="images per environment x task")
    seed: int = option(0, bounds=(0, 2**63 - 1), integer=True, help="data seed (sceneforge generate --seed)")
    data: dict = option(default_factory=dict, help="other `sceneforge generate` config fields: the data policy")
    datasets: tuple[str, ...] = option((), help="existing dataset directories (instead of environments)")
    layers: tuple = option(("auto",), help="1-based blocks (-1 = last) or 'auto'")
    n_train: tuple = option((), help="train sizes (the first n train rows); empty = every train row")
    heads: tuple[str, ...] = option(tuple(HEADS), choices=tuple(HEADS), help="probe heads")
    epochs: int = option(300, bounds=_COUNT, integer=True, help="epochs per head config")
    warmup: int | None = option(None, bounds=_NATURAL, integer=True, help="warm-up epochs (None: epochs // 5)")
    patience: int = option(40, bounds=_NATURAL, integer=True, help="early stopping on val (0 = off)")
    lrs: tuple = option((1e-2, 1e-3, 1e-4), help="learning-rate grid")
    dropouts: tuple = option((0.2, 0.4, 0.6), help="dropout grid")
    batch_size: int | None = option(None, bounds=_COUNT, integer=True, help="head batch (None: min(256, max(32, n/16)))")
    train_seed: int = option(0, bounds=_NATURAL, integer=True, help="head initialisation seed")
    random_control: bool = option(True, help="add a random-init twin of every pretrained backbone")
    layout: bool = option(True, help="add the layout baselines (source box, target box, all boxes)")
    extract_batch: int = option(64, bounds=_COUNT, integer=True, help="backbone batch on CPU (GPU: chosen)")
    threads: int | None = option(None, bounds=_COUNT, integer=True, help="torch CPU threads")
    workers: int = option(1, bounds=_COUNT, integer=True, help="render workers while generating")
    reports: bool = option(True, help="probe's report.html per run (backbone x dataset x n_train; ~2 s each)")
    keep_features: bool = option(
        True,
        help="keep DIR/cache's features after use; false: delete each (backbone, dataset) unit's features once its rows "
        "are written (peak disk: one unit's features; a later run with more layers or n_train extracts them again)",
    )

    # --- parsing --------------------------------------------------------------------------------
    @classmethod
    def coerce(cls, values: dict, source: str) -> dict:
        special = {k: values.pop(k) for k in ("backbones", "layers", "n_train", "lrs", "dropouts", "data") if k in values}
        values = super().coerce(values, source)
        if "backbones" in special:
            values["backbones"] = _backbones(special["backbones"], source)
        if "layers" in special:
            values["layers"] = _layers(special["layers"], source)
        if "n_train" in special:
            values["n_train"] = _ints(special["n_train"], "n_train", source, low=1)
        for name, hi in (("lrs", 10.0), ("dropouts", 1.0)):
            if name in special:
                values[name] = _floats(special[name], name, source, 0.0, hi, open_low=name == "lrs")
        if "data" in special:
            if not isinstance(special["data"], dict):
                raise ConfigError(f"{source}: data must be a mapping of `sceneforge generate` fields, got {special['data']!r}")
            values["data"] = dict(special["data"])
        for name in ("random_control", "layout", "reports", "keep_features"):
            if name in values and not isinstance(values[name], bool):
                raise ConfigError(f"{source}: {name} must be true or false, got {values[name]!r}")
        return values

    def check(self, source: str) -> None:
        self.need(bool(self.backbones), "backbones", "must name at least one backbone", list(self.backbones), source)
        self.need(
            bool(self.environments) != bool(self.datasets),
            "environments",
            "or datasets: give exactly one (generate per environment, or probe existing directories)",
            list(self.environments),
            source,
        )
        self.need(bool(self.heads), "heads", "must name at least one", self.heads, source)
        if self.warmup is not None:
            self.need(self.warmup <= self.epochs, "warmup", f"must be <= epochs ({self.epochs})", self.warmup, source)
        names = [b.name for b in self.backbones]
        dup = sorted({n for n in names if names.count(n) > 1})
        self.need(not dup, "backbones", "names must be unique", dup, source)
        for key in STUDY_DATA_KEYS:
            self.need(key not in self.data, f"data.{key}", "is set by the study (environments, tasks, n, seed)", key, source)
        for env in self.environments:  # the data policy, validated as `sceneforge generate` would
            for task in self.tasks:
                SparrtaConfig.from_dict(self.generate_config(env, task), f"{source}: data")
        for d in self.datasets:
            self.need(bool(_NAME.match(Path(d).name)), "datasets", "names must be file-name safe", d, source)

    def complete(self, source: str) -> "StudyConfig":
        return replace(self, warmup=self.epochs // 5) if self.warmup is None else self

    # --- what the study runs --------------------------------------------------------------------
    def generate_config(self, env: str, task: str) -> dict:
        """The `sceneforge generate` config of one (environment, task) dataset."""
        return {**self.data, "envs": [env], "tasks": [task], "n": self.n, "seed": self.seed}

    def entries(self) -> list[BackboneEntry]:
        """The backbones, each pretrained one followed by its random-init twin (``random_control``)."""
        out = []
        for b in self.backbones:
            out.append(b)
            if self.random_control and b.random_control and b.kind == "model":
                out.append(replace(b, name=f"{b.name}-random", weights="random", kind="random", twin_of=b.name))
        return out

    def protocol(self) -> dict:
        """What makes two rows comparable: how heads are trained and selected, and the split rule.
        Not the data (each row carries its data fingerprint) nor the backbones."""
        return {
            "heads": list(self.heads),
            "lrs": list(self.lrs),
            "dropouts": list(self.dropouts),
            "epochs": self.epochs,
            "warmup": self.warmup,
            "patience": self.patience,
            "batch_size": self.batch_size or "min(256, max(32, n_train // 16))",
            "weight_decay": 1e-3,
            "train_seed": self.train_seed,
            "selection": "best val accuracy (ties: smaller lr, more dropout); test of the selected config",
            "split": "within (env, task); the first n_train train rows, every val and test row",
            "ci": "95% Wilson",
            "layout": f"MLP {HIDDEN} hidden, {STEPS} steps, on source / target / all boxes",
        }

    def protocol_fingerprint(self) -> str:
        return hashlib.sha256(json.dumps(self.protocol(), sort_keys=True).encode()).hexdigest()[:16]

    def to_dict(self) -> dict:
        d = super().to_dict()
        d["backbones"] = [b.as_dict() for b in self.backbones]
        return d


def batch_for(n_train: int) -> int:
    """Head batch: SpaRRTa's 256, but at least 16 steps per epoch on small train sets."""
    return int(min(256, max(32, n_train // 16)))


def load_study_config(path: str | Path, overrides: list[str] | tuple = ()) -> StudyConfig:
    """A study YAML file, validated (``datasets`` and weight files relative to the file's folder).
    ``overrides``: ``KEY=VALUE`` texts (``--set n=400``; VALUE is YAML: ``n_train=[300]``) that
    replace the file's top-level keys, e.g. a reduced run of a committed config."""
    import yaml

    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"{path}: no such study config file")
    try:
        raw = yaml.safe_load(path.read_text())
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f" line {mark.line + 1}" if mark else ""
        raise ConfigError(f"{path}:{where} not valid YAML ({getattr(e, 'problem', e)})") from None
    for text in overrides:
        key, sep, value = str(text).partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"--set {text!r}: expected KEY=VALUE (e.g. n=400, n_train=[300])")
        if not isinstance(raw, dict):
            break  # from_dict names the file's problem
        raw[key.strip()] = yaml.safe_load(value)
    if isinstance(raw, dict) and raw.get("datasets"):
        items = raw["datasets"] if isinstance(raw["datasets"], list) else [raw["datasets"]]
        raw["datasets"] = [str((path.parent / str(d)).resolve()) for d in items]
    cfg = StudyConfig.from_dict(raw, str(path))
    out = []  # weight files named relative to the config's folder, made absolute
    for b in cfg.backbones:
        w = b.weights
        if w and w != "random" and w not in PRETRAINED and not Path(w).is_absolute():
            w = str((path.parent / w).resolve())
        out.append(replace(b, weights=w))
    return replace(cfg, backbones=tuple(out))


def resolve_weights(entry: BackboneEntry, source: str = "study config") -> str | None:
    """What :func:`probing.backbones.create_backbone` takes: a built name becomes its file."""
    w = entry.weights
    if w in PRETRAINED:
        found = built_file(w)
        if found is None:
            raise ConfigError(f"{source}: backbone {entry.name}: weights {w} not built yet: run `sceneforge weights build {w}`")
        return str(found)
    if w and w != "random" and not Path(w).exists():
        raise ConfigError(f"{source}: backbone {entry.name}: weights {w}: no such file or directory")
    return w


def _backbones(value: Any, source: str) -> tuple[BackboneEntry, ...]:
    items = value if isinstance(value, (list, tuple)) else [value]
    out = []
    for i, item in enumerate(items):
        where = f"{source}: backbones[{i}]"
        if isinstance(item, str):
            item = {"backbone": item}
        if not isinstance(item, dict):
            raise ConfigError(f"{where}: expected a mapping {{name, backbone, weights, ...}} or a spec, got {item!r}")
        unknown = sorted(set(map(str, item)) - set(BACKBONE_KEYS))
        if unknown:
            raise ConfigError(f"{where}: unknown key(s) {', '.join(unknown)}; known: {', '.join(BACKBONE_KEYS)}")
        spec = item.get("backbone")
        if not isinstance(spec, str) or not spec.strip():
            raise ConfigError(f"{where}: backbone is required (timm:<name>, hf:<id-or-dir> or a preset), got {spec!r}")
        try:
            parse_spec(spec)
        except ConfigError as e:
            raise ConfigError(f"{where}: {str(e).replace('--backbone ', 'backbone ')}") from None
        name = str(item.get("name") or spec.split(":")[-1].split("/")[-1])
        if not _NAME.match(name):
            raise ConfigError(f"{where}: name must be letters, digits, '_', '.', '-' (a file name), got {name!r}")
        weights = item.get("weights")
        if weights is not None and not isinstance(weights, str):
            raise ConfigError(f"{where}: weights must be 'random', a file or a built name, got {weights!r}")
        args = item.get("model_args") or {}
        if not isinstance(args, dict):
            raise ConfigError(f"{where}: model_args must be a mapping (e.g. {{img_size: 224}}), got {args!r}")
        layers = item.get("layers")
        rc = item.get("random_control", True)
        if not isinstance(rc, bool):
            raise ConfigError(f"{where}: random_control must be true or false, got {rc!r}")
        out.append(
            BackboneEntry(
                name=name,
                backbone=spec.strip(),
                weights=weights,
                model_args=dict(args),
                layers=None if layers is None else _layers(layers, f"{where}:"),
                kind="random" if weights == "random" else "model",
                random_control=rc,
            )
        )
    return tuple(out)


def _items(value: Any) -> list:
    if isinstance(value, (list, tuple)):
        return list(value)
    return [v.strip() for v in str(value).split(",") if v.strip()]


def _layers(value: Any, source: str) -> tuple:
    if str(value).strip() == "auto" or _items(value) == ["auto"]:
        return ("auto",)
    items = _items(value)
    try:
        out = tuple(int(v) for v in items if not isinstance(v, bool) and float(v) == int(float(v)))
    except (TypeError, ValueError):
        out = ()
    if not items or len(out) != len(items) or any(v == 0 or v < -1 for v in out):
        raise ConfigError(f"{source} layers must be 'auto' or 1-based block numbers (-1 = last), got {value!r}")
    return tuple(sorted(set(out)))


def _ints(value: Any, name: str, source: str, low: int) -> tuple[int, ...]:
    items = [] if value is None else _items(value)
    try:
        out = tuple(int(v) for v in items if not isinstance(v, bool) and float(v) == int(float(v)))
    except (TypeError, ValueError):
        out = ()
    if len(out) != len(items) or any(v < low for v in out):
        raise ConfigError(f"{source}: {name} must be integers >= {low}, got {value!r}")
    return tuple(sorted(set(out)))


def _floats(value: Any, name: str, source: str, lo: float, hi: float, open_low: bool) -> tuple[float, ...]:
    items = _items(value)
    try:
        out = tuple(float(v) for v in items if not isinstance(v, bool))
    except (TypeError, ValueError):
        out = ()
    ok = bool(out) and len(out) == len(items) and all((lo < v if open_low else lo <= v) and v < hi for v in out)
    if not ok:
        raise ConfigError(f"{source}: {name} must be numbers in {'(' if open_low else '['}{lo:g}, {hi:g}), got {value!r}")
    return out
