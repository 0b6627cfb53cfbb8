"""``sceneforge generate``: SpaRRTa-style relation images; ``sceneforge preview``: contact sheet.

    sceneforge generate --env desert --task ego --n 5000 --out data/desert_ego --seed 0
    sceneforge generate --env all --task both --n 10000 --out data/ --workers 2
    sceneforge preview data/desert_ego --n 16 --out sheet.png
"""
from __future__ import annotations

import argparse
from pathlib import Path

TASKS = {"ego": ["ego"], "allo": ["allo"], "both": ["ego", "allo"]}
# CLI flag (dest) -> config field; None values mean "use the environment's default".
FLAGS = {"env": "envs", "n": "n", "seed": "seed", "size": "image_size", "triples": "triples", "format": "image_format",
         "masks": "masks", "depth": "depth", "margin_ego": "margin_ego_deg", "margin_allo": "margin_allo_deg",
         "min_visible_ratio": "min_visible_ratio", "min_bbox_px": "min_bbox_px",
         "samples_per_scene": "samples_per_scene", "licenses": "licenses", "renderer": "renderer",
         "layout": "layout", "figure_yaw": "figure_yaw",
         "aim_jitter": "aim_jitter_deg", "camera_policy": "camera_policy"}


def config_from_args(args: argparse.Namespace):
    """``--config`` YAML overridden by the flags given on the command line → (config, plain dict)."""
    from sceneforge.scenarios.config_loader import load_config
    from sceneforge.scenarios.sparrta.config import SparrtaConfig

    overrides = {key: getattr(args, flag) for flag, key in FLAGS.items()}
    if overrides.get("image_format") == "wds":   # jpg images (the default), packed into shards
        overrides["image_format"] = None
    overrides = {k: v for k, v in overrides.items() if v is not None and v is not False}
    if args.task:
        overrides["tasks"] = TASKS[args.task]
    if args.no_clutter:
        overrides["clutter"] = False
    return load_config(SparrtaConfig.from_dict, command="sceneforge generate", config_file=args.config,
                       overrides=overrides)


def run_generate(args: argparse.Namespace) -> int:
    from sceneforge.scenarios.sparrta.card import rejection_summary
    from sceneforge.commands.common import run_scenario

    cfg, config = config_from_args(args)
    if cfg.renderer:  # e.g. cycles not installed: one line now, not a failed server per worker
        from sceneforge.engine.server.renderers import check_renderer

        check_renderer(cfg.renderer)
    summary = run_scenario("sparrta", config, args.out, args)
    stats = summary.get("finalize", {})
    print(f"{summary.get('samples')} samples in {args.out} ({summary.get('rendered', 0)} rendered this run, "
          f"{summary.get('samples_per_s', 0):.2f} labelled images/s); labels {stats.get('by_label')}")
    print(rejection_summary(stats))
    return 0



def run_preview(args: argparse.Namespace) -> int:
    from sceneforge.scenarios.sparrta.preview import contact_sheet

    out = Path(args.out) if args.out else Path(args.data_dir) / "contact_sheet.png"
    path = contact_sheet(Path(args.data_dir), out, n=args.n, size=args.size, split=args.split)
    print(f"contact sheet: {path}")
    return 0



def register(sub: argparse._SubParsersAction) -> None:
    from sceneforge.commands.common import add_runner_flags

    p = sub.add_parser("generate", help="SpaRRTa-style ego/allo relation images with labels",
                       description="Generate (or resume) a labelled relation dataset in --out.")
    p.add_argument("--env", nargs="+", help="environment name(s), a YAML path, or 'all' (default desert)")
    p.add_argument("--task", choices=sorted(TASKS), help="ego (camera), allo (human figure) or both (default ego)")
    p.add_argument("--n", type=int, help="samples per (environment, task), spread over the triples (default 40)")
    p.add_argument("--out", required=True, help="output directory (rerun the same command to resume)")
    p.add_argument("--seed", type=int, help="random seed (default 0)")
    p.add_argument("--size", type=int, help="square image size in pixels (default 224)")
    p.add_argument("--triples", nargs="+", help="only these triple ids, e.g. rock_truck")
    p.add_argument("--format", choices=["jpg", "png", "wds"],
                   help="image format (default jpg, as SpaRRTa); wds: jpg images, and the finished dataset "
                        "also packed into WebDataset tar shards in OUT/wds/ (image + json + mask per sample)")
    p.add_argument("--wds-shard-size", type=int, default=None,
                   help="samples per WebDataset shard with --format wds (default 1000)")
    p.add_argument("--layout", choices=["sceneforge", "sparrta"],
                   help="sparrta: also write OUT/sparrta/<env>[_N]/mid-objects for SpaRRTa's train.py")
    p.add_argument("--figure-yaw", choices=["random", "face_source"],
                   help="allo figure's yaw: random (default, as SpaRRTa's scenes) or facing the source; "
                        "the label never depends on it")
    p.add_argument("--aim-jitter", type=float,
                   help="camera aim: the objects' centroid turned by uniform ±DEG yaw and pitch (default 15; "
                        "0 = exactly at the centroid, which lets one object's position give the label away)")
    p.add_argument("--camera-policy", choices=["jitter", "sparrta", "balanced"],
                   help="where the camera aims: jitter (default: the objects' centroid ± --aim-jitter), sparrta "
                        "(exactly at the centroid, as SpaRRTa describes) or balanced (the source at an image "
                        "position drawn independently of the label: no source-box shortcut); docs/datasets.md")
    p.add_argument("--masks", action="store_true", help="also write instance masks (mask_NNNN.png)")
    p.add_argument("--depth", action="store_true", help="also write depth (depth_NNNN.npy, cm)")
    p.add_argument("--no-clutter", action="store_true", help="leave out the environment's background objects")
    p.add_argument("--margin-ego", type=float, help="ambiguity margin for the camera, degrees (default 15)")
    p.add_argument("--margin-allo", type=float, help="ambiguity margin for the human, degrees (default 10)")
    p.add_argument("--min-visible-ratio", type=float, help="visible/unoccluded pixels per object (default 0.8)")
    p.add_argument("--min-bbox-px", type=float, help="min bbox longest edge at the output size, px")
    p.add_argument("--samples-per-scene", type=int, help="samples sharing one placement (default 4)")
    p.add_argument("--licenses", type=lambda v: [x.strip() for x in v.split(",") if x.strip()],
                   help="only assets of these license families, e.g. cc0,cc-by (no CC-BY-SA renders)")
    p.add_argument("--renderer", help="renderer of the servers this job starts: gl (default) or cycles "
                   "(path-traced lit; `sceneforge renderers install cycles`), e.g. cycles:samples=32")
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
