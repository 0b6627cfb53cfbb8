"""Articulated actors in a clip (opt-in ``articulation: true``): rigs posed, spawned and counted.

The glue between the scenario and :mod:`scenarios.videos.rigs`: which rig stands in for an
asset, the clip's gait phase (seed stream ``RIG_STREAM``, so the motion, the questions and the
distractors of a clip are those of the same clip without articulation), and the render loop for
a scene in which some actors are rigs. A rig of owner ``subject`` is the actors
``subject_<part>``; every frame sets all parts in one ``vset /sceneforge/poses``.

Visibility of a rig is that of the union of its parts: visible pixels add up (instance ids are
exclusive), and its unoccluded coverage is measured by a first pass with only the rigs in the
scene (the server's per-actor ``unoccluded`` would count one part hiding another as occlusion).

Distractors: :func:`mover_rig` poses a ``movers.Mover`` the same way; pass the result in
``posed`` under the mover's name and :func:`render_clip` draws it articulated.
"""

from __future__ import annotations

import numpy as np

from sceneforge.engine.world import Actor
from sceneforge.scenarios.videos import motion as mo
from sceneforge.scenarios.videos import rigs
from sceneforge.scenarios.videos.frames import render_frame_loop

RIG_STREAM = 5  # the clip's seed stream for gait phases (0 motion, 1 questions, 3 distractors)


def rig_for_asset(lib, asset_id: str) -> rigs.Rig | None:
    """The rig that stands in for ``asset_id`` (sized to its box, coloured from its mesh), or
    None when its class has no rig."""
    cls = lib.info(asset_id).cls
    if not rigs.rigged(cls):
        return None
    try:
        mesh = lib.mesh(asset_id)
    except Exception:  # noqa: BLE001 - colours only: fall back to the class palette
        mesh = None
    return rigs.build_rig(cls, tuple(float(v) for v in lib.size_cm(asset_id)), rigs.palette_of(mesh, rigs.KINDS[cls]))


def subject_rig(lib, asset_id: str, clip: mo.ClipMotion, ground, rng: np.random.Generator) -> rigs.PosedRig | None:
    """The subject's rig posed along the clip (None when its class has no rig)."""
    rig = rig_for_asset(lib, asset_id)
    if rig is None:
        return None
    return rigs.pose_rig(rig, clip.subject.location, clip.subject.yaw, clip.fps, ground, float(rng.random()))


def mover_rig(lib, mover, fps: float, ground, rng: np.random.Generator) -> rigs.PosedRig | None:
    """A distractor (``movers.Mover``) as a rig along its own track; None when its class has none."""
    rig = rig_for_asset(lib, mover.asset_id)
    if rig is None:
        return None
    return rigs.pose_rig(rig, mover.track.location, mover.track.yaw, fps, ground, float(rng.random()))


def spawn_list(scenery: list[Actor], owners: list[Actor], posed: dict) -> tuple[list[Actor], list[str]]:
    """Actors to spawn (scenery, then each owner or its parts) and each spawned actor's owner
    name (server instance id = 1 + position in this list)."""
    actors, owner_of = list(scenery), [a.name for a in scenery]
    for a in owners:
        parts = posed[a.name].actors(a.name, 0) if a.name in posed else [a]
        actors += parts
        owner_of += [a.name] * len(parts)
    return actors, owner_of


def rig_coverage(client, clip: mo.ClipMotion, posed: dict, fov: float, size: int) -> list[dict]:
    """Per frame, ``{part name: PixelCount}`` with only the rigs in the scene (their own
    coverage, self-occlusion between parts excluded)."""
    client.reset()
    client.spawn([a for name, p in posed.items() for a in p.actors(name, 0)])
    names = [n for name, p in posed.items() for n in p.part_names(name)]
    out = []
    for t in range(clip.n_frames):
        client.set_poses({k: v for name, p in posed.items() for k, v in p.poses(name, t).items()})
        out.append(client.visibility(0, names, camera=mo.camera_at(clip, t, fov, size, size)))
    return out


def render_clip(
    client,
    clip: mo.ClipMotion,
    subject: Actor,
    scenery: list[Actor],
    world: dict,
    fov: float,
    size: int,
    kinds: tuple[str, ...] = ("lit",),
    visibility: bool = True,
    movers: list = (),
    posed: dict | None = None,
) -> tuple[dict, list[dict], list[str]]:
    """``scenario.render_clip`` with the actors named in ``posed`` ({owner: PosedRig}) drawn as
    rigs; also returns each spawned actor's owner (spawn order)."""
    posed = dict(posed or {})
    client.set_world(world)
    alone = rig_coverage(client, clip, posed, fov, size) if visibility and posed else None
    client.reset()
    owners = [subject, *(Actor(m.name, m.asset_id, m.transform(0)) for m in movers)]
    actors, owner_of = spawn_list(scenery, owners, posed)
    client.spawn(actors)
    names = [a.name for a in owners]
    query = [n for o in names for n in (posed[o].part_names(o) if o in posed else [o])]

    def pose_at(t: int) -> None:
        poses = {}
        for o in names:
            if o in posed:
                poses.update(posed[o].poses(o, t))
        if subject.name not in posed:
            poses[subject.name] = {"location": tuple(clip.subject.location[t]), "rotation": clip.subject.rotator(t)}
        for m in movers:
            if m.name not in posed:
                poses[m.name] = {"location": tuple(m.track.location[t]), "rotation": m.track.rotator(t)}
        client.set_poses(poses)

    def count_at(t: int) -> dict:
        counts = client.visibility(0, query)
        return {o: rigs.union_count(counts, posed[o].part_names(o), alone[t]) if o in posed else counts[o] for o in names}

    frames, vis = render_frame_loop(client, clip, fov, size, kinds, pose_at, count_at if visibility else None)
    return frames, vis, owner_of


def record(posed: dict) -> dict:
    """The clip record's ``articulation``: each rig's class, size, palette and gait."""
    return {name: p.to_record() for name, p in sorted(posed.items())}
