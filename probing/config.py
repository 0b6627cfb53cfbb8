"""``ProbeConfig``: a probe job, the one description of it: what ``sceneforge probe`` (or a
``--config probe.yaml``, or Python) asks for, validated; :func:`probing.sweep.run_probe` runs it.

Why a dataclass and not the argparse namespace: a probe run is configured from a YAML file, the
command line, or Python (``benchmarks/sparrta_study.py``), and all three must mean the same
thing and fail the same way. Like every scenario config it is built by ``from_dict(raw,
source)`` (``scenarios.config_loader.load_config`` merges the file and the flags first); every
error is one line naming the file (when there is one) and the key.

Keys are the command's long options with ``_`` for ``-`` (``batch_size`` or ``batch-size``);
list-valued options take a YAML list or a comma string (``heads: [linear, efficient]`` or
``heads: linear,efficient``); ``model_arg`` takes ``[img_size=224]`` or a mapping. Old key names
(``no_progress``) still work with one deprecation line (``core/config_names.py``).

    >>> cfg = ProbeConfig.from_dict({"data": "d", "backbone": "x", "out": "o", "epochs": 50}, "command line")
    >>> cfg.warmup, cfg.heads, cfg.train.warmup
    (10, ('linear', 'abmilp', 'efficient'), 10)
"""
from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

from sceneforge.core.config_names import rename_keys
from sceneforge.core.errors import ConfigError
from sceneforge.probing.registry import HEADS, PROTOCOLS

# SpaRRTa's schedule per head: (epochs, warm-up epochs)
SPARRTA_SCHEDULE = {"linear": (1000, 200), "abmilp": (500, 100), "efficient": (500, 100)}


@dataclass(frozen=True)
class ProbeConfig:
    """Datasets → cached features of ``layers`` → every head's lr x dropout grid per (layer, env,
    task) under ``protocol`` → run records and a report in ``out``. Field = ``sceneforge probe``'s
    long option (``extract_batch`` = ``--extract-batch``)."""
    data: str
    backbone: str
    out: str
    weights: str | None = None
    model_arg: dict = field(default_factory=dict)
    layers: tuple[int, ...] | None = None          # 1-based blocks (-1 = last); None = last
    heads: tuple[str, ...] = tuple(HEADS)
    protocol: tuple[str, ...] = ("within",)
    cache: str | None = None
    epochs: int = 100
    warmup: int | None = None                      # None: epochs // 5 (SpaRRTa's 200/1000 and 100/500)
    sparrta_schedule: bool = False
    lrs: tuple[float, ...] = (1e-2, 1e-3, 1e-4)
    dropouts: tuple[float, ...] = (0.2, 0.4, 0.6)
    batch_size: int = 256
    extract_batch: int = 64
    runs: int = 1
    patience: int = 0                              # early stopping on val (epochs); 0 = off
    seed: int = 0
    cls: bool = False
    threads: int | None = None
    attention_samples: int = 4
    attention_flow: int = 0
    quiet: bool = False                            # no progress bars (old key: no_progress)
    min_test: int | None = None                    # None: probing.report.MIN_TEST (30); 0: no minimum

    @classmethod
    def from_dict(cls, raw: dict, source: str = "command line") -> "ProbeConfig":
        where = f"--config {source}: " if source != "command line" else ""
        raw = rename_keys(raw, "probe", f"--config {source}" if where else source)
        known = {f.name for f in fields(cls)}
        values: dict[str, Any] = {}
        for key, value in raw.items():
            name = str(key).replace("-", "_")
            if name not in known:
                raise ConfigError(f"{where}unknown key {key!r}")
            if value is not None:
                values[name] = _parse(name, value, f"{where}{key}" if where else f"--{name.replace('_', '-')}")
        for name in ("data", "backbone", "out"):
            if not values.get(name):
                raise ConfigError(f"--{name} is required (on the command line or in --config)")
        epochs = values.get("epochs", cls.epochs)
        warmup = values.get("warmup")
        if warmup is not None and warmup > epochs:
            raise ConfigError(f"{where or '--'}warmup {warmup}: must be <= epochs ({epochs})")
        values["warmup"] = epochs // 5 if warmup is None else warmup
        return cls(**values)

    @property
    def train(self):
        """The head-training part as :class:`probing.train.TrainConfig` (derived, not stored)."""
        from sceneforge.probing.train import TrainConfig  # torch: a ProbeConfig is read and checked without it

        return TrainConfig(lrs=self.lrs, dropouts=self.dropouts, epochs=self.epochs, warmup=self.warmup,
                           batch_size=self.batch_size, runs=self.runs, seed=self.seed, use_cls=self.cls,
                           patience=self.patience,
                           epochs_by_head=dict(SPARRTA_SCHEDULE) if self.sparrta_schedule else {})

    def job(self) -> "ProbeConfig":
        """Deprecated: a ProbeConfig is the job (:func:`probing.sweep.run_probe` takes it)."""
        import logging

        logging.getLogger(__name__).warning("ProbeConfig.job() is deprecated: pass the ProbeConfig to run_probe")
        return self


def _items(value) -> list:
    if isinstance(value, (list, tuple)):
        return list(value)
    return [v.strip() for v in str(value).split(",") if v.strip()]


def _ints(value, what: str, lo: int, hi: float = float("inf"), allow_minus_one: bool = False) -> tuple[int, ...]:
    try:
        items = tuple(int(v) for v in _items(value) if not isinstance(v, bool) and float(v) == int(float(v)))
    except (TypeError, ValueError):
        items = ()
    if not items or len(items) != len(_items(value)) or any(
            not (lo <= v < hi or (allow_minus_one and v == -1)) for v in items):
        raise ConfigError(f"{what} {value!r}: expected integer(s) >= {lo}")
    return items


def _floats(value, what: str, lo: float, hi: float) -> tuple[float, ...]:
    try:
        items = tuple(float(v) for v in _items(value))
    except (TypeError, ValueError):
        items = ()
    if not items or any(not lo <= v < hi for v in items):
        raise ConfigError(f"{what} {value!r}: expected comma-separated numbers in [{lo:g}, {hi:g})")
    return items


def _names(value, what: str, allowed) -> tuple[str, ...]:
    items = tuple(str(v) for v in _items(value))
    if not items or any(v not in allowed for v in items):
        raise ConfigError(f"{what} {value!r}: expected a comma list of {', '.join(allowed)}")
    return items


def _model_args(value, what: str) -> dict:
    import yaml

    if isinstance(value, dict):
        return {str(k): v for k, v in value.items()}
    out = {}
    for pair in (value if isinstance(value, (list, tuple)) else [value]):
        key, sep, text = str(pair).partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"{what} {pair!r}: expected KEY=VALUE (e.g. img_size=224)")
        out[key.strip()] = yaml.safe_load(text)
    return out


def _flag(value, what: str) -> bool:
    if isinstance(value, bool):
        return value
    raise ConfigError(f"{what} {value!r}: expected true or false")


def _parse(name: str, value, what: str):
    if name in ("data", "backbone", "out", "weights", "cache"):
        return str(value)
    if name == "model_arg":
        return _model_args(value, what)
    if name == "layers":
        return None if str(value).strip() in ("", "last") else _ints(value, what, 1, allow_minus_one=True)
    if name == "heads":
        return _names(value, what, tuple(HEADS))
    if name == "protocol":
        return _names(value, what, tuple(PROTOCOLS))
    if name == "lrs":
        return _floats(value, what, 1e-12, 10.0)
    if name == "dropouts":
        return _floats(value, what, 0.0, 1.0)
    if name in ("sparrta_schedule", "cls", "quiet"):
        return _flag(value, what)
    lo = {"warmup": 0, "seed": 0, "attention_samples": 0, "attention_flow": 0, "min_test": 0,
          "patience": 0}.get(name, 1)
    numbers = _ints(value, what, lo)
    if len(numbers) != 1:
        raise ConfigError(f"{what} {value!r}: expected one integer")
    return numbers[0]
