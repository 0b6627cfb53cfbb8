"""How much one object's box says about the label under a camera policy: geometry only, no render.

Run: ``python benchmarks/layout_leak.py --env desert --task ego --policy decorrelated --groups 300
[--triple rock_truck] [--max-pair-dist 450] [--window 0.15,0.85] [--no-quotas]``, or
``python benchmarks/layout_leak.py --table OUT`` for a generated dataset's table (the CV column
of docs/validation.md).

Samples views the way the scenario does (``setting_for`` + ``sample_setting`` + ``sample_view``;
one scene group of four samples, one per label, per group), takes each labelled object's projected
footprint-prism box (the bound of what a render reports; no visibility check, so a few more
views pass than in a real job) and fits ``probing/layout.py``'s MLP on each box alone and on all
boxes with scene-grouped 5-fold cross-validation (chance 0.25). Also prints, per label, the mean
source position and log area and the mean target - source offset: where the leak comes from.

Why: a policy change (issue 46's ``decorrelated``) is judged by these numbers; a render-free
estimate takes ~1 min for 1,200 views instead of ~8 min for a rendered 1,000-sample dataset. The
ablation rows of docs/validation.md "The 0.6.0 default" (pair distance, anchor window) came from it.
The policy's layout quotas (scenarios/sparrta/quotas.py, allo since 0.7.0) apply as in a job:
``--no-quotas`` leaves them out. Calibration and the quotas' own before/after measurement on
fresh pilots of all triples: ``scenarios/sparrta/quota_pilot.py``.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from sceneforge.core.errors import PlacementError  # noqa: E402
from sceneforge.probing.layout import box_features, fit_mlp  # noqa: E402
from sceneforge.scenarios.sampling.rejection import sample_rng  # noqa: E402
from sceneforge.scenarios.sampling.relations import LABELS  # noqa: E402
from sceneforge.scenarios.sparrta import camera_policy  # noqa: E402
from sceneforge.scenarios.sparrta.config import Unit, parse_config  # noqa: E402
from sceneforge.scenarios.sparrta.scene import ShapeCache, build_group, sample_view  # noqa: E402
from sceneforge.scenarios.sparrta.setting import sample_setting, setting_for  # noqa: E402
from sceneforge.scenarios.world.environments import load_env  # noqa: E402


def views(args) -> tuple[pd.DataFrame, Counter, int]:
    env = load_env(args.env)
    shapes = ShapeCache(env.library)
    tri = next((t for t in env.triples if t.id == args.triple), env.triples[0]) if args.triple else env.triples[0]
    human = shapes.pick(np.random.default_rng(0), "human")
    cfg = parse_config({"envs": [args.env], "tasks": [args.task], "camera_policy": args.policy})
    base = setting_for(cfg, env, args.task)
    if args.max_pair_dist:
        base = dataclasses.replace(base, max_pair_dist_cm=args.max_pair_dist)
    if args.window:
        camera_policy.DECORRELATED_WINDOW = tuple(float(v) for v in args.window.split(","))
    unit = Unit(args.env, args.task, tri.id, tri.source_class, tri.target_class, "human", 10**6, 0, 0)
    rows, rej, fails = [], Counter(), 0
    for g in range(args.groups):
        try:
            group = build_group(
                sample_rng(5, args.env, args.task, tri.id, g, 1),
                ("k", g),
                tri.source_class,
                tri.target_class,
                shapes,
                base,
                env.ground,
                env.clutter,
            )
        except PlacementError:
            continue
        group.viewpoint = human if args.task == "allo" else None
        rng = np.random.default_rng(g)
        for j, want in enumerate(LABELS):
            st = sample_setting(cfg, base, unit, 4 * g + j)
            if args.no_quotas:  # the 0.6.0 policy: no layout-quota acceptance step
                st = dataclasses.replace(st, quota=None)
            try:
                v = sample_view(rng, group, args.task, want, st, env.ground, human, rej)
            except PlacementError:
                fails += 1
                continue
            row = {"label": want, "g": g, "camera_width": st.size, "camera_height": st.size}
            for n, o in [("source", group.source), ("target", group.target)] + ([("human", v.human)] if v.human else []):
                uv, _ = v.camera.project(o.corners())
                (x0, y0), (x1, y1) = uv.min(0), uv.max(0)
                row.update({f"{n}_bbox_x0": x0, f"{n}_bbox_y0": y0, f"{n}_bbox_x1": x1, f"{n}_bbox_y1": y1})
            rows.append(row)
    return pd.DataFrame(rows), rej, fails


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
    ap.add_argument("--max-pair-dist", type=float, default=None, help="override the source-target distance limit, cm")
    ap.add_argument("--no-quotas", action="store_true", help="leave out decorrelated's layout quotas (allo: 0.6.0's views)")
    ap.add_argument("--window", default=None, help="override decorrelated's anchor window, e.g. 0.15,0.85")
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
    xs, xt = box_features(t, ("source",))[0], box_features(t, ("target",))[0]
    for lab in LABELS:
        m = (t.label == lab).to_numpy()
        print(
            f"  {lab:5s} source x {xs[m, 0].mean():.2f} y {xs[m, 1].mean():.2f} log area {xs[m, 4].mean():.2f} | "
            f"target - source dx {(xt[m, 0] - xs[m, 0]).mean():+.2f} dy {(xt[m, 1] - xs[m, 1]).mean():+.2f}"
        )


if __name__ == "__main__":
    main()
