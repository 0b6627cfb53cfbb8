"""``sceneforge demo``: the README's first command.

Starts the embedded render server, generates a small labelled SpaRRTa-style set (16 egocentric
+ 16 allocentric images in the desert, with instance masks), draws a contact sheet, and prints
where everything is. Rerunning it resumes (and then just re-prints).
"""
from __future__ import annotations

import argparse
from pathlib import Path


def demo_config(n: int, env: str, seed: int) -> dict:
    return {"envs": [env], "tasks": ["ego", "allo"], "n": n, "seed": seed, "masks": True}


def run(args: argparse.Namespace) -> int:
    from renderfarm import run_job
    from scenarios.sparrta.card import rejection_summary
    from scenarios.sparrta.preview import contact_sheet
    from sceneforge.commands.common import fetch_defaults_once

    out = Path(args.out)
    fetch_defaults_once(args)     # real models on first use; one line if offline
    summary = run_job("sparrta", demo_config(args.n, args.env, args.seed), out, backend="inline",
                      progress=not args.quiet)
    if summary["failed"]:
        from core.errors import PlacementError

        raise PlacementError(f"demo: {len(summary['failed'])} samples failed; e.g. {next(iter(summary['failed'].values()))}")
    sheet = contact_sheet(out, out / "contact_sheet.png", n=min(16, 2 * args.n))
    stats = summary["finalize"]
    print(f"sceneforge demo: {stats['samples']} labelled images ({args.n} ego + {args.n} allo, {args.env}) "
          f"in {summary['seconds']:.1f} s")
    print(f"  images + SpaRRTa params: {out}/{args.env}/<task>/<triple>/img_NNNN.jpg, params_NNNN.json")
    print(f"  table:                   {out / 'samples.parquet'}  (also {out / 'metadata.csv'})")
    print(f"  dataset card:            {out / 'dataset_card.json'}")
    print(f"  contact sheet:           {sheet}")
    print(f"  labels {stats['by_label']}; splits {stats['by_split']}")
    print("  " + rejection_summary(stats))
    print(f"next: sceneforge preview {out} --n 16   |   python -c \"import pandas as pd; "
          f"print(pd.read_parquet('{out / 'samples.parquet'}').head())\"")
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("demo", help="generate a small labelled dataset + contact sheet (start here)",
                       description="Start the embedded renderer, make 16 ego + 16 allo images, draw a contact sheet.")
    p.add_argument("--out", default="demo", help="output directory (default ./demo)")
    p.add_argument("--n", type=int, default=16, help="images per task (default 16)")
    p.add_argument("--env", default="desert", help="environment (default desert)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.add_argument("--no-fetch", action="store_true",
                   help="do not fetch the real assets on first use (also: SCENEFORGE_NO_FETCH=1); "
                        "the procedural pack stands in")
    p.set_defaults(func=run)
