"""``sceneforge farm status DIR``: done / pending / failed per shard, from the job's journal."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from sceneforge.core.errors import EXIT_INCOMPLETE, EXIT_OK


def register(subparsers) -> None:
    farm = subparsers.add_parser(
        "farm", help="render farm: inspect sharded jobs", description="Inspect a sharded generation job in an output dir."
    )
    sub = farm.add_subparsers(dest="farm_command", metavar="ACTION", required=True)
    status = sub.add_parser("status", help="done / pending / failed per shard (+ live workers)")
    status.add_argument("out_dir", type=Path, help="output dir of a generate/videos/vqa/run/demo job (sharded or inline)")
    status.add_argument("--all", action="store_true", help="list every shard, not only unfinished")
    status.add_argument("--json", action="store_true", help="machine-readable output")
    status.set_defaults(func=run_status)


def run_status(args: argparse.Namespace) -> int:
    """Print the status; exit 0 when the job is complete, 1 while samples are pending/failed."""
    from sceneforge.renderfarm.status import format_status, job_status  # the renderfarm package: not at parser build

    status = job_status(args.out_dir)
    if args.json:
        print(json.dumps(status, indent=2, default=str))
    else:
        print(format_status(status, show_all=args.all))
    counts = status["counts"]["shards"]
    finished = all(counts.get(k, 0) == 0 for k in ("pending", "failed", "unknown"))  # unknown: an inline run without a summary
    return EXIT_OK if finished else EXIT_INCOMPLETE
