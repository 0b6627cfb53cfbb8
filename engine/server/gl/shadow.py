"""Sun shadow map for the GL backend, cached per scene.

Drawing a 2048² shadow map costs about as much as a whole 224² frame on llvmpipe, so it is redrawn
only when its inputs change: the sun and every caster's mesh and transform (its *signature*). A
static scene seen from many cameras draws it once; a frame in which anything moved redraws it.

The map is a pure function of the scene: an image never depends on what the server rendered
before (an earlier design kept "casters unchanged since the previous frame" in a cached layer
and drew movers into a second, coarser map, which made pixels depend on render history and
broke byte-identical datasets across workers; see docs/renderer.md).

**Only casters that can darken a visible pixel are drawn** (:func:`casters_in_view`): the lit
pass reads the map only at the light-space positions of fragments inside the camera's frustum
(plus the normal offset and the PCF taps, a few texels). A caster whose bounding sphere, seen
from the sun (an orthographic disc), stays farther than that from the frustum's light-space
outline writes no texel the frame reads, so leaving it out gives the same image, byte for byte
(``tests/engine/test_shadow_culling.py``). The light's projection is still fitted to *every*
caster, so the depth values of the drawn ones are unchanged. Every image of a dataset has its
own sun (per-sample looks), so this map is redrawn for almost every sample: in a forest most
trees stand behind or beside the camera, and drawing them was most of a sample's render time.
For the same reason a map that already holds *more* casters than a view needs (same sun, same
casters) is reused as it is, and a redraw keeps the casters the map held: a static scene seen
from cameras that need different casters is not redrawn per camera (images identical to a fresh
renderer's, ``tests/engine/test_gl_lod.py``).
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

    def draw(self, prog, draws: list["Draw"], fit: tuple[np.ndarray, float, float], draw_parts=None) -> None:
        """Draw ``draws`` with the light projection ``fit`` = (light_vp, extent, depth range)."""
        light_vp, extent, depth_range = fit
        self.fbo.use()
        self.fbo.clear(depth=1.0)
        self.ctx.enable(moderngl.DEPTH_TEST)
        prog.set("u_light_vp", F.gl_bytes(light_vp))
        for d in draws:
            prog.set("u_model", d.placed.model_bytes)
            if draw_parts is not None and d.caster.alpha_tested:  # cut-out foliage casts cut-out shadows
                draw_parts(d, prog, "shadow", light_vp)
            else:
                d.caster.vao(self.ctx, prog.prog, "shadow", False).render()
        texel = extent / self.size
        self.state = (1, F.gl_bytes(light_vp), texel, 2.0 * texel / depth_range)

    def release(self) -> None:
        self.fbo.release()
        self.tex.release()


# Texels around a fragment's light-space position that its shadow lookup can read: the normal
# offset (1.5), the PCF taps (0.75) and their bilinear footprint (1), doubled for safety.
READ_MARGIN_TEXELS = 8.0


def casters_in_view(light_vp: np.ndarray, view_proj: np.ndarray, centers: np.ndarray, radii: np.ndarray,
                    size: int) -> np.ndarray:
    """Boolean per caster: can its shadow reach a fragment inside the frustum of ``view_proj``?

    In the light's (orthographic) clip space a sphere is a disc of radius r·s (s = the matrix's
    scale); the fragments the camera sees lie in the convex hull of the frustum's 8 corners.
    A caster is kept when its disc comes within ``READ_MARGIN_TEXELS`` of that hull. Conservative:
    everything dropped writes no texel a visible fragment reads.
    """
    if len(centers) == 0:
        return np.zeros(0, dtype=bool)
    ndc = np.array([[x, y, z, 1.0] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)])
    world = ndc @ np.linalg.inv(view_proj).T
    corners = (world[:, :3] / world[:, 3:4]) @ light_vp[:2, :3].T + light_vp[:2, 3]
    hull = _convex_hull(corners)
    scale = float(np.linalg.norm(light_vp[0, :3]))   # clip units per cm (orthographic, uniform in x/y)
    pts = centers @ light_vp[:2, :3].T + light_vp[:2, 3]
    reach = radii * scale + READ_MARGIN_TEXELS * 2.0 / size
    return _distance_to_convex(pts, hull) <= reach


def _convex_hull(p: np.ndarray) -> np.ndarray:
    """Counter-clockwise hull of 2-D points (monotone chain)."""
    pts = sorted(set(map(tuple, np.round(p, 12))))
    if len(pts) < 3:
        return np.array(pts)

    def half(points):
        out: list = []
        for q in points:
            while len(out) >= 2 and ((out[-1][0] - out[-2][0]) * (q[1] - out[-2][1])
                                     - (out[-1][1] - out[-2][1]) * (q[0] - out[-2][0])) <= 0:
                out.pop()
            out.append(q)
        return out
    lower, upper = half(pts), half(pts[::-1])
    return np.array(lower[:-1] + upper[:-1])


def _distance_to_convex(p: np.ndarray, hull: np.ndarray) -> np.ndarray:
    """Distance from each point to a counter-clockwise convex polygon (0 inside)."""
    a, b = hull, np.roll(hull, -1, axis=0)
    e = b - a                                                   # (k, 2)
    rel = p[:, None, :] - a[None, :, :]                         # (n, k, 2)
    cross = e[None, :, 0] * rel[..., 1] - e[None, :, 1] * rel[..., 0]
    inside = np.all(cross >= 0.0, axis=1)
    t = np.clip(np.sum(rel * e[None], axis=2) / np.maximum(np.sum(e * e, axis=1), 1e-30)[None], 0.0, 1.0)
    d = np.linalg.norm(rel - t[..., None] * e[None], axis=2).min(axis=1)
    return np.where(inside, 0.0, d)


class ShadowMaps:
    """One sun shadow map cached by signature; ``bind`` sets the lit programs' shadow uniforms."""

    def __init__(self, ctx: moderngl.Context, shadow_program: Callable[[], object], size: int,
                 draw_parts: Callable | None = None):
        self.ctx, self._program, self.size = ctx, shadow_program, size
        self._draw_parts = draw_parts  # (draw, prog, key, light_vp) -> None, for alpha-tested meshes
        self._layer: _Layer | None = None
        self._signature: tuple | None = None
        self._drawn: frozenset = frozenset()  # positions (in the draws list) of the casters in the map
        self._active = False
        self.static_renders = 0  # counter for tests and benchmarks

    def update(self, sun: Sun, draws: list["Draw"], view_proj: np.ndarray | None = None) -> None:
        """Make the map right for ``draws`` under ``sun``; with the camera's ``view_proj`` only
        the casters that can shadow something in its frustum are drawn (same image)."""
        to_sun = sun.direction_to_sun()
        self._active = bool(draws) and to_sun[2] > 0.0  # something casts, sun above the horizon
        if not self._active:
            return
        centers = np.array([d.center for d in draws])
        radii = np.array([d.radius for d in draws])
        fit = F.light_view_proj(to_sun, centers, radii)   # fitted to every caster, drawn or not
        signature = (sun, fit[0].tobytes(), tuple((d.index, d.caster.vbo.glo, d.placed.model_bytes) for d in draws))
        needed = frozenset(range(len(draws)))
        if view_proj is not None:
            keep = casters_in_view(fit[0], view_proj, centers, radii, self.size)
            needed = frozenset(np.flatnonzero(keep).tolist())
        # A map holding more casters than this view needs gives the same image (the extra ones
        # write no texel the view reads): reuse it, so a static scene seen from cameras that need
        # different casters is not redrawn per camera; a redraw keeps what the map held.
        if signature == self._signature:
            if needed <= self._drawn:
                return
            needed = needed | self._drawn
        if self._layer is None:
            self._layer = _Layer(self.ctx, self.size)
        self._layer.draw(self._program(), [draws[i] for i in sorted(needed)], fit, self._draw_parts)
        self._signature, self._drawn = signature, needed
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
