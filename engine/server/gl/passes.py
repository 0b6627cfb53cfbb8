"""GL draw passes for :class:`engine.server.gl.backend.GLBackend`.

Owns the GL objects (programs, uploaded meshes, ground, targets, shadow map) and issues the draw
calls; per-frame maths lives in :mod:`engine.server.gl.frame`, reading images back in
``targets.Targets`` (``read_color``, ``read_ids``...). Per frame only uniforms change:
no buffer or texture is allocated once assets and the resolution have been seen. The id and
pixel-count passes are in :mod:`engine.server.gl.count_passes`.
"""

from __future__ import annotations

import logging
import math
import moderngl
import numpy as np

from sceneforge.engine.server.gl import frame as F
from sceneforge.engine.server.gl import lod as L
from sceneforge.engine.server.gl import cutout_shaders as C
from sceneforge.engine.server.gl import pbr_shaders as P
from sceneforge.engine.server.gl import post_shaders as Q
from sceneforge.engine.server.gl import shaders as S
from sceneforge.engine.server.gl.ground import ground_grid
from sceneforge.engine.server.gl.count_passes import CountPasses
from sceneforge.engine.server.gl.frame import Draw, Frame
from sceneforge.engine.server.gl.ground_gpu import GpuGround, upload_ground
from sceneforge.engine.server.gl.meshes import MeshCache
from sceneforge.engine.server.gl.pbr import PbrLook
from sceneforge.engine.server.gl.program import Program
from sceneforge.engine.server.gl.resources import PBR_FORMAT, POS_UV_FORMAT, GpuMesh, Part, noise_image
from sceneforge.engine.server.gl.targets import Targets
from sceneforge.engine.server.gl.shadow import ShadowMaps
from sceneforge.engine.server.gl.skin_flow import SkinFlow
from sceneforge.engine.server.gl.skinning import SkinnedMeshes
from sceneforge.engine.server.gl.surfaces import TextureCache
from sceneforge.engine.world import Camera, Ground, Scene

log = logging.getLogger(__name__)

IDENTITY = F.gl_bytes(np.eye(4))
IDENTITY3 = F.gl_bytes(np.eye(3))
MAX_TARGETS = 8  # resolutions kept alive at once
KEEP_TARGET_PIXELS = 2048 * 2048  # render targets of larger sizes are released after their frame
# Ground.texture → (fine, coarse) noise cell size in cm; "flat"/"none" disables the noise.
NOISE_SCALES = {
    "grass": (35.0, 400.0),
    "sand": (60.0, 900.0),
    "asphalt": (12.0, 300.0),
    "snow": (80.0, 1200.0),
    "noise": (40.0, 500.0),
}


def _rgb(c) -> tuple[float, float, float]:
    return tuple(float(x) / 255.0 for x in c)  # type: ignore[return-value]


def _ambient(sky_rgb, ambient: float) -> tuple[float, float, float]:
    """Sky light: mostly white, slightly tinted by the sky colour (normalised to its max)."""
    c = np.asarray(_rgb(sky_rgb))
    c = c / max(float(c.max()), 1e-3)
    return tuple(float(x) for x in ambient * (0.6 + 0.4 * c))  # type: ignore[return-value]


def cascade_receivers(
    frame: "Frame", z_range: tuple[float, float], split: float, distance: float
) -> tuple[np.ndarray, np.ndarray]:
    """World points whose hulls hold the fragments that read the near and the far cascade
    (gl/shadow.py): a fragment reads the near one when it is less than ``split`` from the eye, so
    at planar depth <= ``split``; the far one from ``split`` to ``distance`` away, so at planar
    depth >= ``split`` x the cosine of the view's widest ray (its corner) and <= ``distance``."""
    cam = frame.camera
    corner = math.sqrt(1.0 + ((cam.width / 2.0) ** 2 + (cam.height / 2.0) ** 2) / cam.focal_px**2)
    return (
        F.receiver_points(frame.view_proj, frame.near, frame.far, min(split, distance), z_range),
        F.receiver_points(frame.view_proj, frame.near, frame.far, distance, z_range, min_depth=split / corner - 1.0),
    )  # 1 cm: far from rounding


class Passes(CountPasses):
    """The GL objects of one context and the passes drawn with them (lit, ids, coverage)."""

    def __init__(self, ctx: moderngl.Context, shadow_map_size: int):
        self.ctx = ctx
        self.progs: dict[str, Program] = {}
        self.mesh_cache = MeshCache(ctx, lambda: self.textures)
        self.skinning = SkinnedMeshes(ctx)  # characters posed on the GPU (gl/skinning.py)
        self.skin_flow = SkinFlow(ctx)  # their previous pose per pixel, for optical flow (gl/skin_flow.py)
        self.targets: dict[tuple[int, int], Targets] = {}
        self._ground_key: Ground | None = None
        self._ground: GpuGround | None = None
        self.shadows = ShadowMaps(
            ctx,
            lambda: self.program("shadow"),
            shadow_map_size,
            draw_parts=lambda mesh, d, prog, key, light_vp: self.draw_mesh(
                mesh,
                prog,
                key,
                False,
                "ashadow",
                alpha_setup=lambda ap: (ap.set("u_light_vp", F.gl_bytes(light_vp)), ap.set("u_model", d.placed.model_bytes)),
            ),
        )
        self._noise: moderngl.Texture | None = None
        self._sky_vaos: dict[Program, moderngl.VertexArray] = {}
        self.textures = TextureCache(ctx)
        self._pbr = None  # engine.server.gl.pbr.PbrLook, created on the first PBR frame

    # --- resources --------------------------------------------------------------------------
    def program(self, key: str) -> Program:
        """Programs by key, e.g. ``lit_ngs``: base name + variant flags (n: normals, g: ground,
        s: sun shadow map, a: alpha test, t/m/o: albedo/normal/ORM maps, f: fog, c: vertex colours,
        j: object-space normal map of impostor cards)."""
        if key not in self.progs:
            base = key.split("_")[0]
            vs, fs = {
                "lit": (S.LIT_VS, S.LIT_FS),
                "sky": (S.SKY_VS, S.SKY_FS),
                "ids": (S.IDS_VS, S.IDS_FS),
                "cover": (S.IDS_VS, S.COVER_FS),
                "shadow": (S.SHADOW_VS, S.SHADOW_FS),
                "aids": (C.ALPHA_VS, C.ALPHA_IDS_FS),
                "acover": (C.ALPHA_VS, C.ALPHA_COVER_FS),
                "idcov": (S.IDS_VS, S.IDS_COVER_FS),
                "aidcov": (C.ALPHA_VS, C.ALPHA_IDS_COVER_FS),
                "ashadow": (C.ALPHA_SHADOW_VS, C.ALPHA_SHADOW_FS),
                "pbr": (P.PBR_VS, P.COMMON + P.PBR_FS),
                "pbrsky": (S.SKY_VS, P.COMMON + P.SKY_FS),
                "fxaa": (Q.POST_VS, Q.FXAA_FS),
            }[base]
            flags = key.split("_")[1] if "_" in key else ""
            defines = tuple(
                d
                for f, d in (
                    ("n", "WITH_NORMAL"),
                    ("g", "GROUND"),
                    ("s", "SHADOW"),
                    ("a", "ALPHA_TEST"),
                    ("t", "ALBEDO_MAP"),
                    ("m", "NORMAL_MAP"),
                    ("o", "ORM_MAP"),
                    ("f", "FOG"),
                    ("c", "VERTEX_COLOR"),
                    ("j", "OBJECT_NORMALS"),
                )
                if f in flags
            )
            self.progs[key] = Program(self.ctx, vs, fs, defines)
        return self.progs[key]

    def draw_mesh(self, mesh: GpuMesh, prog: Program, key: str, with_attrs: bool, alpha_base: str, alpha_setup=None) -> None:
        """Draw a mesh with ``prog``; alpha-tested parts with ``alpha_base`` + the same flags
        (the cut-out must be identical in every pass). A mesh without alpha-tested parts is one
        draw call, exactly as before materials existed."""
        if not mesh.alpha_tested:
            mesh.vao(self.ctx, prog.prog, key, with_attrs).render()
            return
        flags = key.split("_")[1] if "_" in key else ""
        for first, count, part in mesh.draw_runs():  # consecutive opaque parts in one draw
            if part is not None:
                akey = f"{alpha_base}_{flags}a"
                aprog = self.program(akey)
                if alpha_setup is not None:
                    alpha_setup(aprog)
                self.bind_alpha(aprog, part)
                fmt = PBR_FORMAT if with_attrs else POS_UV_FORMAT
                mesh.vao(self.ctx, aprog.prog, akey, fmt).render(vertices=count, first=first)
            else:
                mesh.vao(self.ctx, prog.prog, key, with_attrs).render(vertices=count, first=first)

    def bind_alpha(self, prog: Program, part: Part) -> None:
        """The albedo's alpha on texture unit 2 and the cut-off, for an alpha-tested part."""
        self.textures.get(part.material, "albedo").use(2)
        prog.set("u_albedo", 2)
        prog.set("u_alpha_cutoff", float(part.material.alpha_cutoff))
        prog.set("u_base_alpha", float(part.material.base_color[3]))

    def mesh(self, asset_id: str, provider) -> GpuMesh:
        """An asset's full mesh, uploaded once (gl/meshes.py)."""
        return self.mesh_cache.mesh(asset_id, provider)

    def mesh_level(self, asset_id: str, full: GpuMesh, level: int, content) -> GpuMesh:
        """Level ``level`` of an asset, or its impostor, uploaded once (gl/meshes.py)."""
        return self.mesh_cache.mesh_level(asset_id, full, level, content)

    def ground(self, ground: Ground) -> GpuGround:
        if ground != self._ground_key:
            new = upload_ground(self.ctx, ground_grid(ground))  # before releasing the old: a failure leaves a usable cache
            if self._ground is not None:
                self._ground.release()
            self._ground, self._ground_key = new, ground
        return self._ground

    def ground_triangles(self, ground: Ground) -> int:
        """The ground's triangles at full detail (finest level, no skirts)."""
        return self.ground(ground).n_body

    def ground_draws(self, ground: Ground, camera: Camera, planes: np.ndarray, lod: bool) -> tuple:
        """What every pass of one frame draws of the ground (:meth:`GpuGround.ranges`)."""
        return self.ground(ground).ranges(camera, planes, lod)

    def render_ground(self, ground: Ground, ranges: tuple, prog: moderngl.Program, key: str, with_attrs) -> None:
        """Draw a frame's ground selection (:meth:`ground_draws`) in one call."""
        n = sum(c for _, c in ranges)
        if n:
            mesh = self.ground(ground).select(ranges)
            mesh.vao(self.ctx, prog, key, with_attrs).render(vertices=3 * n)

    def target(self, camera: Camera) -> Targets:
        key = (int(camera.width), int(camera.height))
        if key not in self.targets:
            if len(self.targets) >= MAX_TARGETS:
                self.targets.pop(next(iter(self.targets))).release()
            self.targets[key] = Targets(self.ctx, *key)
        return self.targets[key]

    def after_frame(self) -> None:
        """Return the memory of a large frame: release the targets of sizes above
        :data:`KEEP_TARGET_PIXELS` (a 4096² lit + normal frame's hold ~0.5 GB; smaller sizes stay
        cached, their reallocation would cost every frame), and trim the texture cache."""
        for key in [k for k in self.targets if k[0] * k[1] > KEEP_TARGET_PIXELS]:
            self.targets.pop(key).release()
        self.textures.trim()

    def noise_texture(self) -> moderngl.Texture:
        if self._noise is None:
            self._noise = self.ctx.texture((256, 256), 1, noise_image(256).tobytes())
            self._noise.build_mipmaps()
            self._noise.filter = (moderngl.LINEAR_MIPMAP_LINEAR, moderngl.LINEAR)
        return self._noise

    # --- shadow map -------------------------------------------------------------------------
    def update_shadow(
        self, scene: Scene, draws: list["Draw"], frame: "Frame | None" = None, content=None, lod: bool = False
    ) -> None:
        """Redraw the sun's shadow map only when the sun or the casters that can shadow the view
        of ``frame`` up to the shadow distance (every caster, no distance, when None) changed.
        ``lod``: casters at their shadow level of detail (``content.mesh_lod``), else full detail."""
        level_mesh = None
        if lod:

            def level_mesh(draws, centers, radii, texel):
                # as coarse as the map's texels allow (and, with a camera, as coarse as the caster
                # itself is drawn: a shadow is seen at about its caster's distance)
                n = [d.caster.n_triangles for d in draws]
                dist = focal = None
                if frame is not None:
                    dist = np.linalg.norm(centers - np.asarray(frame.camera.location, dtype=np.float64), axis=1)
                    focal = frame.camera.focal_px
                return [
                    self.mesh_level(d.asset_id, d.caster, int(k), content) if k else d.caster
                    for d, k in zip(draws, L.caster_levels(n, radii, texel, dist, focal))
                ]

        receivers = None
        if frame is not None:
            tops = [d.center[2] + d.radius for d in draws]
            bottoms = [d.center[2] - d.radius for d in draws]
            amp = abs(scene.ground.relief_amplitude)
            z_range = (min([-amp] + bottoms) - 1.0, max([amp] + tops) + 1.0)
            receivers = cascade_receivers(frame, z_range, self.shadows.split, self.shadows.distance)
        self.shadows.update(scene.sun, draws, receivers, level_mesh)

    # --- colour pass --------------------------------------------------------------------------
    def lit_pass(self, scene: Scene, frame: "Frame", with_normal: bool, content=None) -> None:
        if scene.look.style == "pbr":
            if self._pbr is None:
                self._pbr = PbrLook(self)
            self._pbr.lit_pass(scene, frame, with_normal, content)
            return
        self.target(frame.camera).post_valid = False
        t = self.target(frame.camera)
        fbo = t.lit_normal if with_normal else t.lit
        fbo.use()
        fbo.clear(0.0, 0.0, 0.0, 0.0, depth=1.0)
        self.ctx.enable(moderngl.DEPTH_TEST)
        flags = ("n" if with_normal else "") + self.shadows.flags()
        key = "lit_" + flags
        prog = self.program(key)
        self._set_lit_uniforms(prog, scene, frame)
        for d, vis in zip(frame.draws, frame.visible):
            if vis:
                self._set_actor(prog, d)
                self.draw_mesh(
                    d.mesh,
                    prog,
                    key,
                    True,
                    "lit",
                    alpha_setup=lambda ap, d=d: (self._set_lit_uniforms(ap, scene, frame), self._set_actor(ap, d)),
                )
        gkey = "lit_g" + flags  # after the actors: occluded ground is skipped
        gprog = self.program(gkey)
        self._set_lit_uniforms(gprog, scene, frame)
        self._draw_ground(gprog, scene.ground, gkey, True, frame.ground)
        self._draw_sky(scene, frame.camera, fbo, with_normal)

    def _set_lit_uniforms(self, prog: Program, scene: Scene, frame: "Frame") -> None:
        sun, sky = scene.sun, scene.sky
        prog.set("u_view_proj", F.gl_bytes(frame.view_proj))
        prog.set("u_cam_pos", tuple(float(x) for x in frame.camera.location))
        prog.set("u_to_sun", tuple(float(x) for x in sun.direction_to_sun()))
        amb = float(sky.ambient)
        prog.set("u_sun_color", tuple(c * float(sun.intensity) * (1.0 - amb) for c in _rgb(sun.color)))
        prog.set("u_amb_up", _ambient(sky.zenith, amb))
        prog.set("u_amb_side", _ambient(sky.horizon, amb))
        self.shadows.bind(prog)

    def _set_actor(self, prog: Program, d: "Draw") -> None:
        prog.set("u_model", d.placed.model_bytes)
        prog.set("u_normal_mat", d.placed.normal_bytes)
        prog.set("u_id", d.index + 1)
        if d.tint is None:
            prog.set("u_tint", (0.0, 0.0, 0.0, 0.0))
        else:
            k = 1.0 / d.mesh.max_luma
            prog.set("u_tint", tuple(min(c * k, 4.0) for c in _rgb(d.tint)) + (1.0,))

    def _draw_ground(self, prog: Program, ground: Ground, key: str, lit: bool, ground_draws: list) -> None:
        prog.set("u_model", IDENTITY)
        prog.set("u_id", 0)
        if lit:
            scales = NOISE_SCALES.get((ground.texture or "noise").lower())
            prog.set("u_normal_mat", IDENTITY3)
            prog.set("u_tint", (0.0, 0.0, 0.0, 0.0))
            prog.set("u_noise_scale", scales or (0.0, 0.0))
            self.noise_texture().use(1)
            prog.set("u_noise", 1)
        self.render_ground(ground, ground_draws, prog.prog, key, lit)

    def _draw_sky(self, scene: Scene, camera: Camera, fbo, with_normal: bool) -> None:
        prog = self.program("sky_n" if with_normal else "sky")
        proj = camera.projection_matrix(1.0, 2.0)
        prog.set("u_eye_to_world", F.gl_bytes(F.eye_to_world(camera)))
        prog.set("u_inv_focal", (1.0 / proj[0, 0], 1.0 / proj[1, 1]))
        prog.set("u_sky_zenith", _rgb(scene.sky.zenith))
        prog.set("u_sky_horizon", _rgb(scene.sky.horizon))
        if prog not in self._sky_vaos:
            self._sky_vaos[prog] = self.ctx.vertex_array(prog.prog, [])
        self.ctx.depth_func = "<="
        fbo.depth_mask = False  # the depth buffer keeps 1.0 (= inf) on sky pixels
        self._sky_vaos[prog].render(vertices=3)
        fbo.depth_mask = True
        self.ctx.depth_func = "<"

    # --- id pass (masks, depth, pixel counts) -----------------------------------------------
    def release(self) -> None:
        self.mesh_cache.release()
        self.skinning.release()
        self.skin_flow.release()
        if self._ground is not None:
            self._ground.release()
        for t in self.targets.values():
            t.release()
        for vao in self._sky_vaos.values():
            vao.release()
        if self._noise is not None:
            self._noise.release()
        if self._pbr is not None:
            self._pbr.release()
        self.textures.release()
        self.shadows.release()
        for p in self.progs.values():
            p.prog.release()
        self._ground, self.targets, self.progs, self._sky_vaos = None, {}, {}, {}
        self._ground_key = None
