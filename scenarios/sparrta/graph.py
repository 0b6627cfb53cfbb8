"""The metric scene graph of one SpaRRTa sample (``scene_NNNN.json`` beside its params).

Every actor of the scene (source, target, the allo figure, clutter) with its asset, pose, scale
and oriented 3-D box; the camera's intrinsics/extrinsics; the world (sun, sky, ground) the server
was given; pixel visibility for the labelled objects (the ones the sampler measured — measuring
every clutter object would cost one extra render per object and sample); relations between the
labelled objects. Built by :func:`scenarios.scene_graph.scene_graph`.
"""
from __future__ import annotations

from dataclasses import replace

from scenarios.scene_graph import SceneObject, scene_graph

LABELLED = ("source", "target", "human")


def sample_graph(lib, group, view, vis: dict, colors: dict, world: dict, extra: dict | None = None) -> dict:
    actors = list(group.actors) + ([view.human.actor((0, 0, 0))] if view.human is not None else [])
    objs = []
    for a in actors:
        role = a.name if a.name in LABELLED else "clutter"
        color = colors.get(a.name, a.color)
        objs.append(SceneObject(replace(a, color=tuple(color)), lib.info(a.asset_id).cls,
                                tuple(float(v) for v in lib.size_cm(a.asset_id)), role))
    pixels = {n: {"visible": v.visible, "unoccluded": v.unoccluded, "bbox": list(v.bbox) if v.bbox else None}
              for n, v in vis.items()}
    return scene_graph(objs, view.camera, world=world, visibility=pixels, extra=extra,
                       relate=[n for n in LABELLED if n in pixels])
