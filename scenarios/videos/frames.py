"""The per-frame loop every clip renderer shares (plain movers, articulated rigs, characters).

Each renderer spawns its actors its own way and poses them its own way; what they have in common
is the order of the server calls for frame ``t``: pose, render the clip's camera at ``t``, then
count visibility. That order is part of the bytes of a dataset (the server's images are a pure
function of the scene, but a count asked before a pose would see the previous frame), so it lives
in one place.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from sceneforge.scenarios.videos import motion as mo


def render_frame_loop(
    client,
    clip: mo.ClipMotion,
    fov: float,
    size: int,
    kinds: tuple[str, ...],
    pose_at: Callable[[int], None],
    count_at: Callable[[int], dict] | None = None,
) -> tuple[dict, list[dict]]:
    """For every frame ``t`` of ``clip``: ``pose_at(t)`` sends the poses, the ``kinds`` are rendered
    from the clip's camera (``fov`` the unzoomed horizontal FOV in degrees, ``size`` px square),
    then ``count_at(t)`` (when given) returns that frame's visibility record.
    Returns ({kind: (T, ...) array}, [visibility per frame]) (the list is empty without ``count_at``)."""
    frames, vis = {k: [] for k in kinds}, []
    for t in range(clip.n_frames):
        pose_at(t)
        out = client.render(0, kinds, camera=mo.camera_at(clip, t, fov, size, size))
        for k in kinds:
            frames[k].append(out[k])
        if count_at is not None:
            vis.append(count_at(t))
    return {k: np.stack(v) for k, v in frames.items()}, vis
