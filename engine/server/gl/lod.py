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
the camera (never on history): frames stay pure functions of the scene.

**Shadow casters** have levels too (:func:`shadow_level`): the coarser of the level their size in
shadow-map texels allows (``SHADOW_TRIANGLES_PER_TEXEL2``) and the level the camera draws them at
(a shadow is seen at about its caster's distance). Only ``lit`` changes, and only a little (a
shadow is a filtered silhouette); labels never see the shadow map.
**The ground** (relief terrain) has levels too (:func:`ground_levels`, ground.ground_grid): square
tiles whose level ``k`` keeps every ``2**k``-th vertex of the finest grid; a tile is drawn at the
coarsest level whose measured max height error (vs ``Ground.height``, the function objects are
placed with) projects below ``GROUND_ERROR_PX`` from the nearest point of the tile. Skirts hang
below the edges where two levels meet, so no crack opens; lit, ids and depth draw the same tiles.
**Impostors** (:func:`wants_impostor`, gl/impostor.py): a foliage level whose decimation stalls
above ``IMPOSTOR_STALL`` × its budget is drawn as crossed alpha-cut cards baked from the full mesh
(8 triangles), through this same mechanism (one level per frame, every pass).
``GLBackend(lod=False)`` (``--renderer gl:lod=0``) draws every mesh and every caster at full detail
(and the ground at its finest level).

``TRIANGLES_PER_PX2`` was 1.5 until issue 19, then 1.0; at 0.75 and below a car 25 m away turned
dark and holed: the levels were decimated without their connectivity (assets_manifest/lod.py,
fixed). With correct levels 0.5 draws about what 1.0 drew with the broken ones (typical 50.5k,
forest 72.7k triangles) and keeps vehicles' silhouettes and colours (docs/renderer.md).
"""

from __future__ import annotations

import math

import numpy as np

from sceneforge.core.lod_levels import LOD_RATIO, MAX_LEVEL, MIN_TRIANGLES, budget  # noqa: F401 - the levels' budgets

TRIANGLES_PER_PX2 = 0.5  # wanted density over the projected bounding disc (a silhouette covers
# roughly half of its disc: ~2 triangles per covered pixel)
SHADOW_TRIANGLES_PER_TEXEL2 = 0.1  # shadow casters: a shadow is a filtered silhouette seen at a slant


IMPOSTOR_MIN_LEVEL = 1  # impostors (gl/impostor.py) only from this level on
IMPOSTOR_STALL = 1.5  # ... and only when the decimated level keeps over this × its budget


def wants_impostor(level: int, foliage: bool, decimated_triangles: int, budget_triangles: int) -> bool:
    """Whether ``level`` of a mesh is drawn as its impostor (crossed alpha-cut cards with a baked
    atlas) instead of its decimated level: foliage (the decimated level's ``meta["foliage"]``,
    assets_manifest/lod.py: leaves as many small pieces or alpha-cut cards) whose decimation stalls at
    more than ``IMPOSTOR_STALL`` × the level's budget (leaf cards are thinned whole, small branch
    parts keep >= 8 faces). A function of the mesh and the level only."""
    return bool(foliage) and level >= IMPOSTOR_MIN_LEVEL and decimated_triangles > IMPOSTOR_STALL * budget_triangles


def level_for(n_triangles: int, radius_cm: float, distance_cm: float, focal_px: float) -> int:
    """The coarsest level with at least the wanted triangles for the actor's size on screen.

    ``distance_cm``: camera to the bounding sphere's centre; near or inside the sphere → level 0.
    """
    if n_triangles < LOD_RATIO * MIN_TRIANGLES or distance_cm <= 1.5 * radius_cm:
        return 0
    return _level(n_triangles, radius_cm * focal_px / distance_cm, TRIANGLES_PER_PX2)


def shadow_level(n_triangles: int, radius_cm: float, texel_cm: float) -> int:
    """A shadow caster's level: the coarsest with ``SHADOW_TRIANGLES_PER_TEXEL2`` triangles per
    shadow-map texel of its bounding disc seen from the sun (a function of the mesh, its size and
    the map's texel, i.e. of the scene only)."""
    if n_triangles < LOD_RATIO * MIN_TRIANGLES:
        return 0
    return _level(n_triangles, radius_cm / max(texel_cm, 1e-6), SHADOW_TRIANGLES_PER_TEXEL2)


def _level(n_triangles: int, r_px: float, density: float) -> int:
    need = max(density * math.pi * r_px * r_px, MIN_TRIANGLES)
    if n_triangles <= need * LOD_RATIO:
        return 0
    return int(min(MAX_LEVEL, math.floor(math.log(n_triangles / need) / math.log(LOD_RATIO))))


def levels(n_triangles: np.ndarray, r_px: np.ndarray, density: float) -> np.ndarray:
    """:func:`_level` for many meshes at once (``r_px``: the bounding disc's radius in pixels or
    texels; a negative radius means level 0, e.g. a camera inside the sphere)."""
    n = np.asarray(n_triangles, dtype=np.float64)
    r = np.asarray(r_px, dtype=np.float64)
    need = np.maximum(density * math.pi * r * r, MIN_TRIANGLES)
    with np.errstate(divide="ignore"):
        lv = np.floor(np.log(n / need) / math.log(LOD_RATIO))
    lv = np.minimum(MAX_LEVEL, lv).astype(np.int64)
    keep0 = (n < LOD_RATIO * MIN_TRIANGLES) | (n <= need * LOD_RATIO) | (r < 0)
    return np.where(keep0, 0, lv)


def caster_levels(
    n_triangles: np.ndarray,
    radii: np.ndarray,
    texel_cm: float,
    distances: np.ndarray | None = None,
    focal_px: float | None = None,
) -> np.ndarray:
    """Shadow casters' levels, vectorised: :func:`shadow_level`, and with a camera (``distances``
    from it to the bounding spheres' centres, ``focal_px``) at least the level :func:`level_for`
    would draw them at."""
    n = np.asarray(n_triangles, dtype=np.float64)
    radii = np.asarray(radii, dtype=np.float64)
    out = levels(n, radii / max(texel_cm, 1e-6), SHADOW_TRIANGLES_PER_TEXEL2)
    if distances is not None:
        d = np.asarray(distances, dtype=np.float64)
        r_px = np.where(d <= 1.5 * radii, -1.0, radii * float(focal_px) / np.maximum(d, 1e-9))
        out = np.maximum(out, levels(n, r_px, TRIANGLES_PER_PX2))
    return out


# --- ground (relief terrain) ------------------------------------------------------------------
GROUND_ERROR_PX = 1.0  # a tile is drawn at the coarsest level whose height error projects below this


def ground_levels(lo: np.ndarray, hi: np.ndarray, errors: np.ndarray, eye, focal_px: float) -> np.ndarray:
    """Each ground tile's level (ground.ground_grid): the coarsest whose max height error
    (``errors[t, k]`` cm, non-decreasing in k) seen from the nearest point of the tile's box
    (``lo``/``hi``, (tiles, 3)) projects below ``GROUND_ERROR_PX`` pixels. Level 0 when the
    camera is inside or on the box. A function of the ground and the camera only."""
    lo, hi = np.asarray(lo, np.float64), np.asarray(hi, np.float64)
    eye = np.asarray(eye, np.float64)
    d = np.linalg.norm(np.maximum(np.maximum(lo - eye, eye - hi), 0.0), axis=1)
    err = np.asarray(errors, np.float64)
    ok = err * float(focal_px) < GROUND_ERROR_PX * d[:, None]
    ok[:, 0] = True
    return np.cumprod(ok, axis=1).sum(axis=1).astype(np.int64) - 1
