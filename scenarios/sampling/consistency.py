"""Perceptual-consistency rules: a label a viewer of the image would not dispute.

Why: SpaRRTa's egocentric label is decided in the ground plane (``relations.relation`` from the
camera's XY position). With near-top-down cameras (pitch down to -81 deg) a pair labelled
"front" can appear with the target *nearer* in the depth image than the source: the rule was
applied correctly, yet the picture says otherwise (2 of 150 audited ego samples). This rule
checks the rendered pixels themselves, the way a viewer (and ``tests/scenarios/test_sparrta.py``)
reads them:

* ``left`` / ``right``: the horizontal order of the two objects' mask centroids;
* ``front`` / ``back``: the order of their median depths (the target farther for ``front``).

A sample failing it is rejected like any other rule (counted as ``perceptual`` in the dataset
card's rejections) and the sampler draws another view from the sample's own RNG stream, so the
output stays deterministic. Allocentric labels are relative to the figure, not the camera, so
the rule does not apply to them.
"""

from __future__ import annotations

import numpy as np

from sceneforge.scenarios.sampling.relations import heading_relation

PERCEPTUAL_RULE = "perceptual"


def object_pixels(mask_rgb: np.ndarray, color) -> np.ndarray:
    """Boolean (H, W) of the pixels of one instance colour in an ``object_mask`` image."""
    return np.all(mask_rgb[..., :3] == np.asarray(color, dtype=mask_rgb.dtype), axis=-1)


def _packed(mask_rgb: np.ndarray) -> np.ndarray:
    m = mask_rgb[..., :3].astype(np.int32)
    return (m[..., 0] << 16) | (m[..., 1] << 8) | m[..., 2]


def _pack(color) -> int:
    r, g, b = (int(c) for c in color)
    return (r << 16) | (g << 8) | b


def needs_depth(label: str) -> bool:
    """Only front/back are judged on depth; left/right on the mask alone (no depth to fetch)."""
    return label in ("front", "back")


def ego_label_disagrees(label: str, mask_rgb: np.ndarray, depth: np.ndarray, source_color, target_color) -> bool:
    """True when the rendered image contradicts an egocentric ``label`` (see module docstring).

    ``depth`` is the (H, W) depth image in cm (ray or planar: only the order matters); only
    front/back read it (``needs_depth``), so it may be None for left/right.
    An object with no pixel cannot be judged and counts as a disagreement.
    """
    packed = _packed(mask_rgb)  # one int per pixel: two compares instead of six channel compares
    src, tgt = packed == _pack(source_color), packed == _pack(target_color)
    if not src.any() or not tgt.any():
        return True
    if label in ("left", "right"):
        du = float(np.nonzero(tgt)[1].mean() - np.nonzero(src)[1].mean())
        return not (du > 0 if label == "right" else du < 0)
    if label in ("front", "back"):
        dz = float(np.median(depth[tgt]) - np.median(depth[src]))
        return not (dz > 0 if label == "front" else dz < 0)
    raise ValueError(f"unknown egocentric label {label!r}")


def image_positions(mask_rgb: np.ndarray, depth: np.ndarray, colors, camera) -> list[np.ndarray] | None:
    """The world XY (cm) of each instance colour's visible surface, as the image shows it: every
    pixel of the colour lifted along its ray by its ray depth (``depth``, cm) with the camera's
    pose and lens, then the median per axis. None when a colour has no pixel with a finite depth.

    Why the pixels and not the placed centres: the rule below must judge what a viewer sees (an
    object's visible surface, where the image puts it), not the geometry the sampler placed."""
    packed = _packed(mask_rgb)
    f = camera.focal_px
    axes = camera.rotation.matrix()  # columns: forward, right, up (world)
    out = []
    for color in colors:
        v, u = np.nonzero(packed == _pack(color))
        if not len(u):
            return None
        d = depth[v, u].astype(np.float64)
        ok = np.isfinite(d) & (d > 0)
        if not ok.any():
            return None
        right = (u[ok] + 0.5 - camera.width / 2.0) / f
        up = -(v[ok] + 0.5 - camera.height / 2.0) / f
        local = np.stack([np.ones_like(right), right, up], axis=1)
        local *= (d[ok] / np.linalg.norm(local, axis=1))[:, None]  # ray depth: distance along the ray
        world = local @ axes.T + np.asarray(camera.location, float)
        out.append(np.median(world[:, :2], axis=0))
    return out


def ego_bearing_disagrees(label: str, mask_rgb: np.ndarray, depth: np.ndarray, source_color, target_color, camera) -> bool:
    """True when the image-space bearing contradicts an egocentric ``label``: the target's
    visible position relative to the source's (:func:`image_positions`, from the rendered mask
    and ray depth), read along the camera's heading (``relations.heading_relation``, margin 0:
    the sector a viewer of the image would name). Used by ``camera_policy: decorrelated``; it
    judges all four labels on the same bearing, where :func:`ego_label_disagrees` reads left/right
    on mask centroids and front/back on depth order only. An object with no pixel counts as a
    disagreement."""
    pos = image_positions(mask_rgb, depth, (source_color, target_color), camera)
    if pos is None or not np.any(pos[1] != pos[0]):
        return True
    return heading_relation(camera.rotation.yaw, pos[0], pos[1], 0.0) != label
