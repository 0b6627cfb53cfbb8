"""Per-frame maths for the GL backend, in numpy (no GL calls, so it is unit-testable).

Everything is in UE world units (cm, Z up, left-handed); matrices are float64 row-major with
column vectors and are converted to GL's column-major float32 bytes only at upload
(:func:`gl_bytes`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from sceneforge.engine.world import Camera, Transform

NEAR_CM = 5.0  # near clip plane; UE's default is 10 cm


def gl_bytes(m: np.ndarray) -> bytes:
    """Row-major float64 matrix → column-major float32 bytes, as ``glUniformMatrix*`` wants."""
    return np.ascontiguousarray(m.T, dtype=np.float32).tobytes()


@dataclass(frozen=True)
class Placed:
    """An actor's transform prepared for drawing: uniform bytes and its world-space bounds."""

    model: np.ndarray  # 4x4 float64 local → world
    model_bytes: bytes
    normal_bytes: bytes  # inverse-transpose of the 3x3 (correct under non-uniform/negative scale)
    max_scale: float


@lru_cache(maxsize=65536)
def placed(transform: Transform) -> Placed:
    """Cached per Transform value: a static scene does no matrix maths after its first frame."""
    m = transform.matrix()
    normal = np.linalg.inv(m[:3, :3]).T
    return Placed(m, gl_bytes(m), gl_bytes(normal), float(np.max(np.abs(transform.scale))))


def world_sphere(p: Placed, center: np.ndarray, radius: float) -> tuple[np.ndarray, float]:
    """A mesh's local bounding sphere moved to world space (radius grows with |scale|)."""
    return p.model[:3, :3] @ center + p.model[:3, 3], radius * p.max_scale


def frustum_planes(view_proj: np.ndarray) -> np.ndarray:
    """(6, 4) inward-facing planes (a, b, c, d), normalised so distances are in cm."""
    r = view_proj
    planes = np.stack([r[3] + r[0], r[3] - r[0], r[3] + r[1], r[3] - r[1], r[3] + r[2], r[3] - r[2]])
    return planes / np.linalg.norm(planes[:, :3], axis=1, keepdims=True)


def spheres_in_frustum(planes: np.ndarray, centers: np.ndarray, radii: np.ndarray) -> np.ndarray:
    """Boolean mask of spheres that intersect the frustum (conservative)."""
    if len(centers) == 0:
        return np.zeros(0, dtype=bool)
    dist = centers @ planes[:, :3].T + planes[:, 3]
    return np.all(dist >= -radii[:, None], axis=1)


def near_far(
    camera: Camera, centers: np.ndarray, radii: np.ndarray, ground_extent: float, ground_top: float
) -> tuple[float, float]:
    """Clip planes: fixed near, far just beyond the furthest actor or ground corner.

    Depth precision depends mostly on ``near``; ``far`` only has to enclose the scene.
    """
    cam = np.asarray(camera.location)
    corner = math.hypot(abs(cam[0]) + ground_extent, abs(cam[1]) + ground_extent)
    far = math.hypot(corner, abs(cam[2]) + abs(ground_top))
    if len(centers):
        far = max(far, float(np.max(np.linalg.norm(centers - cam, axis=1) + radii)))
    return NEAR_CM, far * 1.05 + 10.0


def sphere_rects(view_proj: np.ndarray, centers: np.ndarray, radii: np.ndarray, width: int, height: int) -> np.ndarray:
    """(n, 4) pixel rectangles (x0, y0, x1, y1), GL rows (bottom-up), half-open, clipped to the
    image, that contain each sphere's projection: the projected corners of its bounding cube
    (a convex set's projection lies in the projection of any convex set around it, as long as
    all of it is in front of the eye). A sphere reaching behind the near plane gets the whole
    image. Conservative by one pixel on each side (rasterisation samples pixel centres)."""
    centers = np.asarray(centers, np.float64).reshape(-1, 3)
    radii = np.asarray(radii, np.float64).reshape(-1)
    out = np.tile(np.array([0, 0, width, height], np.int64), (len(centers), 1))
    if not len(centers):
        return out
    signs = np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)], np.float64)
    pts = centers[:, None, :] + radii[:, None, None] * signs[None]  # (n, 8, 3)
    clip = np.einsum("ij,npj->npi", view_proj[:, :3], pts) + view_proj[:, 3]  # (n, 8, 4)
    w = clip[..., 3]
    front = np.all(w > 1e-6, axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        x = (clip[..., 0] / w + 1.0) * 0.5 * width
        y = (clip[..., 1] / w + 1.0) * 0.5 * height
    box = np.stack([np.floor(x.min(1)) - 1, np.floor(y.min(1)) - 1, np.ceil(x.max(1)) + 1, np.ceil(y.max(1)) + 1], 1)
    box = np.clip(np.nan_to_num(box), [0, 0, 0, 0], [width, height, width, height]).astype(np.int64)
    out[front] = box[front]
    return out


def view_proj(camera: Camera, near: float, far: float) -> np.ndarray:
    return camera.projection_matrix(near, far) @ camera.view_matrix()


def frustum_corners(view_proj: np.ndarray) -> np.ndarray:
    """(8, 3) world corners of a frustum: 4 on the near plane, then the 4 matching far ones."""
    ndc = np.array([[x, y, z, 1.0] for z in (-1, 1) for x in (-1, 1) for y in (-1, 1)])
    world = ndc @ np.linalg.inv(view_proj).T
    return world[:, :3] / world[:, 3:4]


def receiver_points(
    view_proj: np.ndarray, near: float, far: float, max_depth: float, z_range: tuple[float, float], min_depth: float = 0.0
) -> np.ndarray:
    """World points whose convex hull holds every surface point the camera sees at planar depth
    <= ``max_depth`` (the shadow distance) with ``z_range[0] <= z <= z_range[1]`` (where the
    ground and the actors are): the frustum truncated at ``max_depth`` and clipped to that slab.
    ``min_depth``: only the points from that planar depth on (the far cascade's part of a view).
    Empty (0, 3) when nothing of the slab is in view."""
    c = frustum_corners(view_proj)
    if max_depth <= min_depth or min_depth >= far:
        return np.zeros((0, 3))
    t0 = min(1.0, max(0.0, (min_depth - near) / max(far - near, 1e-9)))
    t1 = min(1.0, max(0.0, (max_depth - near) / max(far - near, 1e-9)))
    c[:4], c[4:] = c[:4] + t0 * (c[4:] - c[:4]), c[:4] + t1 * (c[4:] - c[:4])
    # edges: near ring, far ring (corner order x-major, y-minor: 0-1-3-2), sides
    ring = [(0, 1), (1, 3), (3, 2), (2, 0)]
    edges = ring + [(a + 4, b + 4) for a, b in ring] + [(i, i + 4) for i in range(4)]
    lo, hi = z_range
    pts = [p for p in c if lo <= p[2] <= hi]
    for a, b in edges:
        pa, pb = c[a], c[b]
        dz = pb[2] - pa[2]
        if abs(dz) < 1e-12:
            continue
        for z in (lo, hi):
            u = (z - pa[2]) / dz
            if 0.0 <= u <= 1.0:
                pts.append(pa + u * (pb - pa))
    return np.array(pts, dtype=np.float64).reshape(-1, 3)


def light_view_proj(
    to_sun: np.ndarray, centers: np.ndarray, radii: np.ndarray, receiver_depth: float = 1.0e5, min_extent: float = 0.0
) -> tuple[np.ndarray, float, float]:
    """Orthographic sun matrix fitted to the casters' bounding spheres.

    Returns ``(light_view_proj, extent_cm, depth_range_cm)``: the side of the square the map
    covers and the depth span mapped to [0, 1] (to convert a bias in cm to map units). The
    depth range extends ``receiver_depth`` cm beyond the casters so the ground below them is
    inside the map. ``min_extent``: the square is at least this wide (a small scene does not
    get texels finer than ``min_extent / size``).
    """
    d = np.asarray(to_sun, dtype=np.float64)
    d = d / np.linalg.norm(d)
    helper = np.array([0.0, 0.0, 1.0]) if abs(d[2]) < 0.99 else np.array([1.0, 0.0, 0.0])
    right = np.cross(helper, d)
    right /= np.linalg.norm(right)
    up = np.cross(d, right)
    basis = np.stack([right, up, d])  # light frame rows; looking down -d (towards the ground)
    local = centers @ basis.T
    lo = (local - radii[:, None]).min(axis=0)
    hi = (local + radii[:, None]).max(axis=0)
    half = max(0.5 * max(hi[0] - lo[0], hi[1] - lo[1]) + 1.0, 0.5 * min_extent)
    mid = 0.5 * (lo + hi)
    near, far = -(hi[2] + 10.0), -(lo[2] - receiver_depth)  # distances along -d from origin
    view = np.eye(4)
    view[:3, :3] = basis
    ortho = np.array(
        [
            [1 / half, 0, 0, -mid[0] / half],
            [0, 1 / half, 0, -mid[1] / half],
            [0, 0, -2 / (far - near), -(far + near) / (far - near)],
            [0, 0, 0, 1],
        ]
    )
    return ortho @ view, 2 * half, far - near


def planar_depth(buffer: np.ndarray, near: float, far: float) -> np.ndarray:
    """Hardware depth in [0, 1] → planar eye depth in cm (float32); ``inf`` where cleared (sky)."""
    z = buffer.astype(np.float64) * 2.0 - 1.0
    with np.errstate(divide="ignore"):
        lin = (2.0 * near * far) / (far + near - z * (far - near))
    lin[buffer >= 1.0] = np.inf
    return lin.astype(np.float32)


@lru_cache(maxsize=32)
def ray_factor(width: int, height: int, focal_px: float) -> np.ndarray:
    """Per-pixel ray length / planar depth, sampled at pixel centres: ray = planar * factor."""
    u = (np.arange(width) + 0.5 - width / 2.0) / focal_px
    v = (np.arange(height) + 0.5 - height / 2.0) / focal_px
    f = np.sqrt(1.0 + u[None, :] ** 2 + v[:, None] ** 2).astype(np.float32)
    f.setflags(write=False)
    return f


def eye_to_world(camera: Camera) -> np.ndarray:
    """3x3 rotation from GL eye axes (x right, y up, -z forward) to UE world axes."""
    return camera.view_matrix()[:3, :3].T


@dataclass
class Draw:
    """One actor to draw this frame."""

    index: int  # position in scene.actors (instance id = index + 1)
    asset_id: str
    mesh: object  # GpuMesh drawn by every pass of this frame (a level of detail when small on screen)
    caster: object  # GpuMesh at full detail (the shadow map draws its level for the map's texel size)
    placed: Placed
    center: np.ndarray  # world bounding-sphere centre, cm
    radius: float
    tint: tuple[int, int, int] | None


@dataclass
class Frame:
    """Everything a pass needs about one (scene, camera): computed once per call."""

    camera: Camera
    near: float
    far: float
    view_proj: np.ndarray
    draws: list[Draw]  # all non-hidden actors
    visible: np.ndarray  # bool per draw: bounding sphere intersects the frustum
    planes: np.ndarray  # (6, 4) frustum planes, for culling ground tiles
    centers: np.ndarray  # (n, 3) world bounding-sphere centres of the full meshes, per draw
    radii: np.ndarray  # (n,) their radii
    levelled: tuple[int, ...] = ()  # positions of the draws drawn at a level of detail
    ground: tuple = ()  # Passes.ground_draws: face ranges of the ground tiles in view at their level
