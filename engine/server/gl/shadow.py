"""Sun shadow map for the GL backend, cached per scene.

Drawing a 2048² shadow map costs about as much as a whole 224² frame on llvmpipe, so it is redrawn
only when its inputs change: the sun and every caster's mesh and transform (its *signature*). A
static scene seen from many cameras draws it once; a frame in which anything moved redraws it.

The map is a pure function of the scene: an image never depends on what the server rendered
before (an earlier design kept "casters unchanged since the previous frame" in a cached layer
and drew movers into a second, coarser map, which made pixels depend on render history and
broke byte-identical datasets across workers; see docs/renderer.md).

**Shadow distance** (as UE's dynamic shadow distance): fragments farther than
``SHADOW_DISTANCE_CM`` from the camera are not shadowed (shadows fade out over its last
``FADE``), so the map is read only by fragments in the camera's frustum up to that distance and
between the lowest and highest point of the scene (ground relief, actors' bounding spheres):
``frame.receiver_points``. The texel grid stays a function of the scene (fitted to every caster,
texels no finer than ``MIN_TEXEL_CM``); per frame only the texels those fragments can read are
filled (a scissor rectangle snapped to ``BLOCK_TEXELS``, :func:`read_region`), and **only casters
that can darken them are drawn** (:func:`casters_in_view`): a caster whose bounding sphere, seen
from the sun (an orthographic disc), stays farther than the normal offset and PCF footprint from
the receivers' light-space outline writes no texel the frame reads, so leaving it out gives the
same image, byte for byte (``tests/engine/test_shadow_culling.py``). Casters are drawn at a level
of detail (gl/lod.py ``shadow_level``). Every image of a dataset has its own sun (per-sample
looks), so this map is redrawn for almost every sample: in a forest most trees stand behind,
beside or far in front of the camera. For the same reason a map that already holds *more* casters
over *more* texels than a view needs (same sun, same casters and levels) is reused as it is, and a
redraw keeps the casters and texels the map held: a static scene seen from cameras that need
different casters is not redrawn per camera (images identical to a fresh renderer's,
``tests/engine/test_gl_lod.py``).
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
NO_FADE = (1.0e30, 2.0e30)

SHADOW_DISTANCE_CM = 6000.0  # camera distance beyond which nothing is shadowed (as UE's dynamic
                             # shadow distance); shadows fade out over the last FADE of it
FADE = 0.2
MIN_TEXEL_CM = 5.0           # a small scene's map covers at least size × this: texels no finer
BLOCK_TEXELS = 64            # the filled region is snapped outwards to blocks of this many texels


class _Layer:
    """One depth texture from the sun, fitted to a set of casters' bounding spheres."""

    def __init__(self, ctx: moderngl.Context, size: int):
        self.ctx, self.size = ctx, size
        self.tex = ctx.depth_texture((size, size))
        self.tex.compare_func = "<="
        self.tex.filter = (moderngl.LINEAR, moderngl.LINEAR)
        self.fbo = ctx.framebuffer(depth_attachment=self.tex)
        self.state = OFF

    def draw(self, prog, casters: list[tuple["Draw", object]], fit: tuple[np.ndarray, float, float],
             rect: tuple[int, int, int, int], draw_parts=None) -> None:
        """Draw ``casters`` = (draw, mesh) with the light projection ``fit`` = (light_vp, extent,
        depth range) into the texels of ``rect`` = (x, y, w, h) only (scissor)."""
        light_vp, extent, depth_range = fit
        self.fbo.scissor = rect
        self.fbo.use()
        self.fbo.clear(depth=1.0, viewport=rect)
        self.ctx.enable(moderngl.DEPTH_TEST)
        prog.set("u_light_vp", F.gl_bytes(light_vp))
        for d, mesh in casters:
            prog.set("u_model", d.placed.model_bytes)
            if draw_parts is not None and mesh.alpha_tested:  # cut-out foliage casts cut-out shadows
                draw_parts(mesh, d, prog, "shadow", light_vp)
            elif mesh.upright_casters is None or not upright(d.placed.model):
                mesh.vao(self.ctx, prog.prog, "shadow", False).render()
            elif mesh.upright_casters:   # upright: without its flat bottom faces (gl/casters.py
                mesh.vao(self.ctx, prog.prog, "shadow", False, upright_casters=True).render()   # casting_faces)
        self.fbo.scissor = None
        texel = extent / self.size
        self.state = (1, F.gl_bytes(light_vp), texel, 2.0 * texel / depth_range)

    def release(self) -> None:
        self.fbo.release()
        self.tex.release()


# Texels around a fragment's light-space position that its shadow lookup can read: the normal
# offset (1.5), the PCF taps (0.75) and their bilinear footprint (1), doubled for safety.
READ_MARGIN_TEXELS = 8.0


def upright(model: np.ndarray) -> bool:
    """Does a local → world matrix keep z up, unscaled or shrunk along it (no tilt)? Then a mesh's
    flat bottom faces stay within ``FLAT_CASTER_CM`` of the ground (``casting_faces``)."""
    return bool(model[2, 0] == 0.0 and model[2, 1] == 0.0 and model[0, 2] == 0.0 and model[1, 2] == 0.0
                and 0.0 < model[2, 2] <= 1.0)


def casters_in_view(light_vp: np.ndarray, receivers: np.ndarray, centers: np.ndarray, radii: np.ndarray,
                    size: int) -> np.ndarray:
    """Boolean per caster: can its shadow reach a fragment that reads the map?

    ``receivers``: world points whose convex hull holds every fragment that reads the map (the
    camera's frustum up to the shadow distance, clipped to the scene's heights:
    ``frame.receiver_points``). In the light's (orthographic) clip space a sphere is a disc of
    radius r·s (s = the matrix's scale). A caster is kept when its disc comes within
    ``READ_MARGIN_TEXELS`` of the receivers' light-space hull. Conservative: everything dropped
    writes no texel a visible fragment reads.
    """
    if len(centers) == 0 or len(receivers) == 0:
        return np.zeros(len(centers), dtype=bool)
    hull = _convex_hull(receivers @ light_vp[:2, :3].T + light_vp[:2, 3])
    if len(hull) < 3:  # degenerate (a point or a segment): keep whatever is near it
        hull = np.vstack([hull, hull[:1] + 1e-9, hull[:1] - 1e-9])[:max(3, len(hull))]
    scale = float(np.linalg.norm(light_vp[0, :3]))   # clip units per cm (orthographic, uniform in x/y)
    pts = centers @ light_vp[:2, :3].T + light_vp[:2, 3]
    reach = radii * scale + READ_MARGIN_TEXELS * 2.0 / size
    return _distance_to_convex(pts, hull) <= reach


def read_region(light_vp: np.ndarray, receivers: np.ndarray, size: int) -> tuple[int, int, int, int]:
    """The texels (x, y, w, h) that fragments of ``receivers``' hull can read (their light-space
    bounding box + ``READ_MARGIN_TEXELS``), snapped outwards to ``BLOCK_TEXELS`` and clipped to the map."""
    if len(receivers) == 0:
        return (0, 0, 0, 0)
    xy = (receivers @ light_vp[:2, :3].T + light_vp[:2, 3]) * 0.5 + 0.5
    lo = np.floor((xy.min(axis=0) * size - READ_MARGIN_TEXELS) / BLOCK_TEXELS) * BLOCK_TEXELS
    hi = np.ceil((xy.max(axis=0) * size + READ_MARGIN_TEXELS) / BLOCK_TEXELS) * BLOCK_TEXELS
    lo, hi = np.clip(lo, 0, size).astype(int), np.clip(hi, 0, size).astype(int)
    if np.any(hi <= lo):
        return (0, 0, 0, 0)
    return (int(lo[0]), int(lo[1]), int(hi[0] - lo[0]), int(hi[1] - lo[1]))


def _union(a: tuple[int, int, int, int], b: tuple[int, int, int, int]) -> tuple[int, int, int, int]:
    if a[2] == 0 or a[3] == 0:
        return b
    if b[2] == 0 or b[3] == 0:
        return a
    x0, y0 = min(a[0], b[0]), min(a[1], b[1])
    x1, y1 = max(a[0] + a[2], b[0] + b[2]), max(a[1] + a[3], b[1] + b[3])
    return (x0, y0, x1 - x0, y1 - y0)


def _contains(outer: tuple[int, int, int, int], inner: tuple[int, int, int, int]) -> bool:
    if inner[2] == 0 or inner[3] == 0:
        return True
    return (outer[0] <= inner[0] and outer[1] <= inner[1] and inner[0] + inner[2] <= outer[0] + outer[2]
            and inner[1] + inner[3] <= outer[1] + outer[3])


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
                 draw_parts: Callable | None = None, distance: float = SHADOW_DISTANCE_CM):
        self.ctx, self._program, self.size = ctx, shadow_program, size
        self.distance = float(distance)
        self._draw_parts = draw_parts  # (mesh, draw, prog, key, light_vp) -> None, for alpha-tested meshes
        self._layer: _Layer | None = None
        self._signature: tuple | None = None
        self._drawn: frozenset = frozenset()  # positions (in the draws list) of the casters in the map
        self._rect = (0, 0, 0, 0)             # texels filled (x, y, w, h)
        self._fade = NO_FADE
        self._fit_key: tuple | None = None
        self._fit: tuple = ()
        self._active = False
        self.static_renders = 0  # counter for tests and benchmarks

    def update(self, sun: Sun, draws: list["Draw"], receivers: np.ndarray | None = None,
               level_mesh: Callable | None = None) -> None:
        """Make the map right for ``draws`` under ``sun``.

        ``receivers``: world points whose hull holds every fragment that reads the map
        (``frame.receiver_points``: the view up to the shadow distance); only the casters that
        can shadow them are drawn, into only the texels they can read (same image). None: every
        caster, the whole map, no shadow distance. ``level_mesh(draws, centers, radii, texel_cm)``: the meshes the
        casters are drawn with (levels of detail: gl/lod.py ``caster_levels``); None draws every
        caster at full detail."""
        to_sun = sun.direction_to_sun()
        self._active = bool(draws) and to_sun[2] > 0.0  # something casts, sun above the horizon
        if not self._active:
            return
        key = (sun, tuple((d.index, d.caster.vbo.glo, d.placed.model_bytes) for d in draws))
        if key != self._fit_key:  # the scene's part, computed once per sun and casters
            centers = np.array([d.center for d in draws])
            radii = np.array([d.radius for d in draws])
            # fitted to every caster, drawn or not: the texel grid is a function of the scene only
            fit = F.light_view_proj(to_sun, centers, radii, min_extent=self.size * MIN_TEXEL_CM)
            self._fit_key, self._fit = key, (centers, radii, fit)
        centers, radii, fit = self._fit
        texel = fit[1] / self.size
        meshes = [d.caster for d in draws] if level_mesh is None else level_mesh(draws, centers, radii, texel)
        signature = (key, tuple(m.vbo.glo for m in meshes))
        if receivers is None:
            needed, rect = frozenset(range(len(draws))), (0, 0, self.size, self.size)
            self._fade = NO_FADE
        else:
            keep = casters_in_view(fit[0], receivers, centers, radii, self.size)
            needed = frozenset(np.flatnonzero(keep).tolist())
            rect = read_region(fit[0], receivers, self.size)
            self._fade = ((1.0 - FADE) * self.distance, self.distance)
        # A map holding more casters over more texels than this view needs gives the same image
        # (the extra ones write no texel the view reads): reuse it, so a static scene seen from
        # cameras that need different casters is not redrawn per camera; a redraw keeps what the
        # map held.
        if signature == self._signature:
            if needed <= self._drawn and _contains(self._rect, rect):
                return
            needed, rect = needed | self._drawn, _union(rect, self._rect)
        if self._layer is None:
            self._layer = _Layer(self.ctx, self.size)
        self._layer.draw(self._program(), [(draws[i], meshes[i]) for i in sorted(needed)], fit, rect,
                         self._draw_parts)
        self._signature, self._drawn, self._rect = signature, needed, rect
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
        prog.set("u_shadow_fade", self._fade if use else NO_FADE)
        if use:
            self._layer.tex.use(0)

    def release(self) -> None:
        if self._layer is not None:
            self._layer.release()
