"""Impostor levels of detail for foliage: crossed alpha-cut cards with a baked atlas.

Why: a tree's decimated levels stall far above their budget (leaf cards are thinned whole, every
small branch part keeps >= 8 faces): a poplar (6.3k) is 2.9k triangles at level 1 and 1.4k at level 2 for
budgets of 1.6k and 400. On llvmpipe a frame's cost follows its triangles, so the far trees of a
forest frame cost more than everything else. Game engines draw far trees as *impostors*: a few
textured cards showing the tree's picture. Here an impostor is just another level of the mesh
(chosen and drawn by the existing LOD mechanism, gl/lod.py), so every pass of a frame (lit, ids,
depth, coverage, shadow) draws the same alpha-cut cards and labels stay those of the drawn image.

The level (:meth:`ImpostorBaker.bake`, asked for by ``MeshCache.level_source``, gl/meshes.py): ``CARDS`` vertical
quads through the mesh's vertical axis at 180/CARDS degrees from each other, each sized to the
mesh's extent across its plane, with one RGBA albedo atlas and one normal map baked once per asset
(per process) by drawing the full-detail mesh orthographically towards each card: unlit base
colour (material factor x albedo texture, alpha-tested as the renderer cuts it) and coverage
(``SUPERSAMPLE``² samples per texel, averaged) into the albedo, and the normal each fragment is lit
with (turned to the bake's eye as the PBR shader turns it) into an *object-space* normal map
(``Material.normal_space = "object"``). The atlas's alpha is the coverage and the material's
``alpha_cutoff`` is ``ALPHA_CUTOFF``: the existing alpha-cutout path draws the cards in every
pass (lit, ids, depth, coverage, shadow). Seen from behind, a card shows the mirror image of its
picture through its plane, which for an orthographic silhouette is exact; the PBR shader mirrors
the baked normal through the card for those fragments (``OBJECT_NORMALS``), so the lit side of
the canopy stays on the sun's side. (A tangent-space map was tried first: the screen-space
cotangent frame flips with the view's handedness, and half the views were lit from below.)

Deterministic: the bake is a pure function of the uploaded full mesh (fixed resolution, fixed card
angles, llvmpipe is deterministic, the reduction is numpy in float64), so the same scene gives the
same bytes in every process. The bake draws in its own framebuffer and restores the bound one.
"""

from __future__ import annotations

import math

import moderngl
import numpy as np

from sceneforge.core.meshes import Material, RenderMesh
from sceneforge.engine.server.gl import frame as F
from sceneforge.engine.server.gl import shaders as S
from sceneforge.engine.server.gl.resources import PBR_FORMAT, VERTEX_DTYPE, GpuMesh

CARDS = 4  # vertical cards at 180/CARDS degrees
TEXELS = 128  # atlas texels over the mesh's height (level >= 1 trees are < ~90 px tall at 0.5 tri/px²)
SUPERSAMPLE = 4  # bake samples per texel side (coverage -> alpha)
GUTTER = 2  # transparent texels around each card's tile (bilinear + mipmaps do not bleed)
ALPHA_CUTOFF = 0.4  # coverage kept (the mipmapped alpha thins out with distance: a little below 0.5)

BAKE_VS = """
uniform mat4 u_mvp;
in vec3 in_pos;
in vec3 in_normal;
out vec3 v_pos;
out vec3 v_normal;
#ifdef VERTEX_COLOR
in vec3 in_color;
out vec3 v_col;
#else
in vec4 in_base;
flat out vec3 v_col;
#endif
#ifdef ALBEDO_MAP
in vec2 in_uv;
out vec2 v_uv;
#endif
void main() {
#ifdef VERTEX_COLOR
    v_col = in_color;
#else
    v_col = in_base.rgb;
#endif
#ifdef ALBEDO_MAP
    v_uv = in_uv;
#endif
    v_pos = in_pos;
    v_normal = in_normal;
    gl_Position = u_mvp * vec4(in_pos, 1.0);
}
"""

BAKE_FS = """
uniform vec4 u_base_color;
uniform sampler2D u_albedo;
uniform float u_alpha_cutoff;
uniform vec3 u_f;                  // towards the bake's eye
in vec3 v_pos;
in vec3 v_normal;
#ifdef VERTEX_COLOR
in vec3 v_col;
#else
flat in vec3 v_col;
#endif
#ifdef ALBEDO_MAP
in vec2 v_uv;
#endif
layout(location = 0) out vec4 f_color;
layout(location = 1) out vec4 f_normal;
vec3 srgb_to_linear(vec3 c) { return c * (c * (c * 0.305306011 + 0.682171111) + 0.012522878); }
void main() {
    vec4 base = u_base_color;
    base.rgb *= srgb_to_linear(v_col);     // as the PBR shader reads the vertex colour / factor
#ifdef ALBEDO_MAP
    base *= texture(u_albedo, v_uv);
#endif
#ifdef ALPHA_TEST
    if (base.a < u_alpha_cutoff) discard;
#endif
    f_color = vec4(base.rgb, 1.0);         // linear base colour, coverage 1
    // the normal the PBR shader would light this fragment with, seen from the bake's eye
    // (geometric normal turned to the eye; the smooth one where within 66 degrees of it)
    vec3 ng = normalize(cross(dFdx(v_pos), dFdy(v_pos)));
    if (dot(ng, u_f) < 0.0) ng = -ng;
    vec3 n = ng;
    float len = length(v_normal);
    if (len > 1e-6) {
        vec3 ns = v_normal / len;
        if (dot(ns, ng) < 0.0) ns = -ns;
        n = dot(ns, ng) > 0.4 ? ns : ng;
    }
    f_normal = vec4(n, 1.0);               // mesh frame ("object" normal map)
}
"""


def _read_positions(full: GpuMesh) -> tuple[np.ndarray, np.ndarray]:
    """(vertices (N, 3) float64, corner indices (3M,)) of an uploaded mesh."""
    verts = np.frombuffer(full.vbo.read(), dtype=VERTEX_DTYPE)
    idx = np.frombuffer(full.ibo.read(), dtype=np.int32)
    return verts["pos"].astype(np.float64), idx


def _linear_to_srgb8(c: np.ndarray) -> np.ndarray:
    """(The server may not import assets_manifest.materials' twin: tests/test_layering.py.)"""
    c = np.clip(c, 0.0, 1.0)
    s = np.where(c <= 0.0031308, c * 12.92, 1.055 * np.power(c, 1 / 2.4) - 0.055)
    return np.round(s * 255.0).astype(np.uint8)


class ImpostorBaker:
    """Bakes impostors with the renderer's own context, uploaded meshes and textures."""

    def __init__(self, ctx: moderngl.Context, textures):
        self.ctx, self.textures = ctx, textures
        self._progs: dict[str, moderngl.Program] = {}

    def _program(self, flags: str) -> moderngl.Program:
        if flags not in self._progs:
            defines = tuple(d for f, d in (("c", "VERTEX_COLOR"), ("t", "ALBEDO_MAP"), ("a", "ALPHA_TEST")) if f in flags)
            self._progs[flags] = self.ctx.program(
                vertex_shader=S.source(BAKE_VS, defines), fragment_shader=S.source(BAKE_FS, defines)
            )
        return self._progs[flags]

    def release(self) -> None:
        for p in self._progs.values():
            p.release()
        self._progs = {}

    def _draw(self, full: GpuMesh, mvp: np.ndarray, f: np.ndarray) -> None:
        for part in full.parts:
            m = part.material
            flags = "c" if m is None else ("t" if m.albedo is not None else "") + ("a" if part.alpha_tested else "")
            prog = self._program(flags)
            prog["u_mvp"].write(F.gl_bytes(mvp))
            prog["u_f"].value = tuple(float(x) for x in f)
            if "u_base_color" in prog:
                prog["u_base_color"].value = (1.0, 1.0, 1.0, 1.0) if m is None else tuple(float(x) for x in m.base_color)
            if "u_alpha_cutoff" in prog:
                prog["u_alpha_cutoff"].value = float(m.alpha_cutoff)
            if "t" in flags:
                self.textures.get(m, "albedo").use(2)
                prog["u_albedo"].value = 2
            vao = full.vao(self.ctx, prog, "impostor_bake_" + flags, PBR_FORMAT)
            vao.render(vertices=part.count, first=part.first)

    def bake(self, full: GpuMesh, name: str = "") -> RenderMesh:
        """The impostor of ``full`` (an uploaded full-detail mesh) as a :class:`RenderMesh`."""
        v, idx = _read_positions(full)
        used = v[np.unique(idx)] if len(idx) else v
        lo, hi = used.min(axis=0), used.max(axis=0)
        c = 0.5 * (lo + hi)
        zlo, zhi = float(lo[2]), float(hi[2])
        hz = max(0.5 * (zhi - zlo), 1e-3) * 1.02
        zc = 0.5 * (zlo + zhi)
        cards, tiles = [], []
        for i in range(CARDS):
            th = math.pi * i / CARDS
            u = np.array([math.cos(th), math.sin(th), 0.0])
            f = np.array([-math.sin(th), math.cos(th), 0.0])
            hx = max(float(np.max(np.abs((used - c) @ u))), 1e-3) * 1.02
            hf = max(float(np.max(np.abs((used - c) @ f))), 1e-3) * 1.05 + 1.0
            tw = int(min(2 * TEXELS, max(8, math.ceil(TEXELS * hx / hz))))
            mvp = np.array(
                [
                    [u[0] / hx, u[1] / hx, 0.0, -float(c @ u) / hx],
                    [0.0, 0.0, 1.0 / hz, -zc / hz],
                    [f[0] / hf, f[1] / hf, 0.0, -float(c @ f) / hf],
                    [0.0, 0.0, 0.0, 1.0],
                ]
            )
            tiles.append(self._render(full, mvp, tw, -f))
            cards.append((u, hx))
        atlas, normal_map, x0 = self._atlas(tiles)
        return self._cards(cards, x0, [t.shape[1] for t in tiles], atlas, normal_map, c, zc, hz, full, name)

    def _render(self, full: GpuMesh, mvp: np.ndarray, tw: int, f: np.ndarray) -> np.ndarray:
        """One card's tile: (TEXELS, tw, 7) float64: linear RGB, coverage, unit tangent-space
        normal; row 0 = top. Texels nothing covers take the card's mean colour and a flat normal
        (no dark fringe where the cut-out edge is filtered)."""
        size = (tw * SUPERSAMPLE, TEXELS * SUPERSAMPLE)
        ctx = self.ctx
        prev = ctx.fbo
        color = ctx.texture(size, 4, dtype="f4")
        normal = ctx.texture(size, 4, dtype="f4")
        depth = ctx.depth_renderbuffer(size)
        fbo = ctx.framebuffer([color, normal], depth)
        try:
            fbo.use()
            fbo.clear(0.0, 0.0, 0.0, 0.0, depth=1.0)
            ctx.enable(moderngl.DEPTH_TEST)
            self._draw(full, mvp, f)
            img = np.frombuffer(fbo.read(components=4, dtype="f4", attachment=0), np.float32).reshape(size[1], size[0], 4)
            nrm = np.frombuffer(fbo.read(components=4, dtype="f4", attachment=1), np.float32).reshape(size[1], size[0], 4)
        finally:
            fbo.release()  # a deleted bound framebuffer leaves GL's default bound
            if prev is not None:
                prev.use()
            else:
                ctx.fbo = None
            color.release()
            normal.release()
            depth.release()
        img = np.concatenate([img, nrm[..., :3]], axis=2)[::-1].astype(np.float64)  # GL rows are bottom-up
        s = SUPERSAMPLE
        blocks = img.reshape(TEXELS, s, tw, s, 7)
        w = blocks[..., 3:4]
        cov = w[..., 0].mean(axis=(1, 3))
        tot = np.maximum(w[..., 0].sum(axis=(1, 3)), 1e-9)[..., None]
        rgb = (blocks[..., :3] * w).sum(axis=(1, 3)) / tot
        n = (blocks[..., 4:7] * w).sum(axis=(1, 3)) / tot
        mid = blocks[:, s // 2, :, s // 2]  # one sample's normal per texel where it is covered (leaves' variety)
        n = np.where(mid[..., 3:4] > 0, mid[..., 4:7], n)
        covered = cov > 0
        rgb[~covered] = rgb[covered].mean(axis=0) if covered.any() else 0.5
        n[~covered] = (0.0, 0.0, 1.0)
        n /= np.maximum(np.linalg.norm(n, axis=2, keepdims=True), 1e-9)
        return np.concatenate([rgb, cov[..., None], n], axis=2)

    @staticmethod
    def _atlas(tiles: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray, list[int]]:
        """Tiles side by side with a transparent gutter: albedo (H, W, 4) uint8 sRGB + coverage
        and normal map (H, W, 3) uint8 (tangent space, OpenGL convention); tiles' left columns."""
        g = GUTTER
        width = sum(t.shape[1] + 2 * g for t in tiles)
        albedo = np.zeros((TEXELS + 2 * g, width, 4), np.uint8)
        normal = np.zeros((TEXELS + 2 * g, width, 3), np.uint8)
        x0, x = [], 0
        for t in tiles:
            w = t.shape[1]
            tile = np.zeros((TEXELS + 2 * g, w + 2 * g, 7), np.float64)
            tile[..., :3] = t[..., :3][t[..., 3] > 0].mean(axis=0) if (t[..., 3] > 0).any() else 0.5
            tile[..., 4:7] = (0.0, 0.0, 1.0)
            tile[g : g + TEXELS, g : g + w] = t
            albedo[:, x : x + w + 2 * g, :3] = _linear_to_srgb8(tile[..., :3])
            albedo[:, x : x + w + 2 * g, 3] = np.round(np.clip(tile[..., 3], 0, 1) * 255).astype(np.uint8)
            normal[:, x : x + w + 2 * g] = np.round(np.clip(tile[..., 4:7] * 0.5 + 0.5, 0, 1) * 255).astype(np.uint8)
            x0.append(x + g)
            x += w + 2 * g
        return albedo, normal, x0

    def _cards(self, cards, x0, widths, atlas, normal_map, c, zc, hz, full: GpuMesh, name: str) -> RenderMesh:
        H, W = atlas.shape[:2]
        verts, uvs, nrms, faces = [], [], [], []
        for (u, hx), x, tw in zip(cards, x0, widths):
            base = len(verts)
            f = np.array([-u[1], u[0], 0.0])
            for r in (0.0, 1.0):  # r: 0 = bottom, 1 = top
                for q in (0.0, 1.0):  # q: 0 = -hx, 1 = +hx along u
                    verts.append(np.array([c[0], c[1], zc]) + (2 * q - 1) * hx * u + np.array([0.0, 0.0, (2 * r - 1) * hz]))
                    uvs.append(((x + q * tw) / W, 1.0 - (GUTTER + (1.0 - r) * TEXELS) / H))
                    nrms.append(-f)  # the side the card was baked from (its eye)
            faces += [(base, base + 1, base + 3), (base, base + 3, base + 2)]
        # the roughness of the part with the most triangles (the foliage): leaves are smoother than bark
        parts = sorted((p for p in full.parts if p.material is not None), key=lambda p: -p.count)
        rough = [parts[0].material.roughness] if parts else []
        cov = atlas[..., 3] > 0
        mean = atlas[..., :3][cov].mean(axis=0) if cov.any() else np.full(3, 128.0)
        mat = Material(
            name=f"impostor:{name}",
            albedo=atlas,
            normal_map=normal_map,
            normal_space="object",
            roughness=float(np.median(rough)) if rough else 0.8,
            metallic=0.0,
            alpha_cutoff=ALPHA_CUTOFF,
            double_sided=True,
        )
        colors = np.repeat(np.round(mean).astype(np.uint8)[None], len(verts), axis=0)
        return RenderMesh(
            np.array(verts),
            np.array(faces, np.int32),
            colors,
            {"impostor": True},
            normals=np.array(nrms),
            uvs=np.array(uvs),
            materials=(mat,),
        )
