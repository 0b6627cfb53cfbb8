"""Helpers shared by the video tests (a uniquely named module, not ``conftest``: see sparrta_helpers)."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

import numpy as np

from sceneforge.engine.world import Actor
from sceneforge.scenarios.videos import motion as mo
from sceneforge.scenarios.videos import scenario as videos


def mirror_pair(client, ctx, pattern, seed):
    """Render a clip and its mirrored world (flat untextured ground, mirrored sun/actors)."""
    world = ctx.env.world
    world["ground"].update(texture="flat", relief_amplitude=0.0)
    rng = np.random.default_rng(seed)
    clip = videos.sample_clip(ctx, rng, pattern, "proc_taxi", Counter())
    scenery = ctx.env.clutter(rng, keep_out=mo.keep_out(clip))
    subject = Actor("subject", "proc_taxi", mo.subject_transform(clip, 0))
    kinds = ("lit", "object_mask")
    std, _ = videos.render_frames(client, clip, subject, scenery, world, ctx.fov, ctx.size, kinds, False)
    origin, plane_yaw = mo.mirror_plane(clip)
    m_scenery = [replace(a, transform=mo.mirror_transform(a.transform, origin, plane_yaw)) for a in scenery]
    m_subject = replace(subject, transform=mo.mirror_transform(subject.transform, origin, plane_yaw))
    m_clip = mo.hflip_motion(clip)
    mir, _ = videos.render_frames(
        client, m_clip, m_subject, m_scenery, videos.mirror_world(world, plane_yaw), ctx.fov, ctx.size, kinds, False
    )
    return clip, m_clip, std, mir
