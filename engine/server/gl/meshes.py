"""Uploaded meshes and their levels of detail for :class:`engine.server.gl.passes.Passes`.

One cache per GL context: each asset's full mesh uploaded once, each level (gl/lod.py) built by
the content (``content.mesh_lod``) or, for foliage whose decimation stalls, replaced by the
asset's impostor (gl/impostor.py, baked once from the full mesh), uploaded once. Split from
passes.py, which draws with them.
"""

from __future__ import annotations

import logging
from collections import OrderedDict

import moderngl

from sceneforge.core.meshes import RenderMesh
from sceneforge.engine.server.gl import lod as L
from sceneforge.engine.server.gl.impostor import ImpostorBaker
from sceneforge.engine.server.gl.resources import GpuMesh, upload

log = logging.getLogger(__name__)
POSED_KEPT = 96  # uploaded poses of skinned characters (engine/server/characters.py) kept per context


class MeshCache:
    """Full meshes, levels and impostors of one context (``textures()``: the context's texture
    cache, which the impostor bake shares)."""

    def __init__(self, ctx: moderngl.Context, textures):
        self.ctx = ctx
        self._textures = textures
        self.meshes: dict[str, GpuMesh] = {}
        self._baker: ImpostorBaker | None = None
        self.impostors: dict[str, RenderMesh] = {}  # asset id -> its baked impostor (gl/impostor.py)
        self.posed: OrderedDict[str, GpuMesh] = OrderedDict()  # character poses: least recently used released

    def mesh(self, asset_id: str, provider) -> GpuMesh:
        if asset_id.startswith("character:"):
            return self._posed(asset_id, provider)
        if asset_id not in self.meshes:
            self.meshes[asset_id] = upload(self.ctx, provider(asset_id))
            log.debug("uploaded %s: %d triangles", asset_id, self.meshes[asset_id].n_triangles)
        return self.meshes[asset_id]

    def mesh_level(self, asset_id: str, full: GpuMesh, level: int, content) -> GpuMesh:
        """Level ``level`` of detail of an uploaded asset (gl/lod.py), uploaded once; ``full``
        itself when the content has no levels (``content.mesh_lod``) or the level saves nothing."""
        if asset_id.startswith("character:"):
            return full  # a posed character has no levels (and must not pin its pose here)
        key = f"{asset_id}\0lod{level}"
        if key not in self.meshes:
            mesh = self.level_source(asset_id, full, level, content)
            if mesh is None or mesh.n_triangles == 0 or mesh.n_triangles >= full.n_triangles:
                self.meshes[key] = full
            else:
                ikey = f"{asset_id}\0impostor"
                if mesh.meta.get("impostor") and ikey in self.meshes:
                    self.meshes[key] = self.meshes[ikey]  # one upload for every impostor level
                else:
                    self.meshes[key] = upload(self.ctx, mesh)
                    if mesh.meta.get("impostor"):
                        self.meshes[ikey] = self.meshes[key]
                log.debug("level %d of %s: %d -> %d triangles", level, asset_id, full.n_triangles, mesh.n_triangles)
        return self.meshes[key]

    def _posed(self, asset_id: str, provider) -> GpuMesh:
        """A character's pose: uploaded on first use, the oldest released beyond POSED_KEPT (a
        walk cycle is up to 256 poses per character; a dataset visits many)."""
        if asset_id in self.posed:
            self.posed.move_to_end(asset_id)
            return self.posed[asset_id]
        self.posed[asset_id] = upload(self.ctx, provider(asset_id))
        while len(self.posed) > POSED_KEPT:
            _, old = self.posed.popitem(last=False)
            old.release()
        return self.posed[asset_id]

    def level_source(self, asset_id: str, full: GpuMesh, level: int, content) -> RenderMesh | None:
        """The mesh drawn at ``level`` (before upload): the content's decimated level
        (``content.mesh_lod``), or, for foliage whose decimation stalls far above the level's
        budget (``lod.wants_impostor``), the asset's impostor (gl/impostor.py, baked once from
        ``full``). Not for meshes with alpha-cut parts: their leaf cards' mipmapped alpha thins out
        with distance, which a coverage baked at one scale cannot follow (a bush: silhouette IoU vs
        the full mesh 0.63 decimated, 0.30 as an impostor). None: no level (draw ``full``)."""
        fn = getattr(content, "mesh_lod", None)
        if fn is None:
            return None
        budget = L.budget(full.n_triangles, level)
        try:
            mesh = fn(asset_id, budget)
        except Exception as e:  # noqa: BLE001 - a level is an optimisation: draw the full mesh
            log.warning("no level of detail %d for %s (%s): full mesh", level, asset_id, e)
            return None
        if (
            mesh is not None
            and not full.alpha_tested
            and L.wants_impostor(level, bool(mesh.meta.get("foliage")), mesh.n_triangles, budget)
        ):
            if asset_id not in self.impostors:
                if self._baker is None:
                    self._baker = ImpostorBaker(self.ctx, self._textures())
                self.impostors[asset_id] = self._baker.bake(full, asset_id)
            return self.impostors[asset_id]
        return mesh

    def release(self) -> None:
        for m in list({id(m): m for m in self.meshes.values()}.values()):  # levels may alias
            m.release()
        for m in self.posed.values():
            m.release()
        self.posed = OrderedDict()
        if self._baker is not None:
            self._baker.release()
        self.meshes, self._baker, self.impostors = {}, None, {}
