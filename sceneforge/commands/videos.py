"""``sceneforge videos`` (DSI-Bench-style clips + 4 variants + CSVs) and ``sceneforge dsi-eval``.

Examples::

    sceneforge videos --env city --n 250 --out dsi_city --seed 0
    sceneforge dsi-eval --meta dsi_city/metadata --pred runs/mymodel
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from sceneforge.commands.common import add_runner_flags, run_scenario
from sceneforge.commands.config_flags import add_config_flags, config_from_args
from sceneforge.engine.server.renderers import check_renderer
from sceneforge.scenarios.videos.config import VideoConfig  # numpy, no renderer: flags from its fields


def register(subparsers) -> None:
    v = subparsers.add_parser(
        "videos",
        help="render DSI-Bench-style dynamic clips (std/hflip/reverse/reverse_hflip)",
        description="Render dynamic clips with 9 camera/object motion patterns, their "
        "hflip/reverse/reverse_hflip variants and DSI-Bench metadata CSVs.",
    )
    v.add_argument("--out", required=True, help="output directory (created; resumable)")
    v.add_argument("--config", type=Path, help="YAML with videos config fields (flags override)")
    add_config_flags(v, VideoConfig)  # --env, --n, --seed, --size, --frames, --fps, --patterns, ... from its fields
    v.add_argument(
        "--shake",
        type=float,
        nargs=2,
        metavar=("CM", "DEG"),
        help="handheld camera shake amplitude (motion.shake_cm <= 1.5, motion.shake_deg <= 0.4)",
    )
    v.add_argument("--inline", action="store_true", help="same as --backend inline: one server in this process")
    v.add_argument("--json", action="store_true", help="print the dataset's stats as JSON instead of the summary lines")
    add_runner_flags(v)
    v.set_defaults(func=run_videos)

    e = subparsers.add_parser(
        "dsi-eval",
        help="DSI-Bench sample-wise and group-wise accuracy",
        description="Score predictions {aug}/{model}.csv (final_answer column, or raw "
        "text with <answer>X</answer>) against metadata/{aug}.csv.",
    )
    e.add_argument("--meta", type=Path, required=True, help="metadata dir with std/hflip/reverse/reverse_hflip.csv")
    e.add_argument("--pred", type=Path, required=True, help="predictions dir with {aug}/{model}.csv")
    e.add_argument("--model", help="model name (file stem); default: the only CSV in PRED/std/")
    e.add_argument("--n-group", type=int, default=3, help="group counts as correct with >= N of 4 right (default 3)")
    e.add_argument("--single", metavar="AUG", help="also print DSI's single-view accuracy of one variant")
    e.add_argument("--json", action="store_true", help="print the scores as JSON")
    e.set_defaults(func=run_eval)


def build_config(args: argparse.Namespace):
    """``--config`` YAML overridden by flags → (VideoConfig, plain dict)."""
    extra = {
        "motion.shake_cm": args.shake[0] if args.shake else None,  # one flag, two fields
        "motion.shake_deg": args.shake[1] if args.shake else None,
    }
    return config_from_args(args, VideoConfig, command="sceneforge videos", extra=extra)


def run_videos(args: argparse.Namespace) -> int:
    cfg, _ = build_config(args)
    if cfg.renderer:  # e.g. cycles not installed: one line now, not a failed server per worker
        check_renderer(cfg.renderer)
    if args.inline:
        args.backend = "inline"
    summary = run_scenario("videos", cfg, args.out, args)
    stats = summary.get("finalize", {})
    if args.json:
        print(json.dumps(stats, indent=2))
        return 0
    out = args.out
    print(
        f"  {stats.get('questions', 0)} questions {stats.get('by_cate', {})}; patterns {stats.get('patterns', {})}; "
        f"answers {stats.get('answers', {})}"
    )
    print(f"  clips: {out}/videos/<variant>/<env>/NNNNNN.mp4; metadata: {out}/metadata/<variant>.csv, {out}/clips.parquet")
    print(f"videos: wrote {stats.get('clips', summary.get('samples'))} clips (4 variants each) to {out}")
    return 0  # run_scenario raised JobIncomplete (exit 1) unless every clip is done


def run_eval(args: argparse.Namespace) -> int:
    from sceneforge.scenarios.videos import dsi_eval  # not at parser build: `sceneforge --help` start-up

    r = dsi_eval.evaluate(args.meta, args.pred, args.model, args.n_group)
    if args.single:
        r["single_view"] = dsi_eval.single_view(dsi_eval.load_all(args.meta, args.pred, r["model"]), args.single)
    if args.json:
        print(json.dumps({k: (v.__dict__ if hasattr(v, "__dict__") else v) for k, v in r.items()}, indent=2))
        return 0
    print(f"Model: {r['model']}")
    print(dsi_eval.format_scores("=== Method 1: Independent Samples ===", r["sample_wise"]))
    print(dsi_eval.format_scores(f"=== Method 2: Ensemble Voting (n>={args.n_group}) ===", r["group_wise"]))
    if args.single:
        print(dsi_eval.format_scores(f"=== Method 3: Single View Evaluation ({args.single}) ===", r["single_view"]))
    return 0
