"""The sun's shadow map for the GL backend, in two cascades (:class:`ShadowMaps`), cached per scene.

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

from dataclasses import dataclass
from typing import Callable

import moderngl
import numpy as np

from sceneforge.engine.server.gl import frame as F
from sceneforge.engine.server.gl.frame import Draw
from sceneforge.engine.world import Sun

NO_FADE = (1.0e30, 2.0e30)
NO_SPLIT = 1.0e30  # no far cascade: every fragment reads the near one

SHADOW_DISTANCE_CM = 6000.0  # camera distance beyond which nothing is shadowed (as UE's dynamic
# shadow distance); shadows fade out over the last FADE of it
FADE = 0.2
MIN_TEXEL_CM = 5.0  # a small scene's map covers at least size × this: texels no finer
BLOCK_TEXELS = 16  # the filled region is snapped outwards to blocks of this many texels
CASCADE_SPLIT_CM = 1500.0  # camera distance from which fragments read the far cascade
FAR_TEXELS = 2  # the far cascade's texels are this many of the near one's across
ATLAS_GAP = 16  # never-drawn texels (depth 1: lit) between the cascades in the atlas


class _Atlas:
    """One depth texture from the sun holding both cascades side by side: the near one's grid
    (``size`` texels across the fit) at column 0, the far one's (``size // FAR_TEXELS``) at
    column ``far_x``. One texture, so a fragment picks its cascade by a coordinate, not by a
    second sampler (llvmpipe would pay for both lookups of a branch)."""

    def __init__(self, ctx: moderngl.Context, size: int):
        self.ctx, self.size = ctx, size
        self.far_size = size // FAR_TEXELS
        self.far_x = size + ATLAS_GAP
        self.width = self.far_x + self.far_size
        self.tex = ctx.depth_texture((self.width, size))
        self.tex.compare_func = "<="
        self.tex.filter = (moderngl.LINEAR, moderngl.LINEAR)
        self.fbo = ctx.framebuffer(depth_attachment=self.tex)
        self.fbo.use()
        self.fbo.clear(depth=1.0)  # the gap and never-filled texels read as lit

    def grid(self, cascade: int) -> tuple[int, int]:
        """(first column in the atlas, texels across the fit) of a cascade."""
        return (0, self.size) if cascade == 0 else (self.far_x, self.far_size)

    def uv(self, cascade: int) -> tuple[float, float, float, float]:
        """Map coordinates in [0, 1]² → atlas coordinates: (scale x, scale y, offset x, offset y)."""
        x0, n = self.grid(cascade)
        return (n / self.width, n / self.size, x0 / self.width, 0.0)

    def draw(
        self,
        prog,
        casters: list[tuple["Draw", object]],
        light_vp: np.ndarray,
        cascade: int,
        rect: tuple[int, int, int, int],
        draw_parts=None,
    ) -> None:
        """Draw ``casters`` = (draw, mesh) with the light projection ``light_vp`` into the texels
        ``rect`` = (x, y, w, h) of ``cascade``'s grid only (scissor)."""
        x0, n = self.grid(cascade)
        box = (x0 + rect[0], rect[1], rect[2], rect[3])
        self.fbo.viewport = (x0, 0, n, n)
        self.fbo.scissor = box
        self.fbo.use()
        self.fbo.clear(depth=1.0, viewport=box)
        self.ctx.enable(moderngl.DEPTH_TEST)
        prog.set("u_light_vp", F.gl_bytes(light_vp))
        for d, mesh in casters:
            prog.set("u_model", d.placed.model_bytes)
            if draw_parts is not None and mesh.alpha_tested:  # cut-out foliage casts cut-out shadows
                draw_parts(mesh, d, prog, "shadow", light_vp)
            elif mesh.upright_casters is None or not upright(d.placed.model):
                mesh.vao(self.ctx, prog.prog, "shadow", False).render()
            elif mesh.upright_casters:  # upright: without its flat bottom faces (gl/casters.py
                mesh.vao(self.ctx, prog.prog, "shadow", False, upright_casters=True).render()  # casting_faces)
        self.fbo.scissor = None

    def release(self) -> None:
        self.fbo.release()
        self.tex.release()


@dataclass
class _Cascade:
    """What one cascade's texels hold: drawn with ``signature`` (sun, casters, their levels), the
    casters at ``drawn`` (positions in the draws list) into the texels ``rect`` of its grid."""

    index: int
    signature: tuple | None = None
    drawn: frozenset = frozenset()
    rect: tuple[int, int, int, int] = (0, 0, 0, 0)

    def forget(self) -> None:
        self.signature, self.drawn, self.rect = None, frozenset(), (0, 0, 0, 0)


# Texels around a fragment's light-space position that its shadow lookup can read: the normal
# offset (1.5), the PCF taps (0.75) and their bilinear footprint (1), doubled for safety.
READ_MARGIN_TEXELS = 8.0


def upright(model: np.ndarray) -> bool:
    """Does a local → world matrix keep z up, unscaled or shrunk along it (no tilt)? Then a mesh's
    flat bottom faces stay within ``FLAT_CASTER_CM`` of the ground (``casting_faces``)."""
    return bool(
        model[2, 0] == 0.0 and model[2, 1] == 0.0 and model[0, 2] == 0.0 and model[1, 2] == 0.0 and 0.0 < model[2, 2] <= 1.0
    )


def casters_in_view(light_vp: np.ndarray, receivers: np.ndarray, centers: np.ndarray, radii: np.ndarray, size: int) -> np.ndarray:
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
        hull = np.vstack([hull, hull[:1] + 1e-9, hull[:1] - 1e-9])[: max(3, len(hull))]
    scale = float(np.linalg.norm(light_vp[0, :3]))  # clip units per cm (orthographic, uniform in x/y)
    pts = centers @ light_vp[:2, :3].T + light_vp[:2, 3]
    reach = radii * scale + READ_MARGIN_TEXELS * 2.0 / size
    return _distance_to_convex(pts, hull) <= reach


def read_region(light_vp: np.ndarray, receivers: np.ndarray, size: int, block: int = BLOCK_TEXELS) -> tuple[int, int, int, int]:
    """The texels (x, y, w, h) that fragments of ``receivers``' hull can read (their light-space
    bounding box + ``READ_MARGIN_TEXELS``), snapped outwards to ``block`` texels and clipped to the map."""
    if len(receivers) == 0:
        return (0, 0, 0, 0)
    xy = (receivers @ light_vp[:2, :3].T + light_vp[:2, 3]) * 0.5 + 0.5
    lo = np.floor((xy.min(axis=0) * size - READ_MARGIN_TEXELS) / block) * block
    hi = np.ceil((xy.max(axis=0) * size + READ_MARGIN_TEXELS) / block) * block
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
    return (
        outer[0] <= inner[0]
        and outer[1] <= inner[1]
        and inner[0] + inner[2] <= outer[0] + outer[2]
        and inner[1] + inner[3] <= outer[1] + outer[3]
    )


def _convex_hull(p: np.ndarray) -> np.ndarray:
    """Counter-clockwise hull of 2-D points (monotone chain)."""
    pts = sorted(set(map(tuple, np.round(p, 12))))
    if len(pts) < 3:
        return np.array(pts)

    def half(points):
        out: list = []
        for q in points:
            while (
                len(out) >= 2
                and ((out[-1][0] - out[-2][0]) * (q[1] - out[-2][1]) - (out[-1][1] - out[-2][1]) * (q[0] - out[-2][0])) <= 0
            ):
                out.pop()
            out.append(q)
        return out

    lower, upper = half(pts), half(pts[::-1])
    return np.array(lower[:-1] + upper[:-1])


def _distance_to_convex(p: np.ndarray, hull: np.ndarray) -> np.ndarray:
    """Distance from each point to a counter-clockwise convex polygon (0 inside)."""
    a, b = hull, np.roll(hull, -1, axis=0)
    e = b - a  # (k, 2)
    rel = p[:, None, :] - a[None, :, :]  # (n, k, 2)
    cross = e[None, :, 0] * rel[..., 1] - e[None, :, 1] * rel[..., 0]
    inside = np.all(cross >= 0.0, axis=1)
    t = np.clip(np.sum(rel * e[None], axis=2) / np.maximum(np.sum(e * e, axis=1), 1e-30)[None], 0.0, 1.0)
    d = np.linalg.norm(rel - t[..., None] * e[None], axis=2).min(axis=1)
    return np.where(inside, 0.0, d)


class ShadowMaps:
    """The sun's cascaded shadow map, cached by signature; ``bind`` sets the lit programs' shadow
    uniforms.

    **Two cascades** (as UE's cascaded shadow maps): fragments nearer the camera than ``split``
    read the near cascade, a grid of ``size`` texels across the fit; the others, up to the shadow
    distance, read the far one: the same fit and projection at ``FAR_TEXELS`` times coarser texels
    (12.4 and 24.8 cm in the city). Both grids are functions of the scene only, so the map stays
    a pure function of the scene and the camera. Why: every sample has its own sun, so the map is
    drawn for almost every image, and its raster is fill on the server's critical path. A city
    view's far region, at a quarter of the texels, and its near one fill ~0.4 of what one grid
    did, and the server's replay of 160 city ego samples ran 1.6-1.9 ms per image faster
    (docs/renderer.md). What it costs: beyond 15 m a shadow's edge is filtered over 24.8 instead
    of 12.4 cm (a pixel of a 224-pixel 53° view is 6.7 cm there, 27 cm at 60 m); the lit images
    of a 64-sample dataset moved by at most 0.6/255 on average, labels not at all; every lit
    render pays ~0.5 ms for the cascade choice in its shader."""

    def __init__(
        self,
        ctx: moderngl.Context,
        shadow_program: Callable[[], object],
        size: int,
        draw_parts: Callable | None = None,
        distance: float = SHADOW_DISTANCE_CM,
        split: float = CASCADE_SPLIT_CM,
    ):
        self.ctx, self._program, self.size = ctx, shadow_program, size
        self.distance, self.split = float(distance), float(split)
        self.block = BLOCK_TEXELS
        self._draw_parts = draw_parts  # (mesh, draw, prog, key, light_vp) -> None, for alpha-tested meshes
        self._atlas: _Atlas | None = None
        self.cascades = (_Cascade(0), _Cascade(1))
        self._fade, self._split = NO_FADE, NO_SPLIT
        self._fit_key: tuple | None = None
        self._fit: tuple = ()
        self._uniforms: dict = {}  # the lit programs' shadow uniforms of this fit (set by bind)
        self._active = False
        self.static_renders = 0  # maps (one or both cascades) drawn, for tests and benchmarks

    def forget(self) -> None:
        """Draw the next map afresh (tests: else a map holding more is reused)."""
        for c in self.cascades:
            c.forget()

    def update(
        self,
        sun: Sun,
        draws: list["Draw"],
        receivers: tuple[np.ndarray, np.ndarray] | None = None,
        level_mesh: Callable | None = None,
    ) -> None:
        """Make the map right for ``draws`` under ``sun``.

        ``receivers``: (near, far) world points whose hulls hold every fragment that reads each
        cascade (``frame.receiver_points`` of the view up to ``split``, and from where a
        fragment can be ``split`` away to the shadow distance); only the casters that can shadow
        them are drawn, into only the texels they can read (same image). None: the near cascade
        only, every caster, the whole grid, no shadow distance. ``level_mesh(draws, centers,
        radii, texel_cm)``: the meshes the casters are drawn with (levels of detail: gl/lod.py
        ``caster_levels``); None draws every caster at full detail."""
        to_sun = sun.direction_to_sun()
        self._active = bool(draws) and to_sun[2] > 0.0  # something casts, sun above the horizon
        if not self._active:
            return
        key = (sun, tuple((d.index, d.caster.content_key, d.placed.model_bytes) for d in draws))
        if self._atlas is None:
            self._atlas = _Atlas(self.ctx, self.size)
        if key != self._fit_key:  # the scene's part, computed once per sun and casters
            centers = np.array([d.center for d in draws])
            radii = np.array([d.radius for d in draws])
            # fitted to every caster, drawn or not: the texel grids are a function of the scene only
            fit = F.light_view_proj(to_sun, centers, radii, min_extent=self.size * MIN_TEXEL_CM)
            self._fit_key, self._fit = key, (centers, radii, fit)
            self._uniforms = self._fit_uniforms(fit)
        if receivers is None:
            plan: list[tuple[int, np.ndarray | None]] = [(0, None)]
            self._fade, self._split = NO_FADE, NO_SPLIT
        else:
            plan = [(0, receivers[0]), (1, receivers[1])]
            self._fade, self._split = ((1.0 - FADE) * self.distance, self.distance), self.split
        drawn = [self._update_cascade(self.cascades[cascade], key, draws, points, level_mesh) for cascade, points in plan]
        self.static_renders += any(drawn)

    def _update_cascade(
        self, cas: _Cascade, key: tuple, draws: list["Draw"], points: np.ndarray | None, level_mesh: Callable | None
    ) -> bool:
        """Redraw one cascade if this view needs texels or casters it does not hold: drawn?"""
        centers, radii, fit = self._fit
        grid = self._atlas.grid(cas.index)[1]
        if points is not None and len(points) == 0:
            return False  # no fragment of this view reads this cascade
        meshes = [d.caster for d in draws] if level_mesh is None else level_mesh(draws, centers, radii, fit[1] / grid)
        signature = (key, tuple(m.content_key for m in meshes))
        if points is None:
            needed, rect = frozenset(range(len(draws))), (0, 0, grid, grid)
        else:
            keep = casters_in_view(fit[0], points, centers, radii, grid)
            needed = frozenset(np.flatnonzero(keep).tolist())
            rect = read_region(fit[0], points, grid, self.block)
        # A cascade holding more casters over more texels than this view needs gives the same
        # image (the extra ones write no texel the view reads): reuse it, so a static scene seen
        # from cameras that need different casters is not redrawn per camera; a redraw keeps
        # what the cascade held.
        if signature == cas.signature:
            if needed <= cas.drawn and _contains(cas.rect, rect):
                return False
            needed, rect = needed | cas.drawn, _union(rect, cas.rect)
        self._atlas.draw(
            self._program(), [(draws[i], meshes[i]) for i in sorted(needed)], fit[0], cas.index, rect, self._draw_parts
        )
        cas.signature, cas.drawn, cas.rect = signature, needed, rect
        return True

    def flags(self) -> str:
        """Program variant flags: ``s`` when the shadow map is in use."""
        return "s" if self._active else ""

    def _fit_uniforms(self, fit: tuple[np.ndarray, float, float]) -> dict:
        """The shadow uniforms of a fit: projection, each cascade's texel size (cm) and depth bias
        (2 texels' worth, in map units) and place in the atlas."""
        light_vp, extent, depth_range = fit
        texel = tuple(extent / self._atlas.grid(c)[1] for c in (0, 1))
        return {
            "u_light_vp": F.gl_bytes(light_vp),
            "u_shadow_texel": texel,
            "u_shadow_bias": tuple(2.0 * t / depth_range for t in texel),
            "u_shadow_uv_near": self._atlas.uv(0),
            "u_shadow_uv_far": self._atlas.uv(1),
        }

    def bind(self, prog) -> None:
        """Set shadow uniforms; the map is bound to texture unit 0."""
        use = self._active and bool(self._uniforms)
        if use:
            for name, value in self._uniforms.items():
                prog.set(name, value)
            self._atlas.tex.use(0)
        prog.set("u_shadow_split", self._split if use else NO_SPLIT)
        prog.set("u_shadow_map", 0)
        prog.set("u_shadow_fade", self._fade if use else NO_FADE)

    def release(self) -> None:
        if self._atlas is not None:
            self._atlas.release()
