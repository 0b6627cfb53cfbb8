"""Levels of detail by screen size, as in a game engine: fewer triangles for small, distant meshes.

Why: on llvmpipe a frame's cost is set by its triangles (each is set up, binned and shaded as at
least one 4×4 pixel block however small), far more than by its pixels. A 12k-triangle tree 70 m
away covers ~250 pixels at 224²: ~50 triangles per pixel. Level ``k`` of a mesh has about
``LOD_RATIO**-k`` of its triangles; the mesh content (``content.mesh_lod(asset_id, budget)``: the
asset library's UV-preserving decimation, see assets_manifest/lod.py) provides it, built once per
asset and level. A frame draws each actor at the coarsest level that still has
``TRIANGLES_PER_PX2`` triangles per pixel of its projected bounding disc.

Labels stay exact: the level is chosen once per (scene, camera) in ``GLBackend._frame`` and every
pass of that frame (lit, ids, depth, pixel counts, coverage) draws the same geometry, so masks and
depth are those of the drawn image. The choice depends only on the actor's mesh, transform and
the camera (never on history): frames stay pure functions of the scene. Shadow casters are drawn
at full detail (one shadow map serves every camera of a static scene).
``GLBackend(lod=False)`` (``--renderer gl:lod=0``) draws every mesh at full detail.
"""
from __future__ import annotations

import math

LOD_RATIO = 4               # triangles of level k+1 ≈ triangles of level k / LOD_RATIO
MAX_LEVEL = 3
MIN_TRIANGLES = 300         # no level below this many triangles (smaller meshes have no levels)
TRIANGLES_PER_PX2 = 1.5     # wanted density over the projected bounding disc (a silhouette covers
                            # roughly half of its disc: ~3 triangles per covered pixel)


def level_for(n_triangles: int, radius_cm: float, distance_cm: float, focal_px: float) -> int:
    """The coarsest level with at least the wanted triangles for the actor's size on screen.

    ``distance_cm``: camera to the bounding sphere's centre; near or inside the sphere → level 0.
    """
    if n_triangles < LOD_RATIO * MIN_TRIANGLES or distance_cm <= 1.5 * radius_cm:
        return 0
    r_px = radius_cm * focal_px / distance_cm
    need = max(TRIANGLES_PER_PX2 * math.pi * r_px * r_px, MIN_TRIANGLES)
    if n_triangles <= need * LOD_RATIO:
        return 0
    return int(min(MAX_LEVEL, math.floor(math.log(n_triangles / need) / math.log(LOD_RATIO))))


def budget(n_triangles: int, level: int) -> int:
    """Nominal triangle count of ``level`` (what the decimation is asked for)."""
    return max(MIN_TRIANGLES, int(round(n_triangles / LOD_RATIO ** level)))
