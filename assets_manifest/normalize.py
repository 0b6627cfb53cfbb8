"""Mesh files → :class:`RenderMesh` in UE units: the one-time import step for every asset.

Steps, in order (each is a small function so the builder and the library share them):

1. ``load_scene_faces``: read any trimesh format, flatten the scene graph, and bake one albedo per
   face (texture sampled at the face's UV centroid × material colour, or the material/vertex
   colour). Per-face colour keeps textured coarse meshes from smearing after decimation.
2. ``axes_matrix``: rotate the source frame to UE (source forward → +X, up → +Z, right → +Y; the
   source is right-handed, UE is left-handed, so right = forward × up in the source frame; the
   matrix has determinant −1 and preserves the object's appearance).
3. units → cm, then the manifest's real-world size (uniform scale).
4. ``decimate`` to a per-class triangle budget (llvmpipe pays per triangle), carrying face colours
   over by nearest face centroid.
5. ground: base at z = 0 (minus ``ground_offset_cm``), XY bounding box centred on the origin.
"""
from __future__ import annotations

import logging
import os
from pathlib import Path

import numpy as np
import trimesh

from core.atomic import atomic_path
from core.errors import AssetError
from core.meshes import RenderMesh

log = logging.getLogger(__name__)

_AXIS = {"x": 0, "y": 1, "z": 2}
# Triangle budgets per class (foreground objects a few thousand, clutter less).
BUDGETS = {"human": 4000, "truck": 5000, "taxi": 5000, "car": 3000, "bike": 4000, "vespa": 4000,
           "bear": 4000, "fox": 3000, "husky": 3000, "deer": 4000, "camel": 4000, "tree": 3000,
           "cactus": 2000, "rock": 1500, "bush": 800, "building": 1500, "house": 1500,
           "bridge": 2000}
DEFAULT_BUDGET = 2500
GREY = np.array([180, 180, 180], np.uint8)


def axis_vector(axis: str) -> np.ndarray:
    v = np.zeros(3)
    v[_AXIS[axis[1]]] = -1.0 if axis[0] == "-" else 1.0
    return v


def axes_matrix(up: str, forward: str) -> np.ndarray:
    """3x3 R with ``ue = R @ source``: rows are source forward, right (= forward × up), up."""
    f, u = axis_vector(forward), axis_vector(up)
    if abs(f @ u) > 0.5:
        raise AssetError(f"up {up} and forward {forward} must be different axes")
    return np.stack([f, np.cross(f, u), u])


def _material_color(material) -> np.ndarray:
    """RGB of a trimesh material (PBR base colour or simple diffuse), uint8."""
    for attr in ("baseColorFactor", "main_color", "diffuse"):   # trimesh stores these as uint8
        c = getattr(material, attr, None)
        if c is not None:
            return np.asarray(c, float).ravel()[:3].clip(0, 255).astype(np.uint8)
    return GREY


def _material_image(material):
    return getattr(material, "baseColorTexture", None) or getattr(material, "image", None)


def _sample_texture(image, uv: np.ndarray) -> np.ndarray:
    """Nearest-texel lookup at UVs (wrapping), image row 0 = v 1 (OpenGL convention)."""
    img = np.asarray(image.convert("RGB"))
    h, w = img.shape[:2]
    u = np.mod(uv[:, 0], 1.0)
    v = np.mod(uv[:, 1], 1.0)
    x = np.clip((u * w).astype(int), 0, w - 1)
    y = np.clip(((1 - v) * h).astype(int), 0, h - 1)
    return img[y, x]


def face_colors(mesh: trimesh.Trimesh) -> np.ndarray:
    """One uint8 RGB per face, baked from the mesh's visual (texture, material or colours)."""
    vis = mesh.visual
    n = len(mesh.faces)
    if isinstance(vis, trimesh.visual.texture.TextureVisuals):
        mat = vis.material
        base = _material_color(mat) if mat is not None else GREY
        img = _material_image(mat) if mat is not None else None
        if img is not None and vis.uv is not None and len(vis.uv) == len(mesh.vertices):
            tex = _sample_texture(img, vis.uv[mesh.faces].mean(axis=1)).astype(float)
            tint = base.astype(float) / 255.0 if getattr(mat, "baseColorFactor", None) is not None else 1.0
            return (tex * tint).clip(0, 255).astype(np.uint8)
        return np.tile(base, (n, 1))
    if isinstance(vis, trimesh.visual.color.ColorVisuals) and vis.defined:
        return np.asarray(vis.face_colors[:, :3], np.uint8)
    return np.tile(GREY, (n, 1))


def load_scene_faces(path: Path) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Read a mesh file into (vertices float64 (N,3), faces (M,3), face colours uint8 (M,3))."""
    try:
        scene = trimesh.load(str(path), force="scene", process=False)
    except Exception as e:  # trimesh raises many types for corrupt files
        raise AssetError(f"{path}: cannot read mesh ({type(e).__name__}: {e})") from e
    vs, fs, cs, off = [], [], [], 0
    for node in scene.graph.nodes_geometry:
        transform, name = scene.graph[node]
        geom = scene.geometry[name]
        if not isinstance(geom, trimesh.Trimesh) or len(geom.faces) == 0:
            continue
        v = trimesh.transform_points(np.asarray(geom.vertices, float), transform)
        vs.append(v)
        fs.append(np.asarray(geom.faces) + off)
        cs.append(face_colors(geom))
        off += len(v)
    if not vs:
        raise AssetError(f"{path}: no triangles in mesh file")
    return np.concatenate(vs), np.concatenate(fs), np.concatenate(cs)


def decimate(v: np.ndarray, f: np.ndarray, c: np.ndarray, budget: int):
    """Quadric decimation to ≤ ``budget`` triangles; face colours follow nearest face centroid."""
    if len(f) <= budget:
        return v, f, c
    import fast_simplification
    from scipy.spatial import cKDTree

    reduction = 1.0 - budget / len(f)
    v2, f2 = fast_simplification.simplify(v.astype(np.float32), f.astype(np.int32), target_reduction=reduction)
    if len(f2) == 0:
        return v, f, c
    tree = cKDTree(v[f].mean(axis=1))
    _, idx = tree.query(np.asarray(v2, float)[f2].mean(axis=1))
    return np.asarray(v2, float), np.asarray(f2), c[idx]


def size_scale(extent: np.ndarray, size) -> float:
    """Uniform factor so the UE-frame extent (L, W, H) meets the manifest ``size``."""
    if size is None:
        return 1.0
    if size.scale:
        return float(size.scale)
    target, axis = next((t, a) for t, a in ((size.length_cm, 0), (size.width_cm, 1), (size.height_cm, 2)) if t)
    if extent[axis] <= 0:
        raise AssetError(f"cannot scale to {target} cm: the mesh is flat along that axis")
    return float(target / extent[axis])


def ground_and_center(v: np.ndarray, ground_offset_cm: float = 0.0) -> np.ndarray:
    lo, hi = v.min(axis=0), v.max(axis=0)
    return v - np.array([(lo[0] + hi[0]) / 2, (lo[1] + hi[1]) / 2, lo[2] + ground_offset_cm])


def flat_mesh(v: np.ndarray, f: np.ndarray, face_rgb: np.ndarray, meta: dict | None = None) -> RenderMesh:
    """Unshare vertices so each face carries its own colour (crisp, no colour bleeding)."""
    fv = v[f].reshape(-1, 3)
    colors = np.repeat(face_rgb, 3, axis=0)
    faces = np.arange(len(fv), dtype=np.int32).reshape(-1, 3)
    return RenderMesh(fv, faces, colors, dict(meta or {}))


def normalise(v, f, c, *, up: str, forward: str, units_cm: float, size=None,
              budget: int = DEFAULT_BUDGET, ground_offset_cm: float = 0.0,
              pre_rotation: np.ndarray | None = None, axis_scale=None) -> RenderMesh:
    """Apply steps 2–5 to raw geometry. ``pre_rotation``/``axis_scale`` are source-specific fixes
    (Sweet Home 3D's catalog rotation and per-axis box fit) applied before the axis change."""
    v = np.asarray(v, float)
    if pre_rotation is not None:
        v = v @ np.asarray(pre_rotation, float).T
    if axis_scale is not None:
        ext = v.max(axis=0) - v.min(axis=0)
        v = v * np.where(ext > 0, np.asarray(axis_scale, float) / np.where(ext > 0, ext, 1), 1.0)
    v = (v @ axes_matrix(up, forward).T) * units_cm
    v = v * size_scale(v.max(axis=0) - v.min(axis=0), size)
    v, f, c = decimate(v, f, c, budget)
    return flat_mesh(ground_and_center(v, ground_offset_cm), f, c)


def to_npz(mesh: RenderMesh, path: Path) -> None:
    """Write a RenderMesh atomically (temp file + os.replace)."""
    with atomic_path(path) as tmp, open(tmp, "wb") as fh:
        np.savez_compressed(fh, vertices=mesh.vertices, faces=mesh.faces, colors=mesh.colors)


def from_npz(path: Path) -> RenderMesh:
    with np.load(path) as z:
        return RenderMesh(z["vertices"], z["faces"], z["colors"])
