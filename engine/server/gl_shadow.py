"""Sun shadow maps for the GL backend: a cached *static* layer plus a small *dynamic* layer.

Drawing a 2048² shadow map costs about as much as a whole 224² frame on llvmpipe, so it is redrawn
only when needed:

* a static scene seen from many cameras draws it once (signature: sun + every caster's mesh and
  transform);
* when a few actors move between frames (DSI videos), the static layer keeps everything that did
  not move and only the movers are drawn, each frame, into a small map fitted to them; the
  shader takes the darker of the two lookups;
* anything else (new scene, sun change, a static caster moved) rebuilds the static layer.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Callable

import moderngl
import numpy as np

from engine.server import gl_frame as F
from engine.world import Sun

if TYPE_CHECKING:
    from engine.server.gl_backend import Draw

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

    def draw(self, prog, draws: list["Draw"], to_sun: np.ndarray) -> None:
        centers = np.array([d.center for d in draws])
        radii = np.array([d.radius for d in draws])
        light_vp, extent, depth_range = F.light_view_proj(to_sun, centers, radii)
        self.fbo.use()
        self.fbo.clear(depth=1.0)
        self.ctx.enable(moderngl.DEPTH_TEST)
        prog.set("u_light_vp", F.gl_bytes(light_vp))
        for d in draws:
            prog.set("u_model", d.placed.model_bytes)
            d.mesh.vao(self.ctx, prog.prog, "shadow", False).render()
        texel = extent / self.size
        self.state = (1, F.gl_bytes(light_vp), texel, 2.0 * texel / depth_range)

    def release(self) -> None:
        self.fbo.release()
        self.tex.release()


class ShadowMaps:
    """Static + dynamic shadow layers; ``bind`` sets the lit programs' shadow uniforms."""

    def __init__(self, ctx: moderngl.Context, shadow_program: Callable[[], object], size: int):
        self.ctx, self._program, self.size = ctx, shadow_program, size
        self._static: _Layer | None = None
        self._dynamic: _Layer | None = None
        self._sun: Sun | None = None
        self._static_keys: dict[int, tuple] | None = None
        self._prev_keys: dict[int, tuple] = {}
        self._use_dynamic = False
        self._dynamic_sig: tuple | None = None
        self.static_renders = 0  # counters for tests and benchmarks
        self.dynamic_renders = 0

    def update(self, sun: Sun, draws: list["Draw"]) -> None:
        keys = {d.index: (d.mesh.vbo.glo, d.placed.model_bytes) for d in draws}
        to_sun = sun.direction_to_sun()
        if not draws or to_sun[2] <= 0.0:  # nothing casts, or the sun is below the horizon
            self._static_keys, self._use_dynamic, self._dynamic_sig = None, False, None
            self._sun, self._prev_keys = sun, keys
            if self._static is not None:
                self._static.state = OFF
            return
        if not self._static_valid(sun, keys):
            self._rebuild_static(sun, keys, draws, to_sun)
            self._dynamic_sig = None
        movers = [d for d in draws if self._static_keys.get(d.index) != keys[d.index]]
        self._use_dynamic = bool(movers)
        sig = tuple((d.index, keys[d.index]) for d in movers)
        if movers and sig != self._dynamic_sig:  # same movers, same poses: another camera
            if self._dynamic is None:
                self._dynamic = _Layer(self.ctx, max(256, self.size // 4))  # fitted to movers only
            self._dynamic.draw(self._program(), movers, to_sun)
            self.dynamic_renders += 1
        self._dynamic_sig = sig
        self._sun, self._prev_keys = sun, keys

    def _static_valid(self, sun: Sun, keys: dict[int, tuple]) -> bool:
        return (self._static_keys is not None and sun == self._sun
                and all(keys.get(i) == k for i, k in self._static_keys.items()))

    def _rebuild_static(self, sun: Sun, keys: dict, draws: list["Draw"], to_sun: np.ndarray) -> None:
        """Static = casters unchanged since the previous frame (all of them for a new scene)."""
        same_sun = sun == self._sun
        still = {i: k for i, k in keys.items() if same_sun and self._prev_keys.get(i) == k}
        self._static_keys = still or dict(keys)
        if self._static is None:
            self._static = _Layer(self.ctx, self.size)
        self._static.draw(self._program(), [d for d in draws if d.index in self._static_keys], to_sun)
        self.static_renders += 1

    def flags(self) -> str:
        """Program variant flags: ``s`` when the static layer is in use, ``d`` for the dynamic."""
        static = self._static is not None and bool(self._static_keys) and self._static.state[0]
        return ("s" if static else "") + ("d" if self._use_dynamic else "")

    def bind(self, prog) -> None:
        """Set shadow uniforms; static map on texture unit 0, dynamic on unit 2."""
        static = self._static.state if (self._static is not None and self._static_keys) else OFF
        dynamic = self._dynamic.state if self._use_dynamic else OFF
        for suffix, state, layer, unit in (("", static, self._static, 0), ("2", dynamic, self._dynamic, 2)):
            use, light_vp, texel, bias = state
            prog.set(f"u_light_vp{suffix}", light_vp)
            prog.set(f"u_shadow_texel{suffix}", float(texel))
            prog.set(f"u_shadow_bias{suffix}", float(bias))
            prog.set(f"u_shadow_map{suffix}", unit)
            if use:
                layer.tex.use(unit)

    def release(self) -> None:
        for layer in (self._static, self._dynamic):
            if layer is not None:
                layer.release()
