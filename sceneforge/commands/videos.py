"""``sceneforge videos`` (DSI-Bench-style clips + 4 variants + CSVs) and ``sceneforge dsi-eval``.

Examples::

    sceneforge videos --env city --n 250 --out dsi_city --seed 0
    sceneforge dsi-eval --meta dsi_city/metadata --pred runs/mymodel
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

from core.errors import ConfigError


def register(subparsers) -> None:
    v = subparsers.add_parser("videos", help="render DSI-Bench-style dynamic clips (std/hflip/reverse/reverse_hflip)",
                              description="Render dynamic clips with 9 camera/object motion patterns, their "
                                          "hflip/reverse/reverse_hflip variants and DSI-Bench metadata CSVs.")
    v.add_argument("--env", help="environment name (sceneforge envs list) or YAML path")
    v.add_argument("--n", type=int, help="number of clips")
    v.add_argument("--out", type=Path, required=True, help="output directory (created; resumable)")
    v.add_argument("--seed", type=int, help="job seed (default 0)")
    v.add_argument("--config", type=Path, help="YAML with videos config fields (flags override)")
    v.add_argument("--frames", type=int, help="frames per clip (motion.n_frames, default 16)")
    v.add_argument("--fps", type=float, help="frames per second (motion.fps, default 8)")
    v.add_argument("--size", type=int, help="square frame size in pixels (default: the env's, 224)")
    v.add_argument("--patterns", nargs="+", help="subset of the 9 motion patterns (cam_X-obj_Y)")
    v.add_argument("--no-clutter", action="store_true", help="no background objects")
    v.add_argument("--workers", type=int, help="worker processes, one render server each (default: CPUs)")
    v.add_argument("--backend", default="local", choices=("local", "ray"), help="render farm backend")
    v.add_argument("--servers", help="comma-separated external UnrealCV servers host:port (one worker each)")
    v.add_argument("--ray-address", help="ray.init address for --backend ray")
    v.add_argument("--inline", action="store_true", help="no farm: one in-process worker and one server")
    v.set_defaults(func=run_videos)

    e = subparsers.add_parser("dsi-eval", help="DSI-Bench sample-wise and group-wise accuracy",
                              description="Score predictions {aug}/{model}.csv (final_answer column, or raw "
                                          "text with <answer>X</answer>) against metadata/{aug}.csv.")
    e.add_argument("--meta", type=Path, required=True, help="metadata dir with std/hflip/reverse/reverse_hflip.csv")
    e.add_argument("--pred", type=Path, required=True, help="predictions dir with {aug}/{model}.csv")
    e.add_argument("--model", help="model name (file stem); default: the only CSV in PRED/std/")
    e.add_argument("--n-group", type=int, default=3, help="group counts as correct with >= N of 4 right (default 3)")
    e.add_argument("--single", metavar="AUG", help="also print DSI's single-view accuracy of one variant")
    e.add_argument("--json", action="store_true", help="print the scores as JSON")
    e.set_defaults(func=run_eval)


def build_config(args: argparse.Namespace) -> dict:
    """Config dict from --config YAML overridden by flags (validated later by the scenario)."""
    cfg: dict = {}
    if args.config:
        import yaml

        try:
            cfg = yaml.safe_load(args.config.read_text()) or {}
        except (OSError, yaml.YAMLError) as e:
            raise ConfigError(f"{args.config}: cannot read videos config ({' '.join(str(e).split())})") from e
        if not isinstance(cfg, dict):
            raise ConfigError(f"{args.config}: top level must be a mapping of videos config fields")
    for key, val in (("env", args.env), ("n", args.n), ("seed", args.seed), ("image_size", args.size)):
        if val is not None:
            cfg[key] = val
    motion = dict(cfg.get("motion") or {})
    for key, val in (("n_frames", args.frames), ("fps", args.fps), ("patterns", args.patterns)):
        if val is not None:
            motion[key] = val
    if motion:
        cfg["motion"] = motion
    if args.no_clutter:
        cfg["clutter"] = False
    for req in ("env", "n"):
        if req not in cfg:
            raise ConfigError(f"videos: --{req} is required (or set '{req}' in --config)")
    return cfg


def run_videos(args: argparse.Namespace) -> int:
    from scenarios import videos

    config = build_config(args)
    videos.plan(config)  # validate before touching the output dir
    if args.inline:
        stats = run_inline(config, args.out)
    else:
        from renderfarm.job import run_job

        summary = run_job("scenarios.videos", config, args.out, workers=args.workers, backend=args.backend,
                          servers=args.servers, ray_address=args.ray_address)
        if not summary.get("finalized"):
            return 1
        stats = summary["finalize"]
    print(json.dumps(stats, indent=2))
    return 0


def run_inline(config: dict, out_dir: Path) -> dict:
    """One shard with all indices on one embedded server (no farm journal)."""
    from engine.server.launch import start_server
    from renderfarm.contract import Shard
    from scenarios import videos

    plan = videos.plan(config)
    job = out_dir / "job.json"
    if job.is_file() and json.loads(job.read_text()).get("fingerprint") != plan.fingerprint:
        raise ConfigError(f"{out_dir} holds a videos job with a different config ({job}); use another --out")
    out_dir.mkdir(parents=True, exist_ok=True)
    from scenarios.writers import atomic_write_json

    atomic_write_json(job, {"scenario": "scenarios.videos", "fingerprint": plan.fingerprint, "config": config})
    from tqdm import tqdm

    failed: dict[int, str] = {}
    with start_server() as srv:
        for index in tqdm(range(plan.n_samples), desc="videos", unit="clip"):
            failed.update(videos.run(config, Shard(index, (index,)), out_dir, server=srv.address).failed)
    if failed:
        first = next(iter(failed.items()))
        raise ConfigError(f"videos: {len(failed)} clip(s) failed, e.g. clip {first[0]}: {first[1]}; "
                          "rerun the same command to retry them")
    return videos.finalize(config, out_dir)


def run_eval(args: argparse.Namespace) -> int:
    from scenarios.videos import dsi_eval

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
