"""Per-frame ground truth of a clip beyond DSI's questions: poses, boxes, masks, depth, flow.

So the same clips serve tracking and optical-flow research. Written beside the records, for the
*std* frames (the variants' ground truth follows by the transforms in docs/videos.md)::

    gt/{i:06d}/frames.jsonl     always: one JSON object per frame (schema FRAMES_SCHEMA)
    gt/{i:06d}/instances.json   always: instance id -> name, role, asset, class, size
    gt/{i:06d}/masks.npz        ground_truth has "masks": instance (T,H,W) uint16, 0 = terrain/sky
    gt/{i:06d}/depth.npz        ground_truth has "depth": depth (T,H,W) float32 ray depth cm, inf = sky
    gt/{i:06d}/flow.npz         ground_truth has "flow": forward, backward (T,H,W,2) float16 px

Instance ids: 1 = subject, 2..1+D = distractor movers, then the static scenery in spawn order
(flat landmarks such as city roads are scenery, so they have ids).
Flow is computed from the renderer's planar depth and instance ids of frame t and the known
poses of frames t and t±1 (the GL server's own optical-flow rule, engine/server/optical_flow.py:
each pixel's world point is carried by its actor's motion and projected with the other frame's
camera, zoom included). ``forward[t]`` maps frame t → t+1 (``forward[T-1]`` = 0), ``backward[t]``
maps t → t-1 (``backward[0]`` = 0); x right, y down, in pixels; occlusions are not marked.
Stored as float16 (relative error ≤ 2^-11: ≤ 0.03 px up to 64 px of motion; half the file).
Costs no extra render: the depth and id buffers come from the same pass as ``lit``.

``.npz`` files are written with fixed zip timestamps (:func:`npz_bytes`), so they are
byte-identical across runs (numpy's ``savez`` stamps the current time).
"""

from __future__ import annotations

import io
import json
import zipfile

import numpy as np

from sceneforge.engine.world import Camera, Transform
from sceneforge.scenarios.videos import motion as mo
from sceneforge.engine.server.optical_flow import pixel_grid, world_points

GT_KINDS = ("masks", "depth", "flow")
FRAMES_SCHEMA = "sceneforge.clip_frames/1"
# render kinds each dense ground truth needs from the server
RENDER_KINDS = {"masks": ("instance_id",), "depth": ("depth",), "flow": ("instance_id", "plane_depth")}


def render_kinds(gt: tuple[str, ...]) -> tuple[str, ...]:
    """The server kinds to render besides ``lit`` for the requested ground truth."""
    return tuple(dict.fromkeys(k for g in gt for k in RENDER_KINDS[g]))


def npz_bytes(arrays: dict[str, np.ndarray]) -> bytes:
    """A compressed ``.npz`` (``np.load`` reads it) with fixed timestamps: deterministic bytes."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        for name, arr in arrays.items():
            info = zipfile.ZipInfo(f"{name}.npy", date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            a = io.BytesIO()
            np.lib.format.write_array(a, np.ascontiguousarray(arr), allow_pickle=False)
            z.writestr(info, a.getvalue())
    return buf.getvalue()


# --- per-frame records ---------------------------------------------------------------------------
def projected_box(cam: Camera, tf: Transform, size: tuple[float, float, float]) -> list[float] | None:
    """Amodal box ``[u0, v0, u1, v1]`` (continuous px, unclipped) of the actor's 3-D box; None
    when a corner is behind the camera."""
    uv, depth = cam.project(tf.apply(mo.box_corners(size)))
    if (depth <= 1.0).any():
        return None
    return [float(uv[:, 0].min()), float(uv[:, 1].min()), float(uv[:, 0].max()), float(uv[:, 1].max())]


def camera_row(cam: Camera) -> dict:
    return {
        "location": list(cam.location),
        "rotation": list(cam.rotation.as_tuple()),
        "hfov_deg": float(cam.fov_deg),
        "focal_px": cam.focal_px,
        "principal_point": [cam.width / 2.0, cam.height / 2.0],
        "width": cam.width,
        "height": cam.height,
    }


def object_row(instance_id: int, role: str, name: str, asset: str, cls: str, size, tf: Transform, cam: Camera, pc) -> dict:
    """One mover in one frame: pose, amodal and visible boxes, pixel counts."""
    return {
        "instance_id": instance_id,
        "role": role,
        "name": name,
        "asset": asset,
        "class": cls,
        "size_cm": list(size),
        "location": list(tf.location),
        "rotation": list(tf.rotation.as_tuple()),
        "bbox_visible": list(pc.bbox) if pc is not None and pc.bbox else None,
        "bbox_projected": projected_box(cam, tf, size),
        "visible_px": pc.visible if pc is not None else None,
        "unoccluded_px": pc.unoccluded if pc is not None else None,
    }


def frames_jsonl(rows: list[dict]) -> bytes:
    return "".join(json.dumps(r, sort_keys=True, separators=(",", ":")) + "\n" for r in rows).encode("utf-8")


# --- dense ground truth --------------------------------------------------------------------------
def relabel(server_ids: np.ndarray, lut: np.ndarray) -> np.ndarray:
    """Server instance ids (1 + index in spawn order) -> our ids (uint16) through ``lut``."""
    ids = np.clip(server_ids, 0, len(lut) - 1)
    return lut[ids].astype(np.uint16)


def flow_to(
    cam_a: Camera, cam_b: Camera, plane_depth: np.ndarray, ids: np.ndarray, moved: dict[int, tuple[Transform, Transform]]
) -> np.ndarray:
    """(H,W,2) flow of frame a's pixels into frame b: world points from ``plane_depth``; pixels of
    instance ``k`` in ``moved`` carried by ``moved[k] = (pose at a, pose at b)``; the rest static."""
    points = world_points(cam_a, plane_depth)
    for k, (ta, tb) in moved.items():
        mask = ids == k
        if not mask.any() or ta == tb:
            continue
        carry = tb.matrix() @ np.linalg.inv(ta.matrix())
        p = points[mask]
        points[mask] = p @ carry[:3, :3].T + carry[:3, 3]
    uv_b, depth_b = cam_b.project(points.reshape(-1, 3))
    flow = uv_b.reshape(cam_a.height, cam_a.width, 2) - pixel_grid(cam_a)
    flow[(depth_b <= 0).reshape(cam_a.height, cam_a.width)] = 0.0
    return flow.astype(np.float32)


def clip_flow(
    cams: list[Camera], plane_depth: np.ndarray, ids: np.ndarray, poses: dict[int, list[Transform]]
) -> dict[str, np.ndarray]:
    """Forward and backward flow of every frame (T,H,W,2); ``poses[k][t]`` per moving instance."""
    T = len(cams)
    fwd = np.zeros((*plane_depth.shape, 2), np.float32)
    bwd = np.zeros_like(fwd)
    for t in range(T):
        for other, out in ((t + 1, fwd), (t - 1, bwd)):
            if 0 <= other < T:
                moved = {k: (p[t], p[other]) for k, p in poses.items()}
                out[t] = flow_to(cams[t], cams[other], plane_depth[t], ids[t], moved)
    return {"forward": fwd.astype(np.float16), "backward": bwd.astype(np.float16)}
