"""Writes a clip's per-frame ground truth (``gt/{i:06d}/``; format in ground_truth.py).

Apart from ground_truth.py, which is pure array and record code, because this part knows the
scenario's clip (``made`` of scenario.make_clip) and the spawn order that fixes server ids.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from sceneforge.scenarios.output.writers import atomic_write_bytes, kind_array
from sceneforge.scenarios.videos import ground_truth as gt
from sceneforge.scenarios.videos import motion as mo


def instances(ctx, made: dict, subject_name: str) -> list[dict]:
    """Our instance table: 1 = subject, then movers, then scenery (id = position + 1)."""
    lib, clip = ctx.lib, made["clip"]
    rows = [
        {
            "name": subject_name,
            "role": "subject",
            "asset": made["asset_id"],
            "class": lib.info(made["asset_id"]).cls,
            "size_cm": list(clip.subject_size),
        }
    ]
    rows += [
        {"name": m.name, "role": "distractor", "asset": m.asset_id, "class": m.cls, "size_cm": list(m.size)}
        for m in made.get("movers", [])
    ]
    rows += [
        {
            "name": a.name,
            "role": "scenery",
            "asset": a.asset_id,
            "class": lib.info(a.asset_id).cls,
            "size_cm": [float(v) for v in lib.size_cm(a.asset_id)],
        }
        for a in made["scenery"]
    ]
    return [{"instance_id": k + 1, **r} for k, r in enumerate(rows)]


def server_lut(made: dict, table: list[dict]) -> np.ndarray:
    """Server instance id (1 + spawn index; spawn order scenery, subject, movers) -> our id."""
    ours = {r["name"]: r["instance_id"] for r in table}
    spawned = [a.name for a in made["scenery"]] + [table[0]["name"]] + [m.name for m in made.get("movers", [])]
    spawned = made.get("spawn_owners") or spawned  # articulated: every part of a rig is its owner's id
    return np.array([0] + [ours[n] for n in spawned], np.int64)


def frame_rows(ctx, made: dict, table: list[dict]) -> list[dict]:
    """One record per frame: camera (pose + intrinsics) and every mover's pose and boxes."""
    clip, fov, size = made["clip"], made["fov"], ctx.size
    movers = made.get("movers", [])
    rows = []
    for t in range(clip.n_frames):
        cam = mo.camera_at(clip, t, fov, size, size)
        vis = made["vis_all"][t] if made.get("vis_all") else {table[0]["name"]: made["vis"][t]}
        objs = [
            gt.object_row(
                1,
                "subject",
                table[0]["name"],
                table[0]["asset"],
                table[0]["class"],
                clip.subject_size,
                mo.subject_transform(clip, t),
                cam,
                vis.get(table[0]["name"]),
            )
        ]
        objs += [
            gt.object_row(k + 2, "distractor", m.name, m.asset_id, m.cls, m.size, m.transform(t), cam, vis.get(m.name))
            for k, m in enumerate(movers)
        ]
        for o in objs:  # articulated actors: the animation state (gait phase, every part's transform)
            if o["name"] in made.get("posed", {}):
                o["rig"] = made["posed"][o["name"]].frame_state(t)
            if o["name"] in made.get("characters", {}):  # skinned characters: class, variant, clip, phase
                o["character"] = made["characters"][o["name"]].frame_state(t)
        rows.append(
            {"schema": gt.FRAMES_SCHEMA, "frame": t, "time_s": t / clip.fps, "camera": gt.camera_row(cam), "objects": objs}
        )
    return rows


def dense_arrays(ctx, made: dict, table: list[dict]) -> dict[str, dict[str, np.ndarray]]:
    """{file stem: arrays} of the requested dense ground truth."""
    want, dense, clip = ctx.cfg.ground_truth, made["dense"], made["clip"]
    out = {}
    ids = gt.relabel(dense["instance_id"], server_lut(made, table)) if "instance_id" in dense else None
    if "masks" in want:
        out["masks"] = {"instance": ids}
    if "depth" in want:
        out["depth"] = {"depth": kind_array("depth", dense["depth"])}  # the render kind's dtype (float32 cm)
    if "flow" in want:
        cams = [mo.camera_at(clip, t, made["fov"], ctx.size, ctx.size) for t in range(clip.n_frames)]
        poses = {1: [mo.subject_transform(clip, t) for t in range(clip.n_frames)]}
        for k, m in enumerate(made.get("movers", [])):
            poses[k + 2] = [m.transform(t) for t in range(clip.n_frames)]
        if made.get("posed"):  # rig parts move on their own: carry each part by its own transforms
            poses, ids = _part_poses(made, table, poses), dense["instance_id"]
        out["flow"] = gt.clip_flow(cams, dense["plane_depth"], ids, poses)
    return out


def _part_poses(made: dict, table: list[dict], poses: dict) -> dict:
    """Per-frame transforms keyed by *server* instance id (1 + spawn index): each part of a rig
    its own, every other mover its owner's (``poses`` is keyed by our instance id)."""
    ours = {r["name"]: r["instance_id"] for r in table}
    out, seen = {}, {}
    for k, owner in enumerate(made["spawn_owners"]):
        if owner in made["posed"]:
            part = seen.get(owner, 0)
            seen[owner] = part + 1
            out[k + 1] = [row[part] for row in made["posed"][owner].transforms]
        elif ours.get(owner) in poses:
            out[k + 1] = poses[ours[owner]]
    return out


def write_clip_gt(ctx, out: Path, made: dict, subject_name: str) -> None:
    """frames.jsonl + instances.json always, then the requested .npz files (atomic writes)."""
    table = instances(ctx, made, subject_name)
    for stem, arrays in dense_arrays(ctx, made, table).items():
        atomic_write_bytes(out / f"{stem}.npz", gt.npz_bytes(arrays))
    atomic_write_bytes(out / "instances.json", (json.dumps(table, sort_keys=True, indent=1) + "\n").encode())
    atomic_write_bytes(out / "frames.jsonl", gt.frames_jsonl(frame_rows(ctx, made, table)))
