"""Simplified copies of a normalised mesh (levels of detail for renderers).

The embedded renderer draws small, distant actors with fewer triangles (engine/server/gl/lod.py
chooses the level; the server's catalogue asks the library for it). A level is the import's own
decimation (:func:`assets_manifest.normalize.decimate_raw`: quadric per material with UVs
re-projected, alpha cards thinned whole) applied to the normalised mesh, then smooth normals with
the import's crease angle: the same look, fewer triangles. Deterministic (no randomness beyond
the card thinning's fixed seeds), so a level is the same in every process. A level's
``meta["foliage"]`` says whether the decimation found foliage in it (:func:`foliage`).
"""

from __future__ import annotations

import numpy as np

from sceneforge.assets_manifest import decimate as dec
from sceneforge.assets_manifest.normalize import RawMesh, decimate_raw, render_mesh
from sceneforge.core.meshes import RenderMesh


def shared(mesh: RenderMesh) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """(vertices, faces, uvs) with the corners that have the same position and UV merged.

    A normalised mesh has unshared faces (3 corners each, for crisp per-face colour);
    :func:`~assets_manifest.normalize.decimate_raw` reads its connectivity from shared vertex
    indices (UV islands, foliage cards, the quadric's edges). Without this merge every triangle
    is an island of its own, so solid parts with many triangles (a car's body, tyres, interior;
    a trunk) were taken for foliage and thinned by dropping and growing single triangles: the
    holed, dark coarse levels of issue 19. Exact equality only: corners split at a UV seam stay
    split, as in the source file.
    """
    v = np.asarray(mesh.vertices, np.float64)
    uv = None if mesh.uvs is None else np.asarray(mesh.uvs, np.float64)
    key = v if uv is None else np.concatenate([v, uv], axis=1)
    _, first, inv = np.unique(key, axis=0, return_index=True, return_inverse=True)
    faces = inv.reshape(-1)[np.asarray(mesh.faces, np.int64)]
    return v[first], faces, (None if uv is None else uv[first])


def foliage(mesh: RenderMesh, v: np.ndarray, faces: np.ndarray) -> bool:
    """Whether some material of ``mesh`` is foliage, as the decimation judges it (alpha-cut, or
    many small separate pieces: ``decimate.thinned_whole``; ``v``/``faces``: :func:`shared`). Such
    materials are thinned by whole cards, so their levels stall far above the budget; a renderer
    may draw them as impostors instead (engine/server/gl/impostor.py)."""
    fm = mesh.face_materials if mesh.face_materials is not None else np.zeros(len(faces), np.int32)
    diag = float(np.linalg.norm(v.max(axis=0) - v.min(axis=0))) if len(v) else 0.0
    for i, m in enumerate(mesh.materials or ()):
        sel = fm == i
        if sel.any() and dec.thinned_whole(m, v, faces[sel], diag):
            return True
    return False


def simplified(mesh: RenderMesh, budget: int) -> RenderMesh:
    """``mesh`` decimated to about ``budget`` triangles (unchanged when it already has no more)."""
    if mesh.n_triangles <= budget:
        return mesh
    v, faces, uvs = shared(mesh)
    raw = RawMesh(v, faces, mesh.colors[np.asarray(mesh.faces, np.int64)[:, 0]], uvs, list(mesh.materials), mesh.face_materials)
    out = render_mesh(decimate_raw(raw, int(budget), per_part=True), {**mesh.meta, "foliage": foliage(mesh, v, faces)})
    if not mesh.materials:  # decimate_raw works per material: colour-only meshes stay colour-only
        out = RenderMesh(out.vertices, out.faces, out.colors, out.meta, normals=out.normals)
    return out
