"""The ground on the GPU: every tile of ``ground.ground_grid`` at every level in one buffer, and
the per-frame selection of tiles, levels and skirts drawn in one call (design: docs/renderer.md)."""

from __future__ import annotations

from dataclasses import dataclass

import moderngl
import numpy as np

from sceneforge.core.meshes import RenderMesh
from sceneforge.engine.server.gl import frame as F
from sceneforge.engine.server.gl import lod as L
from sceneforge.engine.server.gl.resources import GpuMesh, upload
from sceneforge.engine.world import Camera


@dataclass
class GroundTileRanges:
    """One ground tile (ground.GroundTile) inside :class:`GpuGround`'s buffers: per level,
    the body's and the four skirts' (W, E, S, N) (first face, faces) in the shared index array."""

    index: tuple[int, int]
    lo: np.ndarray
    hi: np.ndarray
    errors: np.ndarray
    body: list  # per level: (first, count)
    skirts: list  # per level: 4 x (first, count); count 0 = no skirt (outer border)


@dataclass
class GpuGround:
    """Every tile at every level in one vertex buffer; ``draw`` shares it with an index buffer
    holding the faces a frame selects (:meth:`ranges`), rewritten only when the selection
    changes: one draw call for the whole ground, whatever the levels."""

    mesh: GpuMesh  # all faces (static)
    draw: GpuMesh  # same vertices, the selected faces (dynamic index buffer)
    faces: np.ndarray  # (F, 3) int32, the welded index array of ``mesh``
    tiles: list  # list[GroundTileRanges]
    n_body: int  # faces at the finest level, skirts left out (the scene's ground triangles)
    written: tuple | None = None  # the selection now in ``draw.ibo``

    def ranges(self, camera: Camera, planes: np.ndarray, lod: bool) -> tuple:
        """What every pass of one frame draws of the ground, as (first face, faces) ranges of
        :attr:`faces`: the tiles in the frustum at their level (``lod.ground_levels``, a function
        of the ground and the camera only) with the skirts of the edges whose neighbour is at
        another level."""
        tiles = self.tiles
        if len(tiles) == 1:
            return (tiles[0].body[0],)
        lo = np.array([t.lo for t in tiles])
        hi = np.array([t.hi for t in tiles])
        if lod:
            levels = L.ground_levels(lo, hi, np.array([t.errors for t in tiles]), camera.location, camera.focal_px)
        else:
            levels = np.zeros(len(tiles), dtype=np.int64)
        by_index = {t.index: int(k) for t, k in zip(tiles, levels)}
        visible = F.spheres_in_frustum(planes, 0.5 * (lo + hi), 0.5 * np.linalg.norm(hi - lo, axis=1))
        ranges: list[tuple[int, int]] = []
        for t, k, v in zip(tiles, levels, visible):
            if not v:
                continue
            k = int(k)
            i, j = t.index
            parts = [t.body[k]] + [
                fc
                for fc, nb in zip(t.skirts[k], ((i - 1, j), (i + 1, j), (i, j - 1), (i, j + 1)))
                if fc[1] and by_index.get(nb, k) != k
            ]
            for first, count in parts:
                if ranges and ranges[-1][0] + ranges[-1][1] == first:  # contiguous: merge
                    ranges[-1] = (ranges[-1][0], ranges[-1][1] + count)
                else:
                    ranges.append((first, count))
        return tuple(ranges)

    def select(self, ranges: tuple) -> GpuMesh:
        if ranges != self.written:
            data = np.concatenate([self.faces[f : f + c] for f, c in ranges]) if ranges else self.faces[:0]
            self.draw.ibo.write(np.ascontiguousarray(data, np.int32).tobytes())
            self.written = ranges
        return self.draw

    def release(self) -> None:
        self.mesh.release()
        for vao in self.draw.vaos.values():
            vao.release()
        self.draw.ibo.release()


def upload_ground(ctx: moderngl.Context, grid: list) -> GpuGround:
    """Every tile and level of a ground's grid (``ground.ground_grid``) in one vertex buffer (+ an
    empty dynamic index buffer)."""
    verts, faces, colors, normals, tiles = [], [], [], [], []
    nv = nf = 0
    for t in grid:
        body, skirts = [], []
        for lv in t.levels:
            verts.append(lv.mesh.vertices)
            faces.append(lv.mesh.faces + nv)
            colors.append(lv.mesh.colors)
            normals.append(lv.normals)
            body.append((nf, lv.body))
            skirts.append(tuple((nf + f, c) for f, c in lv.skirts))
            nv += len(lv.mesh.vertices)
            nf += len(lv.mesh.faces)
        tiles.append(GroundTileRanges(t.index, t.lo, t.hi, t.errors, body, skirts))
    mesh = RenderMesh(np.concatenate(verts), np.concatenate(faces), np.concatenate(colors))
    full = upload(ctx, mesh, np.concatenate(normals))
    try:
        welded = np.frombuffer(full.ibo.read(), np.int32).reshape(-1, 3)
        draw = GpuMesh(
            vbo=full.vbo,
            ibo=ctx.buffer(reserve=max(full.ibo.size, 4), dynamic=True),
            n_triangles=0,
            center=full.center,
            radius=full.radius,
            max_luma=full.max_luma,
        )
    except BaseException:
        full.release()
        raise
    return GpuGround(full, draw, welded, tiles, sum(t.body[0][1] for t in tiles))
