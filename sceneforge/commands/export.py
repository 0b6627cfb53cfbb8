"""``sceneforge export``: a generated dataset in another project's layout or format.

sceneforge export --layout sparrta data/ sparrta_data/
SPARRTA_DATA_ROOT=sparrta_data python train.py environment=city_2 ...   # their code, unchanged
sceneforge export --format hf data/ hf_data/
python -c "import datasets; print(datasets.load_from_disk('hf_data'))"   # no code of ours
sceneforge export --format wds data/ wds_data/ [--wds-shard-size 1000]   # WebDataset tar shards, no re-render
"""

from __future__ import annotations

from pathlib import Path

from sceneforge.core.errors import ConfigError

LAYOUTS = ("sparrta",)
FORMATS = ("hf", "wds")


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "export", help="write a generated dataset in another project's layout (sparrta) or format (hf, wds)"
    )
    how = p.add_mutually_exclusive_group(required=True)
    how.add_argument("--layout", choices=LAYOUTS, help="sparrta: turhancan97/SpaRRTa's <env>[_N]/mid-objects/ folders and labels")
    how.add_argument(
        "--format",
        choices=FORMATS,
        help="hf: a Hugging Face DatasetDict (save_to_disk + Parquet shards, images embedded, "
        "ClassLabel labels; needs `datasets`); wds: WebDataset tar shards (the bytes `generate --format wds` writes)",
    )
    p.add_argument("--wds-shard-size", type=int, metavar="N", help="--format wds: samples per shard (default 1000)")
    p.add_argument("data", type=Path, help="a finished `sceneforge generate` output directory")
    p.add_argument("out", type=Path, help="new directory to write (must not exist or be empty)")
    p.set_defaults(func=run)


def run(args) -> int:
    try:
        return _export(args)
    except OSError as e:  # a full disk, a read-only target: one line (the exports leave no temp dir)
        why = f"{e.strerror or type(e).__name__}: {e.filename or args.out}"
        raise ConfigError(f"{args.out}: cannot write the export ({why})") from None


def _export(args) -> int:
    if args.wds_shard_size is not None and args.format != "wds":
        raise ConfigError("--wds-shard-size needs --format wds")
    if args.format == "wds":
        from sceneforge.renderfarm.wds import DEFAULT_SHARD_SIZE, export_wds  # the renderfarm package: not at parser build

        stats = export_wds(args.data, args.out, DEFAULT_SHARD_SIZE if args.wds_shard_size is None else args.wds_shard_size)
        print(f"{args.out}: {stats['samples']} samples in {stats['shards']} WebDataset shards (index.json)")
        return 0
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
