"""``sceneforge degrade``: SpaceDG's nine degradations as variants of a finished dataset.

Example::

    sceneforge generate --env desert --task ego --n 64 --out data/d --depth --masks
    sceneforge degrade data/d --types haze defocus distortion --levels 1 3 5
"""

from __future__ import annotations

import argparse
from pathlib import Path

from sceneforge.scenarios.degrade import TYPES  # light: OpenCV is imported when degrading


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "degrade",
        help="write degraded variants (defocus, haze, ...) beside a dataset's images",
        description="Write SpaceDG-style degraded variants of every image of a finished "
        "dataset (labels unchanged) and a degraded.parquet/.csv table. "
        "defocus, motion_blur and haze need depth maps (generate with --depth); "
        "distortion warps masks too (--masks).",
    )
    p.add_argument("dataset", type=Path, help="dataset directory (samples.parquet or metadata.csv)")
    p.add_argument(
        "--types",
        nargs="+",
        default=list(TYPES),
        choices=TYPES,
        metavar="TYPE",
        help=f"degradations (default: all nine: {', '.join(TYPES)})",
    )
    p.add_argument("--levels", nargs="+", type=int, default=[1, 3, 5], help="severity levels 1..5 (default 1 3 5)")
    p.add_argument("--seed", type=int, default=0, help="seed of the random draws (drops, noise, motion direction)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from sceneforge.scenarios.degrade.dataset import degrade_dataset  # the dataset writers: not at parser build

    r = degrade_dataset(args.dataset, args.types, args.levels, seed=args.seed)
    print(f"{r['variants']} variants ({r['written']} written, {r['kept']} already there) -> {r['table']}")
    return 0
