"""Per-frame metric scene graphs of a video clip (``graphs/NNNNNN.json``, beside the records).

Frame ``t``'s graph has the subject at its pose of frame ``t`` (with the pixel visibility the clip
was checked with) and every scenery object (static; no pixel fields: measuring them would cost a
render per object and frame), the frame's camera and the clip's world. Relations are left out to
keep the file small (16 frames × all pairs); :func:`scenarios.output.scene_graph.relation` computes any
pair from two nodes' actors on demand.
"""

from __future__ import annotations

from sceneforge.engine.world import Actor
from sceneforge.scenarios.output.scene_graph import SceneObject, scene_graph
from sceneforge.scenarios.videos import motion as mo


def frame_graphs(
    lib, clip, subject_name: str, asset_id: str, scenery: list[Actor], vis: list, world: dict, fov: float, size: int
) -> dict:
    scen = [
        SceneObject(a, lib.info(a.asset_id).cls, tuple(float(v) for v in lib.size_cm(a.asset_id)), "clutter") for a in scenery
    ]
    cls, dims = lib.info(asset_id).cls, tuple(float(v) for v in lib.size_cm(asset_id))
    frames = []
    for t in range(clip.n_frames):
        subj = SceneObject(Actor(subject_name, asset_id, mo.subject_transform(clip, t)), cls, dims, "subject")
        pixels = {}
        if t < len(vis):
            pc = vis[t]
            pixels[subject_name] = {
                "visible": pc.visible,
                "unoccluded": pc.unoccluded,
                "bbox": list(pc.bbox) if pc.bbox else None,
            }
        frames.append(
            scene_graph(
                [subj, *scen],
                mo.camera_at(clip, t, fov, size, size),
                world=world,
                visibility=pixels,
                extra={"frame": t},
                relate=[],
            )
        )
    return {"schema": "sceneforge.clip_graphs/1", "fps": clip.fps, "frames": frames}
