"""How much one object's box says about the label under a camera policy: geometry only, no render.

Run: ``python benchmarks/layout_leak.py --env desert --task ego --policy decorrelated --groups 300
[--triple rock_truck] [--seed 5] [--max-pair-dist 450] [--window 0.15,0.85] [--no-quotas]
[--fit-quotas 1 [--fit-groups 300] [--bins 4]]``, or
``python benchmarks/layout_leak.py --table OUT`` for a generated dataset's table (the CV column
of docs/validation.md). Defaults: desert, ego, ``decorrelated``, 300 groups, the environment's
first triple, seed 5, the environment's pair distance, the window 0.15-0.85, quotas as a job
applies them (allo).

Draws the views with ``scenarios/sparrta/quota_pilot.py``'s ``pilot()``, the one render-free
sampler (the layout quotas are calibrated on it too): per scene group four samples, one per label,
drawn as a job draws them (``setting_for`` + the sample's look lens and anchor point
``sample_setting`` + ``sample_view``, the figure shape picked per group), with ``--seed`` in place
of the job's. ``--max-pair-dist`` overrides the unit's ``Setting`` (``pilot(setting=...)``),
``--window`` decorrelated's anchor window, ``--no-quotas`` leaves out the layout quotas
(scenarios/sparrta/quotas.py, allo since 0.7.0: 0.6.0's views). ``--fit-quotas SEED`` is the
ablation for a task without a shipped table (ego): a table is fitted (``quotas.fit``, ``--bins``
cells per feature) on a pilot at ``SEED`` of ``--fit-groups`` groups, the judged views are thinned
by its acceptance probabilities and kept at equal counts per label, as a job keeps them. Each labelled object's box is its
projected footprint prism (the bound of what a render reports; no visibility check, so a few
more views pass than in a real job); ``probing/layout.py``'s MLP is fitted on each box alone and
on all boxes with scene-grouped 5-fold cross-validation (chance 0.25). Also prints, per label, the
mean source position and log area and the mean target - source offset: where the leak comes from,
and each box's shorter and longer side (how far a 16 x 16 patch floor is from the views drawn).

Why: a policy change (issue 46's ``decorrelated``) is judged by these numbers; a render-free
estimate takes ~1 min for 1,200 views instead of ~8 min for a rendered 1,000-sample dataset. The
ablation rows of docs/validation.md "The 0.6.0 default" (pair distance, anchor window) came from
its first sampler (a copy of the pilot with its own seeds, one figure shape, no look lens; same
rules), before it used ``pilot()``.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from sceneforge.probing.layout import box_features, fit_mlp  # noqa: E402
from sceneforge.scenarios.sampling.relations import LABELS  # noqa: E402
from sceneforge.scenarios.sparrta import camera_policy  # noqa: E402
from sceneforge.scenarios.sparrta.config import parse_config  # noqa: E402
from sceneforge.scenarios.sparrta.quota_pilot import pilot  # noqa: E402
from sceneforge.scenarios.sparrta.quotas import BOXES  # noqa: E402


def views(args) -> tuple[pd.DataFrame, Counter, int]:
    """The pilot views of ``args`` (``quota_pilot.pilot``: drawn as a job draws them, quotas applied
    unless ``--no-quotas``) as a table of boxes, one row per view: ``label``, scene group ``g``
    and each labelled object's projected footprint-prism box (``<name>_bbox_x0`` ... at the image
    size, as ``probing/layout.box_features`` reads a dataset's table)."""
    cfg = parse_config({"envs": [args.env], "tasks": [args.task], "camera_policy": args.policy})
    env = cfg.env(args.env)
    triple = args.triple or env.triples[0].id
    if args.window:  # an ablation of decorrelated's anchor window (read by camera_policy.anchor_screen)
        camera_policy.DECORRELATED_WINDOW = tuple(float(v) for v in args.window.split(","))
    setting = {"max_pair_dist_cm": float(args.max_pair_dist)} if args.max_pair_dist else None
    p = pilot(cfg, env.name, args.task, triple, args.seed, args.groups, quotas=not args.no_quotas, setting=setting)
    keep = np.arange(len(p["labels"]))
    if args.fit_quotas is not None:
        keep = fitted_quota_rows(args, cfg, env.name, triple, setting, p)
    rows = []
    for label, g, boxes in zip(p["labels"][keep], p["groups"][keep], p["boxes"][keep]):
        row = {"label": LABELS[label], "g": int(g), "camera_width": p["size"], "camera_height": p["size"]}
        for name, (x0, y0, x1, y1) in zip(BOXES[args.task], boxes):
            row.update({f"{name}_bbox_x0": x0, f"{name}_bbox_y0": y0, f"{name}_bbox_x1": x1, f"{name}_bbox_y1": y1})
        rows.append(row)
    return pd.DataFrame(rows), p["rejections"], p["failed"]


def fitted_quota_rows(args, cfg, env: str, triple: str, setting: dict | None, p: dict) -> np.ndarray:
    """Rows of the judged pilot ``p`` kept by a quota table fitted on another pilot (seed
    ``--fit-quotas``): each view with its acceptance probability (uniforms from seed 0), then an
    equal number per label (drawn with seed 1), as a job keeps ``n / 4`` of each label."""
    from sceneforge.scenarios.sparrta import quotas

    fit_pilot = pilot(cfg, env, args.task, triple, args.fit_quotas, args.fit_groups, setting=setting)
    table = quotas.fit(fit_pilot["feats"], fit_pilot["labels"], env, args.task, triple, bins=args.bins)
    prob = quotas.accept_probs(table, p["feats"], p["labels"])
    cells = f"{args.bins} x {args.bins} cells, pilot seed {args.fit_quotas}"
    print(f"  fitted table ({cells}): acceptance per label {table.acceptance}")
    kept = np.flatnonzero(np.random.default_rng(0).random(len(prob)) < prob)
    labels = p["labels"][kept]
    m = int(np.bincount(labels, minlength=len(LABELS)).min())
    rng = np.random.default_rng(1)
    return np.concatenate([rng.choice(kept[labels == k], m, replace=False) for k in range(len(LABELS))])


def cv_accuracy(x: np.ndarray, y: np.ndarray, fold: np.ndarray) -> float:
    accs = []
    for k in range(5):
        idx = {
            "test": np.flatnonzero(fold == k),
            "val": np.flatnonzero(fold == (k + 1) % 5),
            "train": np.flatnonzero((fold != k) & (fold != (k + 1) % 5)),
        }
        accs.append(fit_mlp(x, y, idx))
    return float(np.mean(accs))


def table_cv(out: Path, samples_per_scene: int = 4) -> None:
    """Scene-grouped 5-fold CV of the layout MLP on a generated dataset's ``samples.parquet`` (per
    env/task; a scene = ``samples_per_scene`` consecutive samples of a triple): the steadier twin
    of the card's split numbers, as docs/validation.md reports them."""
    t = pd.read_parquet(Path(out) / "samples.parquet")
    for (env, task), g in t.groupby(["env", "task"], sort=True):
        g = g.reset_index(drop=True)
        y = np.array([LABELS.index(v) for v in g.label])
        scene = g.triple_id.astype(str) + "/" + (g.unit_index // samples_per_scene).astype(str)
        codes = pd.factorize(scene)[0]
        fold = np.random.default_rng(0).permutation(codes.max() + 1)[codes] % 5
        sets = {"source": ("source",), "target": ("target",)}
        if task == "allo":
            sets["figure"] = ("human",)
        sets["all boxes"] = ("source", "target", "human")
        cells = {k: f"{cv_accuracy(box_features(g, objs)[0], y, fold):.3f}" for k, objs in sets.items()}
        print(f"{env}/{task} ({len(g)} samples, scene-grouped 5-fold CV):", cells)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--env", default="desert")
    ap.add_argument("--task", default="ego", choices=("ego", "allo"))
    ap.add_argument("--policy", default="decorrelated", choices=camera_policy.CAMERA_POLICIES)
    ap.add_argument("--groups", type=int, default=300, help="scene groups (4 views each, one per label)")
    ap.add_argument("--triple", default=None, help="triple id (default: the environment's first)")
    ap.add_argument("--seed", type=int, default=5, help="the pilot's seed, in place of a job's (default 5)")
    ap.add_argument("--max-pair-dist", type=float, default=None, help="override the source-target distance limit, cm")
    ap.add_argument("--no-quotas", action="store_true", help="leave out decorrelated's layout quotas (allo: 0.6.0's views)")
    ap.add_argument("--window", default=None, help="override decorrelated's anchor window, e.g. 0.15,0.85")
    ap.add_argument(
        "--fit-quotas", type=int, default=None, metavar="SEED", help="fit a quota table on a pilot at SEED, thin the views by it"
    )
    ap.add_argument("--fit-groups", type=int, default=300, help="scene groups of the --fit-quotas pilot (default 300)")
    ap.add_argument("--bins", type=int, default=4, help="cells per feature of a --fit-quotas table (default 4, as shipped)")
    ap.add_argument("--table", default=None, help="a generated dataset directory: CV of its table instead of a pilot")
    args = ap.parse_args()
    if args.table:
        return table_cv(Path(args.table))
    t0 = time.time()
    t, rej, fails = views(args)
    print(f"{args.env} {args.task} {args.policy}: {len(t)} views, {fails} without a view, {time.time() - t0:.0f} s")
    print("  rejections per view:", {k: round(v / max(1, len(t))) for k, v in rej.most_common(5)})
    y = np.array([LABELS.index(v) for v in t.label])
    fold = t.g.to_numpy() % 5
    sets = {"source": ("source",), "target": ("target",), "all boxes": ("source", "target", "human")}
    if args.task == "allo":
        sets["figure"] = ("human",)
    for name, objs in sets.items():
        print(f"  {name}: {cv_accuracy(box_features(t, objs)[0], y, fold):.3f}")
    sides = {}
    for name in ("source", "target", "human"):
        if f"{name}_bbox_x0" in t:
            w = t[f"{name}_bbox_x1"] - t[f"{name}_bbox_x0"]
            h = t[f"{name}_bbox_y1"] - t[f"{name}_bbox_y0"]
            sides[name] = (np.minimum(w, h).to_numpy(), np.maximum(w, h).to_numpy())
    print(
        "  box sides, px (median shorter / longer):",
        {k: f"{np.median(a):.1f} / {np.median(b):.1f}" for k, (a, b) in sides.items()},
        f"| views whose every box is >= 16 px on both sides: {np.mean(np.min([a for a, _ in sides.values()], axis=0) >= 16):.3f}",
    )
    xs, xt = box_features(t, ("source",))[0], box_features(t, ("target",))[0]
    for lab in LABELS:
        m = (t.label == lab).to_numpy()
        print(
            f"  {lab:5s} source x {xs[m, 0].mean():.2f} y {xs[m, 1].mean():.2f} log area {xs[m, 4].mean():.2f} | "
            f"target - source dx {(xt[m, 0] - xs[m, 0]).mean():+.2f} dy {(xt[m, 1] - xs[m, 1]).mean():+.2f}"
        )


if __name__ == "__main__":
    main()
