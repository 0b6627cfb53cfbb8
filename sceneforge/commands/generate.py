"""``sceneforge generate``: SpaRRTa-style relation images; ``sceneforge preview``: contact sheet.

sceneforge generate --env desert --task ego --n 5000 --out data/desert_ego --seed 0
sceneforge generate --env all --task both --n 10000 --out data/ --workers 2
sceneforge preview data/desert_ego --n 16 --out sheet.png
"""

from __future__ import annotations

import argparse
from pathlib import Path

from sceneforge.commands import config_flags
from sceneforge.commands.common import add_runner_flags, run_scenario
from sceneforge.engine.server.renderers import check_renderer
from sceneforge.scenarios.sparrta.config import SparrtaConfig  # numpy, no renderer: flags from its fields

TASKS = {"ego": ["ego"], "allo": ["allo"], "both": ["ego", "allo"]}


def config_from_args(args: argparse.Namespace):
    """``--config`` YAML overridden by the flags given on the command line → (config, plain dict)."""
    extra = {
        "tasks": TASKS[args.task] if args.task else None,
        "image_format": None if args.format == "wds" else args.format,
    }  # wds: jpg images, packed into shards
    return config_flags.config_from_args(args, SparrtaConfig, command="sceneforge generate", extra=extra)


def run_generate(args: argparse.Namespace) -> int:
    from sceneforge.scenarios.sparrta.card import (
        layout_summary,
        rejection_summary,
    )  # the scenario's pandas/pydantic: not at parser build

    cfg, _ = config_from_args(args)
    if cfg.renderer:  # e.g. cycles not installed: one line now, not a failed server per worker
        check_renderer(cfg.renderer)
    summary = run_scenario("sparrta", cfg, args.out, args)
    stats = summary.get("finalize", {})
    print(
        f"{summary.get('samples')} samples in {args.out} ({summary.get('rendered', 0)} rendered this run, "
        f"{summary.get('samples_per_s', 0):.2f} labelled images/s); labels {stats.get('by_label')}"
    )
    print(rejection_summary(stats))
    if stats.get("layout_baselines"):
        print(layout_summary(stats))
    return 0


def run_preview(args: argparse.Namespace) -> int:
    from sceneforge.scenarios.sparrta.preview import contact_sheet  # PIL, pandas: not at parser build

    out = Path(args.out) if args.out else Path(args.data_dir) / "contact_sheet.png"
    path = contact_sheet(Path(args.data_dir), out, n=args.n, size=args.size, split=args.split)
    print(f"contact sheet: {path}")
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "generate",
        help="SpaRRTa-style ego/allo relation images with labels",
        description="Generate (or resume) a labelled relation dataset in --out.",
    )
    p.add_argument("--out", required=True, help="output directory (rerun the same command to resume)")
    p.add_argument("--task", choices=sorted(TASKS), help="ego (camera), allo (human figure) or both (default ego)")
    p.add_argument(
        "--format",
        choices=["jpg", "png", "wds"],
        help="image format (default jpg, as SpaRRTa); wds: jpg images, and the finished dataset "
        "also packed into WebDataset tar shards in OUT/wds/ (image + json + mask per sample)",
    )
    p.add_argument(
        "--wds-shard-size", type=int, default=None, help="samples per WebDataset shard with --format wds (default 1000)"
    )
    config_flags.add_config_flags(p, SparrtaConfig, skip=("tasks", "image_format"))  # --env, --n, --size, --masks, ...
    p.add_argument("--config", help="YAML file of config fields (flags override it)")
    add_runner_flags(p)
    p.set_defaults(func=run_generate)

    q = sub.add_parser("preview", help="contact sheet of a generated dataset with labels drawn")
    q.add_argument("data_dir", help="a `sceneforge generate` output directory")
    q.add_argument("--n", type=int, default=16, help="number of samples (default 16)")
    q.add_argument("--out", help="PNG path (default DATA_DIR/contact_sheet.png)")
    q.add_argument("--size", type=int, default=224, help="tile width in pixels")
    q.add_argument("--split", choices=["train", "val", "test"], help="only this split")
    q.set_defaults(func=run_preview)
