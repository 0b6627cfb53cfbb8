"""``sceneforge study``: probe many backbones across environments and tasks into one leaderboard.

    sceneforge study benchmarks/studies/desert_ego.yaml --out runs/study        # generate, probe, tabulate
    sceneforge study CONFIG --out DIR --device auto --backend ray                # GPUs / a Ray cluster
    sceneforge study merge machineA/study machineB/study --out runs/merged      # one table of several
    sceneforge study report DIR                                                  # rewrite the leaderboard
    sceneforge study CONFIG --out DIR --plan                                     # the bill first: cells, data, time

The library (``sceneforge.study``, torch, pandas) is imported only when a command runs.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from sceneforge.commands.common import fetch_defaults_once, out_flag
from sceneforge.core.errors import ConfigError
from sceneforge.core.extras import require_extra

USAGE = (
    "sceneforge study CONFIG --out DIR [--set KEY=VALUE] [--device auto|cpu|cuda] [--backend inline|local|ray] [--plan]\n"
    "       sceneforge study merge DIR_OR_RESULTS [DIR_OR_RESULTS ...] --out DIR\n"
    "       sceneforge study report DIR"
)


def run_study_command(args: argparse.Namespace) -> int:
    require_extra("probe")  # no torch: one line naming the install command, before any work
    if args.backend == "ray":
        require_extra("ray")
    from sceneforge.study import run as study  # torch, pandas, the scenario configs: not at parser build

    words = list(args.what)
    if words[0] == "merge":
        if len(words) < 2 or not args.out:
            raise ConfigError("merge needs at least one source and --out DIR (sceneforge study --help)")
        rows = study.merge_studies([Path(w) for w in words[1:]], Path(out_flag(args.out)))
        print(f"study merge: {len(rows)} rows from {len(words) - 1} sources in {args.out}")
        return 0
    if words[0] == "report":
        if len(words) != 2:
            raise ConfigError("report takes one study directory (sceneforge study --help)")
        study.report(Path(words[1]))
        return 0
    if len(words) != 1:
        raise ConfigError(
            f"expected one study config, got {len(words)} arguments ({' '.join(words)}); see sceneforge study --help"
        )
    if not args.out:
        raise ConfigError("--out is required: the study's directory (rerun the same command to resume)")
    cfg = study.load_study_config(words[0], args.set or ())
    out = Path(out_flag(args.out))
    if args.plan:  # the bill first: what would run and for how long; nothing fetched, generated or written
        from sceneforge.study.plan import format_plan, plan_study

        print(format_plan(plan_study(cfg, out, args.device, args.workers), words[0]))
        return 0
    if cfg.environments:
        fetch_defaults_once(args)  # generating: the real assets, as `generate` (no-op when built)
    study.run_study(
        cfg,
        out,
        device=args.device,
        backend=args.backend or ("local" if (args.workers or cfg.workers) > 1 else "inline"),
        workers=args.workers,
        ray_address=args.ray_address,
        progress=not args.quiet,
    )
    print(f"study: {study.summary_line(out)}")
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "study",
        help="probe backbones x environments x tasks into a leaderboard (generate, extract, train, tabulate)",
        description="Run (or resume) the study a YAML config describes: generate the datasets it needs, extract "
        "each backbone's features once, train every probe head's lr x dropout grid per layer and train size, add "
        "random-init controls and layout baselines, and write DIR/leaderboard.csv, .md and .html (docs/study.md). "
        "`study merge A B ... --out DIR` merges study directories of several machines; `study report DIR` "
        "rewrites the leaderboard.",
        usage=USAGE,
    )
    p.add_argument("what", nargs="+", metavar="CONFIG | merge SOURCES... | report DIR", help="a study YAML, or merge/report")
    p.add_argument("--out", help="the study directory (results.jsonl, study.json, data/, cache/, runs/, leaderboard.*)")
    p.add_argument(
        "--device",
        default="cpu",
        help="feature extraction device: cpu (default, tested), cuda, cuda:N, or auto (CUDA when present); "
        "on a GPU the batch is the largest that fits and the forward pass runs in bf16/fp16",
    )
    p.add_argument("--backend", choices=["inline", "local", "ray"], help="generation workers, and with ray the probing too")
    p.add_argument("--workers", type=int, help="render workers while generating (default: the config's workers)")
    p.add_argument("--ray-address", help="Ray cluster address (with --backend ray; default: a local Ray)")
    p.add_argument(
        "--set",
        action="append",
        metavar="KEY=VALUE",
        help="replace a top-level config key (repeatable; VALUE is YAML), e.g. --set n=400 --set n_train=[300]",
    )
    p.add_argument(
        "--plan",
        "--dry-run",
        action="store_true",
        help="print what the study would run (datasets to generate, cells, features) and an estimated time from measured "
        "per-image costs (saying where each was measured); runs and writes nothing",
    )
    p.add_argument("--quiet", action="store_true", help="no progress bars")
    p.add_argument("--no-fetch", action="store_true", help="do not fetch the real assets on first use")
    p.set_defaults(func=run_study_command)
