"""Simplified copies of a normalised mesh (levels of detail for renderers).

The embedded renderer draws small, distant actors with fewer triangles (engine/server/gl/lod.py
chooses the level; the server's catalogue asks the library for it). A level is the import's own
decimation (:func:`assets_manifest.normalize.decimate_raw`: quadric per material with UVs
re-projected, alpha cards thinned whole) applied to the normalised mesh, then smooth normals with
the import's crease angle: the same look, fewer triangles. Deterministic (no randomness beyond
the card thinning's fixed seeds), so a level is the same in every process.
"""
from __future__ import annotations

import numpy as np

from core.meshes import RenderMesh


def simplified(mesh: RenderMesh, budget: int) -> RenderMesh:
    """``mesh`` decimated to about ``budget`` triangles (unchanged when it already has no more)."""
    from assets_manifest.normalize import RawMesh, decimate_raw, render_mesh

    if mesh.n_triangles <= budget:
        return mesh
    faces = np.asarray(mesh.faces, np.int64)
    raw = RawMesh(mesh.vertices.astype(np.float64), faces, mesh.colors[faces[:, 0]],
                  mesh.uvs, list(mesh.materials), mesh.face_materials)
    out = render_mesh(decimate_raw(raw, int(budget)), mesh.meta)
    if not mesh.materials:  # decimate_raw works per material: colour-only meshes stay colour-only
        out = RenderMesh(out.vertices, out.faces, out.colors, out.meta, normals=out.normals)
    return out
