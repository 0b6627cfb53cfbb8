"""The render-free pilot behind the layout quotas (``quotas.py``): views drawn exactly as a job's
samples draw them (``Session.start``: setting, look lens, the sample's label-free anchor point,
scene group, ``sample_view``), without the quota, and each labelled box's features.

Why a separate module: it needs ``setting.py`` (which reads the shipped tables through
``quotas.py``), so ``quotas.py`` stays free of it. Pure: a function of (config, env, task,
triple, seed, groups); ``python -m sceneforge.scenarios.sparrta.quota_pilot ENV`` runs it to make
the shipped tables (``--out DIR``: a table for any environment file, e.g. a user's, which
``generate --quota-table DIR/<name>.json`` reads), ``benchmarks/layout_leak.py`` to measure a
policy's leak (quotas included, as a job applies them; ``--no-quotas`` without) on fresh views.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections import Counter
from dataclasses import replace
from pathlib import Path

import numpy as np

from sceneforge.core.errors import ConfigError, PlacementError
from sceneforge.scenarios.sampling.rejection import sample_rng
from sceneforge.scenarios.sampling.relations import LABELS
from sceneforge.scenarios.sampling.shapes import ShapeCache
from sceneforge.scenarios.sparrta.config import Unit, parse_config
from sceneforge.scenarios.sparrta.quotas import (
    BINS,
    BOXES,
    FORMAT,
    MARGINS,
    PILOT_GROUPS,
    PILOT_SEED,
    TABLE_DIR,
    fit,
    view_features,
)
from sceneforge.scenarios.sparrta.scene import build_group, sample_view
from sceneforge.scenarios.sparrta.setting import sample_setting, setting_for
from sceneforge.scenarios.world.environments import is_explicit_path, list_envs
from sceneforge.scenarios.world.look import LOOK_STREAM, draw_look


def pilot(
    cfg,
    env_name: str,
    task: str,
    triple_id: str,
    seed: int,
    groups: int,
    quotas: bool = False,
    setting: dict | None = None,
) -> dict:
    """``groups`` scene groups of four views (one per label) of one (env, task, triple) under
    ``cfg`` (its camera policy), with ``seed`` in place of the job's. ``quotas``: apply the
    config's tables as a job does (to measure them); default off (what calibration fits on).
    ``setting``: fields of the unit's ``Setting`` to override (an ablation, e.g.
    ``{"max_pair_dist_cm": 450}``; ``benchmarks/layout_leak.py``); None for the job's own.
    The one place that draws pilot views: calibration (``calibrate``) and the render-free leak
    estimate (``benchmarks/layout_leak.py``) both call it.

    Returns ``{"feats": (n, boxes, 3), "labels": (n,), "groups": (n,), "boxes": (n, boxes, 4)
    x0 y0 x1 y1 px, "size": px, "failed": views without one, "rejections": Counter}``."""
    cfg = replace(cfg, seed=int(seed))
    env = cfg.env(env_name)
    tri = next(t for t in env.triples if t.id == triple_id)
    unit = Unit(env.name, task, tri.id, tri.source_class, tri.target_class, "human", 4 * groups, 0, 0)
    lib = env.library
    shapes = ShapeCache(lib, lambda cls: env.variants(cls, lib))
    base = replace(setting_for(cfg, env, task), **(setting or {}))
    feats, labels, gs, boxes, failed, rej = [], [], [], [], 0, Counter()
    names = BOXES[task]
    for g in range(groups):
        clutter = (lambda r, keep: env.clutter(r, keep, library=lib)) if cfg.clutter else None
        rng = sample_rng(cfg.seed, env.name, task, tri.id, g, stream=1)
        try:
            group = build_group(rng, ("pilot", g), tri.source_class, tri.target_class, shapes, base, env.ground, clutter)
        except PlacementError:
            failed += 4
            continue
        if task == "allo":
            group.viewpoint = shapes.pick(rng, unit.viewpoint_class)
        for j in range(4):
            i = 4 * g + j
            st = base
            look = draw_look(env, sample_rng(cfg.seed, env.name, task, tri.id, i, stream=LOOK_STREAM))
            if "camera" in look:
                st = replace(st, fov_deg=float(look["camera"]["fov_deg"]))
            st = sample_setting(cfg, st, unit, i)
            if not quotas:
                st = replace(st, quota=None)
            want = unit.label(i)
            try:
                v = sample_view(
                    sample_rng(cfg.seed, env.name, task, tri.id, i), group, task, want, st, env.ground, group.viewpoint, rej
                )
            except PlacementError:
                failed += 1
                continue
            objs = {"source": group.source, "target": group.target, "human": v.human}
            objects = [objs[n] for n in names]
            feats.append(view_features(v.camera, objects))
            bb = []
            for o in objects:
                uv, _ = v.camera.project(o.corners())
                bb.append([*uv.min(0), *uv.max(0)])
            boxes.append(bb)
            labels.append(LABELS.index(want))
            gs.append(g)
    k = len(names)
    return {
        "feats": np.asarray(feats, float).reshape(-1, k, 3),
        "labels": np.asarray(labels, np.int64),
        "groups": np.asarray(gs, np.int64),
        "boxes": np.asarray(boxes, float).reshape(-1, k, 4),
        "size": cfg.size,
        "failed": failed,
        "rejections": rej,
    }


def calibrate(env_name: str, tasks=("allo",), groups: int = PILOT_GROUPS, log=print) -> dict:
    """The table document of one environment (a shipped name or a YAML path): per task and triple,
    :func:`quotas.fit` on a pilot of ``groups`` scene groups at :data:`PILOT_SEED` under the
    default ``decorrelated`` config (its size, margins and size floors), keyed by the environment
    file's sha256."""
    # parsed as ego, then given the tasks: the pilot reads neither the tasks nor any table (it fits
    # without quotas), and an environment without a table is not warned about while making one
    cfg = replace(parse_config({"envs": [env_name], "tasks": ["ego"], "camera_policy": "decorrelated"}), tasks=tuple(tasks))
    env = cfg.env(env_name)
    doc = {"format": FORMAT, "env": env.name, "env_sha256": cfg.env_files[env.name]["sha256"], "pilot": {}, "tables": {}}
    doc["pilot"] = {"seed": PILOT_SEED, "groups": groups, "bins": BINS, "margins": [list(m) for m in MARGINS]}
    for task in tasks:
        for tri in env.triples:
            p = pilot(cfg, env.name, task, tri.id, PILOT_SEED, groups)
            table = fit(p["feats"], p["labels"], env.name, task, tri.id)
            doc["tables"].setdefault(task, {})[tri.id] = table.to_dict()
            log(f"{env.name} {task} {tri.id}: {len(p['labels'])} pilot views, acceptance per label {table.acceptance}")
    return doc


def main(argv=None) -> int:
    """Write table documents: into the package (``quota_tables/``, the shipped tables; shipped
    environments only) or, with ``--out DIR``, into DIR for any environment file, e.g. a user's
    YAML, which a job then reads with ``--quota-table DIR/<name>.json``."""
    ap = argparse.ArgumentParser(
        description="Fit and write layout-quota tables: the shipped ones (scenarios/sparrta/quota_tables/) or, with "
        "--out, a table for any environment file (pass it to generate with --quota-table)."
    )
    ap.add_argument("envs", nargs="+", help="environment names or YAML files (files need --out)")
    ap.add_argument("--tasks", default="allo", help="comma list (default allo: the task the quotas apply to)")
    ap.add_argument("--groups", type=int, default=PILOT_GROUPS, help=f"scene groups per triple (default {PILOT_GROUPS})")
    ap.add_argument("--out", default=None, help="write DIR/<env name>.json instead of the package's shipped tables")
    args = ap.parse_args(argv)
    if args.out is None:
        custom = [e for e in args.envs if is_explicit_path(e) or e not in list_envs()]
        if custom:
            ap.error(f"{custom[0]}: not a shipped environment; write its table elsewhere with --out DIR")
    if args.groups < 1:
        ap.error(f"--groups must be at least 1, got {args.groups}")
    out = Path(args.out) if args.out else TABLE_DIR
    try:
        out.mkdir(parents=True, exist_ok=True)
        for name in args.envs:
            doc = calibrate(name, tuple(args.tasks.split(",")), args.groups)
            path = out / f"{doc['env']}.json"
            tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
            tmp.write_text(json.dumps(doc, sort_keys=True, separators=(",", ":")) + "\n", encoding="utf-8")
            tmp.replace(path)
            print(f"wrote {path}")
    except ConfigError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except OSError as e:
        print(f"error: {out}: {e.strerror or e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
