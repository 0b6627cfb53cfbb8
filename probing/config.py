"""``ProbeConfig``: a probe job, the one description of it: what ``sceneforge probe`` (or a
``--config probe.yaml``, or Python) asks for, validated; :func:`probing.sweep.run_probe` runs it.

Why a dataclass and not the argparse namespace: a probe run is configured from a YAML file, the
command line, or Python (``benchmarks/sparrta_study.py``), and all three must mean the same
thing and fail the same way. It is built on core's config base (``core/config_base.py``, as every
scenario's config is): ``from_dict(raw, source)`` (``scenarios.config_loader.load_config`` merges
the file and the flags first), every error one line naming ``--config FILE`` (or ``command line``),
the key, the value and what is allowed: ``--config p.yaml: epochs must be a number in [1, inf], got 0``.

Keys are the command's long options with ``_`` for ``-`` (``batch_size`` or ``batch-size``);
list-valued options take a YAML list or a comma string (``heads: [linear, efficient]`` or
``heads: linear,efficient``); ``model_arg`` takes ``[img_size=224]`` or a mapping. Old key names
(``no_progress``) still work with one deprecation line (``core/config_names.py``).

    >>> cfg = ProbeConfig.from_dict({"data": "d", "backbone": "x", "out": "o", "epochs": 50}, "command line")
    >>> cfg.warmup, cfg.heads, cfg.train.warmup
    (10, ('linear', 'abmilp', 'efficient'), 10)
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from sceneforge.core.config_base import ConfigBase, option
from sceneforge.core.config_names import rename_keys
from sceneforge.core.errors import ConfigError
from sceneforge.probing.registry import HEADS, PRESETS, PROTOCOLS

# The heads a probe trains unless --heads says otherwise: SpaRRTa's three, named here (a head
# registered later, e.g. a plugin's, is a choice, never silently added to every user's default)
DEFAULT_HEADS = ("linear", "abmilp", "efficient")
COMMAND_LINE = "command line"
_COUNT = (1, float("inf"))  # bounds of a count (epochs, batch sizes, runs, threads)
_NATURAL = (0, float("inf"))  # bounds of a number that may be 0 (seed, patience, ...)


def _where(name: str, source: str) -> str:
    """How errors name a key: its flag on the command line, ``--config p.yaml: key`` from a file."""
    return f"--{name.replace('_', '-')}" if source == COMMAND_LINE else f"{source}: {name}"


def _count(default, help: str = "", low: tuple = _COUNT, metavar: str | None = None) -> Any:
    return option(default, bounds=low, integer=True, help=help, metavar=metavar)


@dataclass(frozen=True)
class ProbeConfig(ConfigBase):
    """Datasets → cached features of ``layers`` → every head's lr x dropout grid per (layer, env,
    task) under ``protocol`` → run records and a report in ``out``. Field = ``sceneforge probe``'s
    long option (``extract_batch`` = ``--extract-batch``). Validated as every config is
    (``core/config_base.py``: ``option`` bounds and choices); lists and ``model_arg`` are parsed
    from their YAML/flag spellings first (:meth:`coerce`)."""

    LABEL = COMMAND_LINE

    data: str = option(help="dataset dir (samples.parquet|metadata.parquet|csv) or a parent of several")
    backbone: str = option(help="timm:<name>[.<tag>], hf:<id-or-dir>, or a preset: " + ", ".join(PRESETS))
    out: str = option(help="output directory for runs, reports and (default) the cache")
    weights: str | None = option(None, help="local weights: timm file (.safetensors/.pth), hf directory, or 'random'")
    model_arg: dict = option(
        default_factory=dict,
        repeat=True,
        metavar="KEY=VALUE",
        help="extra model constructor argument (repeatable), e.g. img_size=224",
    )
    layers: tuple[int, ...] | None = option(None, parse=str, help="1-based blocks, comma list (-1 = last; default: last)")
    heads: tuple[str, ...] = option(
        DEFAULT_HEADS,
        choices=tuple(HEADS),
        parse=str,
        help=f"comma list (default: {','.join(DEFAULT_HEADS)}) of: "
        + "; ".join(f"{h.name} ({h.description})" for h in HEADS.values()),
    )
    protocol: tuple[str, ...] = option(
        ("within",),
        choices=tuple(PROTOCOLS),
        parse=str,
        help="comma list (default: within) of: " + "; ".join(f"{e.name} ({e.description})" for e in PROTOCOLS.values()),
    )
    cache: str | None = option(None, help="feature cache directory (default: OUT/cache)")
    epochs: int = _count(100, "training epochs per head (default 100)")
    warmup: int | None = _count(None, "warmup epochs (linear), then cosine (default: epochs // 5)", _NATURAL)
    sparrta_schedule: bool = option(
        False,
        help="SpaRRTa's schedule: each head's own epochs/warmup (its class's SPARRTA_SCHEDULE: linear "
        "1000/200, abmilp and efficient 500/100; overrides --epochs)",
    )
    lrs: tuple[float, ...] = option((1e-2, 1e-3, 1e-4), parse=str, help="learning-rate grid (default 1e-2,1e-3,1e-4)")
    dropouts: tuple[float, ...] = option((0.2, 0.4, 0.6), parse=str, help="dropout grid (default 0.2,0.4,0.6)")
    batch_size: int = _count(256, "head training batch (default 256)")
    extract_batch: int = _count(64, "backbone batch during extraction (default 64)")
    runs: int = _count(1, "seeds of the selected config (mean ± std; default 1)")
    patience: int = _count(
        0,
        "early stopping: a config stops N epochs after its best val accuracy (after warm-up) and keeps "
        "that epoch's weights (default 0 = train every epoch)",
        _NATURAL,
        "N",
    )
    seed: int = _count(0, "random seed (default 0)", _NATURAL)
    cls: bool = option(False, help="linear head on the CLS token instead of GAP")
    threads: int | None = _count(None, "torch CPU threads (torch.set_num_threads)")
    attention_samples: int = _count(4, "test images whose attention maps are saved (default 4)", _NATURAL)
    attention_flow: int = _count(
        0,
        "ViTs: per-layer attention flow between source/target/viewpoint objects on N test images per "
        "task (needs data generated with --masks); plotted in the report",
        _NATURAL,
        "N",
    )
    quiet: bool = option(False, help="no progress bars")
    min_test: int | None = _count(
        None,
        "refuse to report an (env, task) with fewer than N test images (default 30: below that a 95% CI "
        "is wider than ±0.17; 0 = report anything)",
        _NATURAL,
        "N",
    )

    @classmethod
    def from_dict(cls, raw: Any, source: str | None = COMMAND_LINE) -> "ProbeConfig":
        """As every config's, with errors naming ``--config FILE`` (or ``command line``) and the key."""
        source = source or COMMAND_LINE
        return super().from_dict(raw, source if source == COMMAND_LINE else f"--config {source}")

    @classmethod
    def rename_aliases(cls, values: dict, source: str) -> dict:
        """Keys with ``_`` for ``-``, old names renamed (one deprecation line); None = not given."""
        values = rename_keys(values, "probe", source)
        return {str(k).replace("-", "_"): v for k, v in values.items() if v is not None}

    @classmethod
    def coerce(cls, values: dict, source: str) -> dict:
        """YAML/flag spellings into field values: comma strings or lists, ``KEY=VALUE`` pairs, numbers."""
        return {name: _parse(name, value, _where(name, source)) for name, value in values.items()}

    @staticmethod
    def need(ok: bool, name: str, what: str, value: Any, source: str) -> None:
        """As every config's, naming the flag on the command line: ``--epochs must be ..., got 0``."""
        if not ok:
            raise ConfigError(f"{_where(name, source)} {what}, got {value!r}")

    def check(self, source: str) -> None:
        for name in ("data", "backbone", "out"):
            self.need(
                bool(getattr(self, name)), name, "is required (on the command line or in --config)", getattr(self, name), source
            )
        for name in ("heads", "protocol"):
            self.need(bool(getattr(self, name)), name, "must name at least one", getattr(self, name), source)
        if self.warmup is not None:
            self.need(self.warmup <= self.epochs, "warmup", f"must be <= epochs ({self.epochs})", self.warmup, source)

    def complete(self, source: str) -> "ProbeConfig":
        return self if self.warmup is not None else replace(self, warmup=self.epochs // 5)

    @property
    def train(self):
        """The head-training part as :class:`probing.train.TrainConfig` (derived, not stored)."""
        from sceneforge.probing.train import TrainConfig, sparrta_schedules  # torch: a ProbeConfig is read and checked without it

        return TrainConfig(
            lrs=self.lrs,
            dropouts=self.dropouts,
            epochs=self.epochs,
            warmup=self.warmup,
            batch_size=self.batch_size,
            runs=self.runs,
            seed=self.seed,
            use_cls=self.cls,
            patience=self.patience,
            epochs_by_head=sparrta_schedules(self.heads) if self.sparrta_schedule else {},  # each head class's own
        )

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
    if not items or len(items) != len(_items(value)) or any(not (lo <= v < hi or (allow_minus_one and v == -1)) for v in items):
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


def _model_args(value, what: str) -> dict:
    import yaml

    if isinstance(value, dict):
        return {str(k): v for k, v in value.items()}
    out = {}
    for pair in value if isinstance(value, (list, tuple)) else [value]:
        key, sep, text = str(pair).partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"{what} {pair!r}: expected KEY=VALUE (e.g. img_size=224)")
        out[key.strip()] = yaml.safe_load(text)
    return out


def _flag(value, what: str) -> bool:
    if isinstance(value, bool):
        return value
    raise ConfigError(f"{what} {value!r}: expected true or false")


def _number(value):
    """A number's text (a flag, a comma string) as the number; anything else as it is (the field's
    ``option`` checks it)."""
    if isinstance(value, str):
        try:
            return int(value)
        except ValueError:
            try:
                return float(value)
            except ValueError:
                return value
    return value


def _parse(name: str, value, what: str):
    if name in ("data", "backbone", "out", "weights", "cache"):
        return str(value)
    if name == "model_arg":
        return _model_args(value, what)
    if name == "layers":
        return None if str(value).strip() in ("", "last") else _ints(value, what, 1, allow_minus_one=True)
    if name in ("heads", "protocol"):
        return tuple(str(v) for v in _items(value))
    if name == "lrs":
        return _floats(value, what, 1e-12, 10.0)
    if name == "dropouts":
        return _floats(value, what, 0.0, 1.0)
    if name in ("sparrta_schedule", "cls", "quiet"):
        return _flag(value, what)
    return _number(value)
