"""``sceneforge export``: a generated dataset in another project's layout or format.

sceneforge export --layout sparrta data/ sparrta_data/
SPARRTA_DATA_ROOT=sparrta_data python train.py environment=city_2 ...   # their code, unchanged
sceneforge export --format hf data/ hf_data/
python -c "import datasets; print(datasets.load_from_disk('hf_data'))"   # no code of ours
"""

from __future__ import annotations

from pathlib import Path

LAYOUTS = ("sparrta",)
FORMATS = ("hf",)


def register(subparsers) -> None:
    p = subparsers.add_parser("export", help="write a generated dataset in another project's layout (sparrta) or format (hf)")
    how = p.add_mutually_exclusive_group(required=True)
    how.add_argument("--layout", choices=LAYOUTS, help="sparrta: turhancan97/SpaRRTa's <env>[_N]/mid-objects/ folders and labels")
    how.add_argument(
        "--format",
        choices=FORMATS,
        help="hf: a Hugging Face DatasetDict (save_to_disk + Parquet shards, images embedded, "
        "ClassLabel labels; needs `datasets`)",
    )
    p.add_argument("data", type=Path, help="a finished `sceneforge generate` output directory")
    p.add_argument("out", type=Path, help="new directory to write (must not exist or be empty)")
    p.set_defaults(func=run)


def run(args) -> int:
    if args.format == "hf":
        from sceneforge.scenarios.sparrta.hf_export import export_hf  # pandas, pyarrow: not at parser build

        counts = export_hf(args.data, args.out)
        print(f"{args.out}: DatasetDict {counts} (datasets.load_from_disk; Parquet shards in {args.out / 'data'})")
        return 0
    from sceneforge.scenarios.sparrta.layout import export_sparrta  # pydantic, pandas: not at parser build

    counts = export_sparrta(args.data, args.out)
    for folder, n in sorted(counts.items()):
        print(f"{args.out / folder / 'mid-objects'}: {n} samples")
    return 0
