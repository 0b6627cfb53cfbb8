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
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import trimesh

from sceneforge.core.atomic import atomic_path
from sceneforge.core.errors import AssetError
from sceneforge.assets_manifest import decimate as dec
from sceneforge.assets_manifest import materials as materials_mod
from sceneforge.assets_manifest.decimate import corner_normals
from sceneforge.core.meshes import Material, RenderMesh

log = logging.getLogger(__name__)

_AXIS = {"x": 0, "y": 1, "z": 2}
# Triangle budgets per class (foreground objects a few thousand, clutter less).
BUDGETS = {
    "human": 4000,
    "truck": 5000,
    "taxi": 5000,
    "car": 3000,
    "bike": 4000,
    "vespa": 4000,
    "bear": 4000,
    "fox": 3000,
    "husky": 3000,
    "deer": 4000,
    "camel": 4000,
    "tree": 8000,
    "cactus": 2000,
    "rock": 1500,
    "bush": 3000,
    "building": 1500,
    "house": 1500,
    "bridge": 2000,
}
DEFAULT_BUDGET = 2500
GREY = materials_mod.GREY


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


@dataclass
class RawMesh:
    """Geometry as read from a file, still in the source frame.

    vertices (N, 3), faces (M, 3), face_colors (M, 3) uint8 (the flat fallback, baked from the
    texture at each face's UV centroid), uvs (N, 2) OpenGL convention (zeros where a material has
    no texture) or None, face_materials (M,) indices into ``materials``.
    """

    vertices: np.ndarray
    faces: np.ndarray
    face_colors: np.ndarray
    uvs: np.ndarray | None = None
    materials: list[Material] = field(default_factory=list)
    face_materials: np.ndarray | None = None


def bake_face_colors(uvs: np.ndarray | None, faces: np.ndarray, fm: np.ndarray, materials) -> np.ndarray:
    """One sRGB colour per face: the albedo at the face's UV centroid × base colour, else the
    material's colour (what a renderer that ignores materials draws)."""
    out = np.zeros((len(faces), 3), np.uint8)
    for i, m in enumerate(materials):
        sel = fm == i
        if not sel.any():
            continue
        if m.albedo is not None and uvs is not None:
            tex = materials_mod.sample(m.albedo[..., :3], uvs[faces[sel]].mean(axis=1)).astype(float) / 255
            lin = materials_mod.srgb_to_linear(tex) * np.asarray(m.base_color[:3])
            out[sel] = (materials_mod.linear_to_srgb(lin) * 255).round().astype(np.uint8)
        else:
            out[sel] = materials_mod.material_srgb(m)
    return out


def _geometry_visual(geom: trimesh.Trimesh, cache: dict):
    """(uv or None, Material) of one trimesh geometry; materials shared by object identity."""
    vis = geom.visual
    n = len(geom.vertices)
    if isinstance(vis, trimesh.visual.texture.TextureVisuals):
        mat = vis.material
        key = id(mat)
        if key not in cache:
            cache[key] = (mat, materials_mod.from_trimesh(mat, name=getattr(mat, "name", "") or ""))
        m = cache[key][1]
        uv = np.asarray(vis.uv, float) if vis.uv is not None and len(vis.uv) == n else None
        if uv is None and m.albedo is not None:  # a texture without coordinates shows its mean
            m = Material(
                name=m.name,
                base_color=tuple(materials_mod.srgb_to_linear(materials_mod.material_srgb(m) / 255).tolist())
                + (m.base_color[3],),
                roughness=m.roughness,
                metallic=m.metallic,
            )
        return uv, m, None
    if isinstance(vis, trimesh.visual.color.ColorVisuals) and vis.defined:
        return None, Material(name="vertex_colors"), np.asarray(vis.face_colors[:, :3], np.uint8)
    return None, materials_mod.from_trimesh(None), None


def load_scene(path: Path) -> RawMesh:
    """Read any trimesh format: flatten the scene graph, keep UVs, materials and textures."""
    try:
        scene = trimesh.load(str(path), force="scene", process=False)
    except Exception as e:  # trimesh raises many types for corrupt files
        raise AssetError(f"{path}: cannot read mesh ({type(e).__name__}: {e})") from e
    vs, fs, uvs, fms, colors, off = [], [], [], [], [], 0
    mats: list[Material] = []
    mat_index: dict[int, int] = {}
    cache: dict = {}
    any_uv = False
    for node in scene.graph.nodes_geometry:
        transform, name = scene.graph[node]
        geom = scene.geometry[name]
        if not isinstance(geom, trimesh.Trimesh) or len(geom.faces) == 0:
            continue
        uv, m, fc = _geometry_visual(geom, cache)
        if id(m) not in mat_index:
            mat_index[id(m)] = len(mats)
            mats.append(m)
        v = trimesh.transform_points(np.asarray(geom.vertices, float), transform)
        vs.append(v)
        fs.append(np.asarray(geom.faces) + off)
        any_uv |= uv is not None
        uvs.append(uv if uv is not None else np.zeros((len(v), 2)))
        fms.append(np.full(len(geom.faces), mat_index[id(m)], np.int32))
        colors.append(fc)
        off += len(v)
    if not vs:
        raise AssetError(f"{path}: no triangles in mesh file")
    f, fm = np.concatenate(fs), np.concatenate(fms)
    uv = np.concatenate(uvs) if any_uv else None
    fc = bake_face_colors(uv, f, fm, mats)
    for start, c in zip(np.cumsum([0] + [len(x) for x in fs[:-1]]), colors):
        if c is not None:
            fc[start : start + len(c)] = c
    if not any(m.albedo is not None for m in mats) and all(c is None for c in colors) is False:
        return RawMesh(np.concatenate(vs), f, fc)  # vertex colours only: nothing to keep
    return RawMesh(np.concatenate(vs), f, fc, uv, mats, fm)


def load_scene_faces(path: Path) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Read a mesh file into (vertices (N,3), faces (M,3), face colours uint8 (M,3)): the flat view."""
    raw = load_scene(path)
    return raw.vertices, raw.faces, raw.face_colors


def decimate(v: np.ndarray, f: np.ndarray, c: np.ndarray, budget: int):
    """Quadric decimation of an untextured mesh to ≤ ``budget`` triangles; face colours follow."""
    raw = decimate_raw(RawMesh(np.asarray(v, float), np.asarray(f), np.asarray(c, np.uint8)), budget)
    return raw.vertices, raw.faces, raw.face_colors


def decimate_raw(raw: RawMesh, budget: int, per_part: bool = False) -> RawMesh:
    """Decimate per material to about ``budget`` triangles keeping UVs (see ``decimate.py``);
    alpha-cut materials are thinned by whole cards instead of simplified. Returns unshared faces
    (3 vertices each)."""
    v, f = np.asarray(raw.vertices, float), np.asarray(raw.faces, np.int64)
    fm = raw.face_materials if raw.face_materials is not None else np.zeros(len(f), np.int32)
    mats = raw.materials or [Material()]
    n = len(f)
    if n <= budget:
        return raw
    diag = float(np.linalg.norm(v.max(axis=0) - v.min(axis=0)))
    groups = []  # (material, face indices, is card-like)
    for i in range(len(mats)):
        sel = np.nonzero(fm == i)[0]
        if len(sel):
            cards = dec.thinned_whole(mats[i], v, f[sel], diag)
            groups.append((i, sel, cards))
    n_cut = sum(len(sel) for _, sel, c in groups if c)
    n_solid = n - n_cut
    # solid parts (trunks, bodies) first, at least half the budget; leaves/cards share the rest
    solid_budget = min(n_solid, max(budget // 2, budget - n_cut)) if n_cut else budget
    cut_budget = max(budget - solid_budget, 0)
    pos, uvs, fms, fcs = [], [], [], []
    for i, sel, cards in groups:
        sub_f = f[sel]
        used, sub_f = np.unique(sub_f, return_inverse=True)
        sub_f = sub_f.reshape(-1, 3)
        sub_v = v[used]
        sub_uv = raw.uvs[used] if raw.uvs is not None else None
        share = (cut_budget / n_cut) if cards else (solid_budget / max(n_solid, 1))
        target = max(4, int(round(share * len(sel))))
        if cards:
            keep = target / len(sel)
            if keep < 1.0:
                corners, kept = dec.thin_cards(sub_v, sub_f, keep, diag, seed=i)
                cuv = sub_uv[sub_f[kept]] if sub_uv is not None else None
                src = sel[kept]
            else:
                corners, cuv, src = sub_v[sub_f], (sub_uv[sub_f] if sub_uv is not None else None), sel
        else:
            if len(sel) > target and len(sel) > 16:
                corners, cuv, local = dec.simplify_group(sub_v, sub_f, sub_uv, target, per_part)
                src = sel[local]
            else:
                corners, cuv, src = sub_v[sub_f], (sub_uv[sub_f] if sub_uv is not None else None), sel
        pos.append(corners)
        uvs.append(cuv if cuv is not None else np.zeros((len(corners), 3, 2)))
        fms.append(np.full(len(corners), i, np.int32))
        fcs.append(raw.face_colors[src])
    corners = np.concatenate(pos)
    T = len(corners)
    uv = np.concatenate(uvs).reshape(-1, 2) if raw.uvs is not None else None
    faces = np.arange(3 * T).reshape(-1, 3)
    fm2 = np.concatenate(fms)
    fc = np.concatenate(fcs)
    if uv is not None:  # re-bake the fallback colour where the UVs moved
        fc = np.where((np.array([m.albedo is not None for m in mats])[fm2])[:, None], bake_face_colors(uv, faces, fm2, mats), fc)
    return RawMesh(corners.reshape(-1, 3), faces, fc, uv, list(mats), fm2)


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


def render_mesh(raw: RawMesh, meta: dict | None = None) -> RenderMesh:
    """Unshared faces with per-corner smooth normals (crease angle), UVs and materials."""
    corners = np.asarray(raw.vertices, float)[raw.faces]
    normals = corner_normals(corners).reshape(-1, 3)
    uv = raw.uvs[raw.faces].reshape(-1, 2) if raw.uvs is not None else None
    colors = np.repeat(raw.face_colors, 3, axis=0)
    faces = np.arange(3 * len(corners), dtype=np.int32).reshape(-1, 3)
    mats = tuple(raw.materials)
    fm = raw.face_materials if mats else None
    return RenderMesh(
        corners.reshape(-1, 3), faces, colors, dict(meta or {}), normals=normals, uvs=uv, materials=mats, face_materials=fm
    )


def normalise(
    v,
    f,
    c,
    *,
    up: str,
    forward: str,
    units_cm: float,
    size=None,
    budget: int = DEFAULT_BUDGET,
    ground_offset_cm: float = 0.0,
    pre_rotation: np.ndarray | None = None,
    axis_scale=None,
) -> RenderMesh:
    """Steps 2–5 for geometry with per-face colours only (no UVs)."""
    raw = RawMesh(np.asarray(v, float), np.asarray(f), np.asarray(c, np.uint8))
    return normalise_raw(
        raw,
        up=up,
        forward=forward,
        units_cm=units_cm,
        size=size,
        budget=budget,
        ground_offset_cm=ground_offset_cm,
        pre_rotation=pre_rotation,
        axis_scale=axis_scale,
    )


def normalise_raw(
    raw: RawMesh,
    *,
    up: str,
    forward: str,
    units_cm: float,
    size=None,
    budget: int = DEFAULT_BUDGET,
    ground_offset_cm: float = 0.0,
    pre_rotation: np.ndarray | None = None,
    axis_scale=None,
) -> RenderMesh:
    """Apply steps 2–5 to a loaded mesh. ``pre_rotation``/``axis_scale`` are source-specific fixes
    (Sweet Home 3D's catalog rotation and per-axis box fit) applied before the axis change."""
    v = np.asarray(raw.vertices, float)
    if pre_rotation is not None:
        v = v @ np.asarray(pre_rotation, float).T
    if axis_scale is not None:
        ext = v.max(axis=0) - v.min(axis=0)
        v = v * np.where(ext > 0, np.asarray(axis_scale, float) / np.where(ext > 0, ext, 1), 1.0)
    v = (v @ axes_matrix(up, forward).T) * units_cm
    v = v * size_scale(v.max(axis=0) - v.min(axis=0), size)
    raw = decimate_raw(RawMesh(v, raw.faces, raw.face_colors, raw.uvs, raw.materials, raw.face_materials), budget)
    raw.vertices = ground_and_center(np.asarray(raw.vertices, float), ground_offset_cm)
    return render_mesh(raw)


CACHE_VERSION = 2  # npz layout: 2 = normals, uvs, materials (textures as PNG bytes)


def to_npz(mesh: RenderMesh, path: Path) -> None:
    """Write a RenderMesh atomically (temp file + os.replace), textures as PNG bytes."""
    arrays = {"version": np.array(CACHE_VERSION), "vertices": mesh.vertices, "faces": mesh.faces, "colors": mesh.colors}
    for k in ("normals", "uvs", "face_materials"):
        if getattr(mesh, k) is not None:
            arrays[k] = getattr(mesh, k)
    if mesh.materials:
        arrays.update(materials_mod.pack(mesh.materials))
    with atomic_path(path) as tmp, open(tmp, "wb") as fh:
        np.savez_compressed(fh, **arrays)


def npz_version(path: Path) -> int:
    try:
        with np.load(path) as z:
            return int(z["version"]) if "version" in z else 1
    except (OSError, ValueError):
        return 0


def from_npz(path: Path) -> RenderMesh:
    with np.load(path) as z:
        opt = {k: z[k] for k in ("normals", "uvs", "face_materials") if k in z}
        mats = materials_mod.unpack(z)
        if not mats:
            opt.pop("face_materials", None)
        return RenderMesh(z["vertices"], z["faces"], z["colors"], materials=mats, **opt)
