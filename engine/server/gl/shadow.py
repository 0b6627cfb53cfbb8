"""Sun shadow map for the GL backend, cached per scene.

Drawing a 2048² shadow map costs about as much as a whole 224² frame on llvmpipe, so it is redrawn
only when its inputs change: the sun and every caster's mesh and transform (its *signature*). A
static scene seen from many cameras draws it once; a frame in which anything moved redraws it.

The map is a pure function of the scene: an image never depends on what the server rendered
before (an earlier design kept "casters unchanged since the previous frame" in a cached layer
and drew movers into a second, coarser map, which made pixels depend on render history and
broke byte-identical datasets across workers; see docs/renderer.md).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Callable

import moderngl
import numpy as np

from engine.server.gl import frame as F
from engine.world import Sun

if TYPE_CHECKING:
    from engine.server.gl.backend import Draw

OFF = (0, F.gl_bytes(np.eye(4)), 1.0, 0.0)  # (use, light_vp bytes, texel cm, depth bias)


class _Layer:
    """One depth texture from the sun, fitted to a set of casters' bounding spheres."""

    def __init__(self, ctx: moderngl.Context, size: int):
        self.ctx, self.size = ctx, size
        self.tex = ctx.depth_texture((size, size))
        self.tex.compare_func = "<="
        self.tex.filter = (moderngl.LINEAR, moderngl.LINEAR)
        self.fbo = ctx.framebuffer(depth_attachment=self.tex)
        self.state = OFF

    def draw(self, prog, draws: list["Draw"], to_sun: np.ndarray, draw_parts=None) -> None:
        centers = np.array([d.center for d in draws])
        radii = np.array([d.radius for d in draws])
        light_vp, extent, depth_range = F.light_view_proj(to_sun, centers, radii)
        self.fbo.use()
        self.fbo.clear(depth=1.0)
        self.ctx.enable(moderngl.DEPTH_TEST)
        prog.set("u_light_vp", F.gl_bytes(light_vp))
        for d in draws:
            prog.set("u_model", d.placed.model_bytes)
            if draw_parts is not None and d.mesh.alpha_tested:  # cut-out foliage casts cut-out shadows
                draw_parts(d, prog, "shadow", light_vp)
            else:
                d.mesh.vao(self.ctx, prog.prog, "shadow", False).render()
        texel = extent / self.size
        self.state = (1, F.gl_bytes(light_vp), texel, 2.0 * texel / depth_range)

    def release(self) -> None:
        self.fbo.release()
        self.tex.release()


class ShadowMaps:
    """One sun shadow map cached by signature; ``bind`` sets the lit programs' shadow uniforms."""

    def __init__(self, ctx: moderngl.Context, shadow_program: Callable[[], object], size: int,
                 draw_parts: Callable | None = None):
        self.ctx, self._program, self.size = ctx, shadow_program, size
        self._draw_parts = draw_parts  # (draw, prog, key, light_vp) -> None, for alpha-tested meshes
        self._layer: _Layer | None = None
        self._signature: tuple | None = None
        self._active = False
        self.static_renders = 0  # counter for tests and benchmarks

    def update(self, sun: Sun, draws: list["Draw"]) -> None:
        to_sun = sun.direction_to_sun()
        self._active = bool(draws) and to_sun[2] > 0.0  # something casts, sun above the horizon
        if not self._active:
            return
        signature = (sun, tuple((d.index, d.mesh.vbo.glo, d.placed.model_bytes) for d in draws))
        if signature == self._signature:
            return
        if self._layer is None:
            self._layer = _Layer(self.ctx, self.size)
        self._layer.draw(self._program(), draws, to_sun, self._draw_parts)
        self._signature = signature
        self.static_renders += 1

    def flags(self) -> str:
        """Program variant flags: ``s`` when the shadow map is in use."""
        return "s" if self._active else ""

    def bind(self, prog) -> None:
        """Set shadow uniforms; the map is bound to texture unit 0."""
        use, light_vp, texel, bias = self._layer.state if (self._active and self._layer) else OFF
        prog.set("u_light_vp", light_vp)
        prog.set("u_shadow_texel", float(texel))
        prog.set("u_shadow_bias", float(bias))
        prog.set("u_shadow_map", 0)
        if use:
            self._layer.tex.use(0)

    def release(self) -> None:
        if self._layer is not None:
            self._layer.release()
