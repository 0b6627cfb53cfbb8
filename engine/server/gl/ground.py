"""The ground as meshes at levels of detail: relief terrain cut into tiles (one quad when flat).

Split from resources.py (GPU formats and uploads); the level choice per camera is in lod.py
(``ground_levels``) and the drawing in passes.py. Design and measurements: docs/renderer.md.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from sceneforge.core.meshes import RenderMesh
from sceneforge.engine.limits import MAX_GROUND_CELLS
from sceneforge.engine.world import Ground


GROUND_TILE_CELLS = 16  # at least this many finest cells per tile side (a power of two)
MAX_GROUND_TILES = 32  # tiles per side at most (draw calls and level choice stay cheap)
GROUND_LEVELS = 5  # level k has 2**k times the finest step (k < GROUND_LEVELS)
SKIRT_MARGIN_CM = 1.0
ERROR_SAFETY = 1.1  # measured (sampled) height errors are scaled by this


@dataclass
class GroundLevel:
    """One level of one ground tile on the CPU: the body grid then four skirts (W, E, S, N edges:
    x = x0, x = x1, y = y0, y = y1) in the face order; ``skirts[e]`` = (first face, face count),
    (0, 0) on the ground's outer border (no neighbour, no crack)."""

    mesh: RenderMesh
    normals: np.ndarray
    body: int  # faces of the grid proper (the first ``body`` faces)
    skirts: tuple


@dataclass
class GroundTile:
    """A square of the relief grid at every level of detail (gl/lod.py ``ground_levels``)."""

    index: tuple[int, int]  # (i, j): column along x, row along y
    lo: np.ndarray  # (3,) bounding box incl. the skirts, cm
    hi: np.ndarray
    levels: list  # list[GroundLevel], finest first
    errors: np.ndarray  # (levels,) max |drawn height - Ground.height| of each level, cm


def ground_grid(ground: Ground) -> list[GroundTile]:
    """The ground as tiles with levels of detail, as in a game engine's terrain.

    Flat ground: one quad (one tile, one level). Relief: a grid of step ``step`` (level 0: a
    twentieth of the relief wavelength, at most ``MAX_GROUND_CELLS`` cells per side; level 1 is
    the grid drawn everywhere before levels existed) cut into ``T x T`` tiles of ``C`` cells; level ``k`` of a tile
    keeps every ``2**k``-th vertex, so
    tiles at the same level share their edge vertices exactly (same x, y, same
    :meth:`Ground.height`) and only a join between two levels can open a crack. Each level carries
    skirts: a vertical strip hanging ``depth`` cm below each inner edge (``depth`` = twice the
    largest height error of any level + 1 cm, so it always reaches below the neighbour's edge);
    the renderer draws a skirt only where the neighbour is at another level. ``errors`` is measured
    by sampling Ground.height inside every cell against the drawn triangles.
    """
    e = float(ground.extent)
    color = np.asarray(ground.color, dtype=np.uint8)
    if ground.relief_amplitude == 0:
        v = np.array([[-e, -e, 0], [e, -e, 0], [e, e, 0], [-e, e, 0]], dtype=np.float32)
        f = np.array([[0, 1, 2], [0, 2, 3]], dtype=np.int32)
        n = np.tile(np.array([0, 0, 1], np.float32), (4, 1))
        mesh = RenderMesh(v, f, np.tile(color, (4, 1)))
        return [
            GroundTile(
                (0, 0), np.array([-e, -e, 0.0]), np.array([e, e, 0.0]), [GroundLevel(mesh, n, 2, ((0, 0),) * 4)], np.zeros(1)
            )
        ]
    step = max(min(ground.relief_wavelength / 20.0, e / 64.0), 1.0, 2 * e / MAX_GROUND_CELLS)
    cells = int(math.ceil(2 * e / step))  # at most MAX_GROUND_CELLS per side (memory stays bounded)
    per = GROUND_TILE_CELLS
    while per * MAX_GROUND_TILES < cells:
        per *= 2
    tiles = int(math.ceil(cells / per))
    n_levels = min(GROUND_LEVELS, per.bit_length())  # the coarsest level has >= 1 cell per side
    xs = np.linspace(-e, e, per * tiles + 1)
    # height error of each level: the relief is one stationary sum of sines, so the max over up
    # to 16 tiles spread over the grid (x 1.1 for the sampling) bounds every tile's
    pick = np.unique(np.linspace(0, tiles - 1, min(tiles, 4)).round().astype(int))
    errors = np.zeros(n_levels)
    for i in pick:
        for j in pick:
            tx, ty = xs[i * per : (i + 1) * per + 1], xs[j * per : (j + 1) * per + 1]
            for k in range(n_levels):
                x, y = tx[:: 1 << k], ty[:: 1 << k]
                gz = np.asarray(ground.height(*np.meshgrid(x, y, indexing="ij")), dtype=np.float64)
                errors[k] = max(errors[k], _height_error(ground, x, y, gz))
    errors = np.maximum.accumulate(ERROR_SAFETY * errors)  # monotone in the level
    depth = 2.0 * float(errors[-1]) + SKIRT_MARGIN_CM
    out = []
    for i in range(tiles):
        for j in range(tiles):
            tx, ty = xs[i * per : (i + 1) * per + 1], xs[j * per : (j + 1) * per + 1]
            inner = (i > 0, i < tiles - 1, j > 0, j < tiles - 1)
            levels = [
                _with_skirts(*_tile_level(ground, tx[:: 1 << k], ty[:: 1 << k]), inner, depth, color) for k in range(n_levels)
            ]
            zs = [lv.mesh.vertices[:, 2] for lv in levels]
            lo = np.array([tx[0], ty[0], min(float(z.min()) for z in zs)])
            hi = np.array([tx[-1], ty[-1], max(float(z.max()) for z in zs)])
            out.append(GroundTile((i, j), lo, hi, levels, errors.copy()))
    return out


def ground_tiles(ground: Ground) -> list[tuple[RenderMesh, np.ndarray]]:
    """The ground at full detail (level 0 of every tile, no skirts) as meshes + smooth normals:
    one quad when flat. Heights come from :meth:`Ground.height` (the function scenarios place
    objects with). For renderers without levels of detail (the Cycles export)."""
    out = []
    for t in ground_grid(ground):
        lv = t.levels[0]
        nv = int(lv.mesh.faces[: lv.body].max()) + 1
        out.append((RenderMesh(lv.mesh.vertices[:nv], lv.mesh.faces[: lv.body], lv.mesh.colors[:nv]), lv.normals[:nv]))
    return out


def _tile_level(ground: Ground, xs: np.ndarray, ys: np.ndarray):
    """Vertex grid (x, y, z arrays) and smooth normals."""
    gx, gy = np.meshgrid(xs, ys, indexing="ij")
    gz = np.asarray(ground.height(gx, gy), dtype=np.float64)
    h = 1.0  # cm, central differences for the analytic-ish normal
    dzdx = (ground.height(gx + h, gy) - ground.height(gx - h, gy)) / (2 * h)
    dzdy = (ground.height(gx, gy + h) - ground.height(gx, gy - h)) / (2 * h)
    n = np.stack([-dzdx, -dzdy, np.ones_like(gz)], axis=-1)
    n /= np.linalg.norm(n, axis=-1, keepdims=True)
    return (gx, gy, gz), n


def _height_error(ground: Ground, xs: np.ndarray, ys: np.ndarray, gz: np.ndarray) -> float:
    """Max |interpolated - Ground.height| over sample points inside every cell (and on edges);
    the cells are split along their a-c diagonal, as in :func:`_grid_faces`."""
    s = max(4, 64 // max(1, len(xs) - 1))  # samples per cell side, at least 64 per tile side
    t = np.linspace(0.0, 1.0, s + 1)
    u, v = np.meshgrid(t, t, indexing="ij")  # local coordinates in a cell (u along x, v along y)
    za, zb, zc, zd = gz[:-1, :-1], gz[1:, :-1], gz[1:, 1:], gz[:-1, 1:]
    u4, v4 = u[None, None], v[None, None]
    interp = np.where(
        u4 >= v4,
        za[..., None, None] + u4 * (zb - za)[..., None, None] + v4 * (zc - zb)[..., None, None],
        za[..., None, None] + v4 * (zd - za)[..., None, None] + u4 * (zc - zd)[..., None, None],
    )
    dx, dy = np.diff(xs), np.diff(ys)
    px = xs[:-1, None, None, None] + u4 * dx[:, None, None, None]
    py = ys[None, :-1, None, None] + v4 * dy[None, :, None, None]
    px, py = np.broadcast_arrays(px, py)
    return float(np.max(np.abs(interp - ground.height(px, py))))


def _grid_faces(nx: int, ny: int) -> np.ndarray:
    idx = np.arange(nx * ny).reshape(nx, ny)
    a, b, c, d = idx[:-1, :-1], idx[1:, :-1], idx[1:, 1:], idx[:-1, 1:]
    return np.concatenate([np.stack([a, b, c], -1).reshape(-1, 3), np.stack([a, c, d], -1).reshape(-1, 3)])


def _with_skirts(g, n: np.ndarray, inner: tuple, depth: float, color: np.ndarray) -> GroundLevel:
    gx, gy, gz = g
    nx, ny = gx.shape
    verts = [np.stack([gx, gy, gz], axis=-1).reshape(-1, 3)]
    norms = [n.reshape(-1, 3)]
    faces = [_grid_faces(nx, ny)]
    idx = np.arange(nx * ny).reshape(nx, ny)
    nv, nf, skirts = nx * ny, len(faces[0]), []
    # edge vertex indices in a winding that faces outwards from the tile (W, E, S, N)
    edges = (idx[0, ::-1], idx[-1, :], idx[:, 0], idx[::-1, -1])
    for edge, has in zip(edges, inner):
        if not has:
            skirts.append((0, 0))
            continue
        top = verts[0][edge]
        verts.append(top - np.array([0.0, 0.0, depth]))
        norms.append(norms[0][edge])
        low = nv + np.arange(len(edge))
        k = np.arange(len(edge) - 1)
        quad = np.concatenate([np.stack([edge[k], low[k], low[k + 1]], -1), np.stack([edge[k], low[k + 1], edge[k + 1]], -1)])
        faces.append(quad)
        skirts.append((nf, len(quad)))
        nv += len(edge)
        nf += len(quad)
    v = np.concatenate(verts).astype(np.float32)
    mesh = RenderMesh(v, np.concatenate(faces).astype(np.int32), np.tile(color, (len(v), 1)))
    return GroundLevel(mesh, np.concatenate(norms).astype(np.float32), len(faces[0]), tuple(skirts))
