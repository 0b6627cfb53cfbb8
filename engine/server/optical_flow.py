"""Optical flow between two consecutive image requests of one camera.

UE's optical-flow view mode shows the velocity buffer: how far each pixel's surface point moved on
screen since the previous frame. We have no frames, so "previous" is the camera's previous image
request (:class:`~engine.server.unrealcv_state.FrameSnapshot`: camera pose and every actor's
transform then). For each pixel now, its surface point (from planar depth) is carried back to
where it was at t-1 (through its actor's old transform when the actor moved; static otherwise;
sky pixels are directions, moved by rotation only) and projected with the old camera:
``flow = uv_now - uv_then`` in pixels, x right, y down. The first request of a camera has no t-1:
zero flow.

Skinned characters (engine/server/characters.py) also change *shape*: their asset id names the
pose. With the GL renderer's GPU skinning the renderer gives, per character pixel, the same
surface point in the previous pose (``then_local``: the actor-frame point interpolated from each
vertex skinned with the previous palette, gl/skin_flow.py), then carried by the old transform:
each point moves by its own skinning. Otherwise (CPU-skinned meshes, other renderers) a character
pixel's point, in the actor's frame now, is moved by the displacement of its skinned surface
between the two poses (the inverse-distance blend of the nearest :data:`FLOW_NEIGHBOURS` vertices'
``then - now``: vertices of the two poses correspond one to one).
"""

from __future__ import annotations

import numpy as np

from sceneforge.engine.server.unrealcv_state import FrameSnapshot
from sceneforge.engine.world import Camera, Scene

_SKY_CM = 1e9  # far enough that camera translation moves sky pixels by < 1e-3 px
FLOW_NEIGHBOURS = 3


def snapshot(scene: Scene, camera: Camera) -> FrameSnapshot:
    return FrameSnapshot(
        camera, {n: a.transform for n, a in scene.actors.items()}, {n: a.asset_id for n, a in scene.actors.items()}
    )


def deform(local: np.ndarray, now: np.ndarray, then: np.ndarray) -> np.ndarray:
    """Points ``local`` (n,3) on a surface whose vertices moved from ``now`` to ``then`` (same
    order): each point moved by its nearest vertices' displacement (inverse-distance weights)."""
    from scipy.spatial import cKDTree

    k = min(FLOW_NEIGHBOURS, len(now))
    dist, idx = cKDTree(now).query(local, k=k)
    dist, idx = dist.reshape(len(local), k), idx.reshape(len(local), k)
    w = 1.0 / np.maximum(dist, 1e-3)
    w /= w.sum(1, keepdims=True)
    return local + np.einsum("nk,nkj->nj", w, then[idx] - now[idx])


def pixel_grid(camera: Camera) -> np.ndarray:
    """(H, W, 2) pixel centres (u + 0.5, v + 0.5)."""
    v, u = np.mgrid[0 : camera.height, 0 : camera.width].astype(np.float64)
    return np.stack([u + 0.5, v + 0.5], axis=-1)


def world_points(camera: Camera, plane_depth: np.ndarray) -> np.ndarray:
    """(H, W, 3) world points of every pixel; sky (inf) at ``_SKY_CM`` along its ray."""
    uv = pixel_grid(camera)
    f = camera.focal_px
    right = (uv[..., 0] - camera.width / 2.0) / f
    up = -(uv[..., 1] - camera.height / 2.0) / f
    d = np.where(np.isfinite(plane_depth), plane_depth, _SKY_CM).astype(np.float64)
    local = np.stack([d, d * right, d * up], axis=-1)  # (forward, right, up)
    return local @ camera.rotation.matrix().T + np.asarray(camera.location)


def optical_flow(
    previous: FrameSnapshot | None,
    scene: Scene,
    camera: Camera,
    plane_depth: np.ndarray,
    instance_id: np.ndarray,
    mesh_of=None,
    then_local: np.ndarray | None = None,
) -> np.ndarray:
    """(H, W, 2) float32 flow in pixels from ``previous`` to now; ``mesh_of(asset_id)`` gives
    the meshes of actors whose asset changed (posed characters; without it, transforms only);
    ``then_local`` (H, W, 4): the renderer's previous-pose actor-frame point of each reshaped
    character pixel (w = 1 where given), which wins over ``mesh_of``'s nearest-vertex blend."""
    if previous is None:
        return np.zeros((camera.height, camera.width, 2), np.float32)
    points = world_points(camera, plane_depth)
    names = list(scene.actors)
    for k in np.unique(instance_id):
        if k <= 0 or k > len(names):
            continue
        name = names[k - 1]
        before, now = previous.transforms.get(name), scene.actors[name].transform
        asset_then, asset_now = previous.assets.get(name), scene.actors[name].asset_id
        reshaped = (mesh_of is not None or then_local is not None) and asset_then is not None and asset_then != asset_now
        if before is None or (before == now and not reshaped):
            continue
        mask = instance_id == k
        m_now = now.matrix()
        local = (np.linalg.inv(m_now) @ np.c_[points[mask], np.ones(mask.sum())].T).T
        if reshaped:
            given = then_local[mask][:, 3] > 0.5 if then_local is not None else np.zeros(int(mask.sum()), bool)
            if not given.all() and mesh_of is not None:
                v_now, v_then = mesh_of(asset_now).vertices, mesh_of(asset_then).vertices
                if len(v_now) == len(v_then):
                    local[:, :3] = deform(local[:, :3], v_now.astype(np.float64), v_then.astype(np.float64))
            if given.any():  # the renderer's points wherever it drew them
                local[given, :3] = then_local[mask][given, :3]
        points[mask] = (before.matrix() @ local.T).T[:, :3]
    then, depth_then = previous.camera.project(points.reshape(-1, 3))
    flow = pixel_grid(camera) - then.reshape(camera.height, camera.width, 2)
    flow[(depth_then <= 0).reshape(camera.height, camera.width)] = 0.0  # was behind the old camera
    return flow.astype(np.float32)
