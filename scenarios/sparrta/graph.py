"""The metric scene graph of one SpaRRTa sample (``scene_NNNN.json`` beside its params).

Every actor of the scene (source, target, the allo figure, clutter) with its asset, pose, scale
and oriented 3-D box; the camera's intrinsics/extrinsics; the world (sun, sky, ground) the server
was given; pixel visibility for the labelled objects (the ones the sampler measured — measuring
every clutter object would cost one extra render per object and sample); relations between the
labelled objects. Built by :func:`scenarios.output.scene_graph.scene_graph`.
"""

from __future__ import annotations

from dataclasses import replace

from sceneforge.scenarios.output.scene_graph import SceneObject, coco_annotations, graph_rows, recolored, scene_graph
from sceneforge.scenarios.output.writers import atomic_write_bytes, atomic_write_json

LABELLED = ("source", "target", "human")


def sample_graph(lib, group, view, vis: dict, colors: dict, world: dict, extra: dict | None = None) -> dict:
    objs = group_objects(lib, group, colors) + ([_object(lib, view.human.actor((0, 0, 0)), colors)] if view.human else [])
    pixels = {
        n: {"visible": v.visible, "unoccluded": v.unoccluded, "bbox": list(v.bbox) if v.bbox else None} for n, v in vis.items()
    }
    return scene_graph(
        objs, view.camera, world=world, visibility=pixels, extra=extra, relate=[n for n in LABELLED if n in pixels]
    )


def group_objects(lib, group, colors: dict | None = None) -> list[SceneObject]:
    """The scene group's objects, each with its camera-independent node computed (``static``):
    the same in every sample of the group, so computed once per group (by the writer thread, for
    the group's first sample written: ``Session.describe``). Without ``colors`` with the actors'
    own colours; with the server's instance colours ``colors`` (describing a sample) derived from
    those (``scene_graph.recolored``: only the colour entry differs)."""
    base = group.regions.get("graph_objects")
    if base is None:
        base = [_object(lib, a, {}) for a in group.actors]
        for o in base:
            o.static  # noqa: B018 - computed here, once per group (cached on the object)
        group.regions["graph_objects"] = base
    if colors is None:
        return list(base)
    key = ("graph_objects", tuple(tuple(colors.get(a.name, a.color)) for a in group.actors))
    if key not in group.regions:
        group.regions[key] = [o if tuple(o.actor.color) == c else recolored(o, c) for o, c in zip(base, key[1])]
    return list(group.regions[key])


def _object(lib, actor, colors: dict) -> SceneObject:
    role = actor.name if actor.name in LABELLED else "clutter"
    color = colors.get(actor.name, actor.color)
    return SceneObject(
        replace(actor, color=tuple(color)),
        lib.info(actor.asset_id).cls,
        tuple(float(v) for v in lib.size_cm(actor.asset_id)),
        role,
    )


def write_scene_tables(out, rows: list[dict]) -> dict:
    """``objects.parquet`` (one row per object and sample, from the scene graphs) and, when the
    dataset has masks, ``annotations.coco.json`` (COCO instances with RLE masks of every object
    visible in the mask). ``rows``: the finished table rows (``file_name``, ``scene_file``, ...)."""
    import io
    import json
    from pathlib import Path

    import numpy as np
    import pandas as pd
    from PIL import Image

    out = Path(out)
    objects, images, anns, graphs = [], [], [], []
    for image_id, row in enumerate(rows, 1):
        if not row.get("scene_file"):
            return {}
        g = json.loads((out / row["scene_file"]).read_text())
        graphs.append(g)
        sample = {
            "image_id": image_id,
            "file_name": row["file_name"],
            "env": row["env"],
            "task": row["task"],
            "triple_id": row["triple_id"],
            "split": row.get("split"),
        }
        objects += graph_rows(g, sample)
    buf = io.BytesIO()
    pd.DataFrame(objects).to_parquet(buf, index=False, engine="pyarrow")
    atomic_write_bytes(out / "objects.parquet", buf.getvalue())
    if rows and rows[0].get("mask_file"):
        classes = sorted({o["class"] for g in graphs for o in g["objects"]})
        cats = {c: k + 1 for k, c in enumerate(classes)}
        for image_id, (row, g) in enumerate(zip(rows, graphs), 1):
            mask = np.asarray(Image.open(out / row["mask_file"]).convert("RGB"))
            anns += coco_annotations(mask, g, image_id, cats, first_id=len(anns) + 1)
            images.append(
                {"id": image_id, "file_name": row["file_name"], "width": g["camera"]["width"], "height": g["camera"]["height"]}
            )
        atomic_write_json(
            out / "annotations.coco.json",
            {
                "info": {"description": "sceneforge SpaRRTa instances", "version": "1"},
                "images": images,
                "categories": [{"id": k, "name": c} for c, k in cats.items()],
                "annotations": anns,
            },
        )
    return {"objects": len(objects), "coco_annotations": len(anns)}
