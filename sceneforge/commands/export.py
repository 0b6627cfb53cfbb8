"""``sceneforge export --layout sparrta DATA OUT``: a generated dataset in another project's layout.

    sceneforge export --layout sparrta data/ sparrta_data/
    SPARRTA_DATA_ROOT=sparrta_data python train.py environment=city_2 ...   # their code, unchanged
"""
from __future__ import annotations

from pathlib import Path

LAYOUTS = ("sparrta",)


def register(subparsers) -> None:
    p = subparsers.add_parser("export", help="write a generated dataset in another project's layout (sparrta)")
    p.add_argument("--layout", choices=LAYOUTS, required=True,
                   help="sparrta: turhancan97/SpaRRTa's <env>[_N]/mid-objects/ folders and labels")
    p.add_argument("data", type=Path, help="a finished `sceneforge generate` output directory")
    p.add_argument("out", type=Path, help="new directory to write (must not exist or be empty)")
    p.set_defaults(func=run)


def run(args) -> int:
    from sceneforge.scenarios.sparrta.layout import export_sparrta

    counts = export_sparrta(args.data, args.out)
    for folder, n in sorted(counts.items()):
        print(f"{args.out / folder / 'mid-objects'}: {n} samples")
    return 0
