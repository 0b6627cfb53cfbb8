"""The PBR look's colour pass (``Look.style == "pbr"``, the default): see pbr_shaders.py.

Same geometry, draw order and vertex transform as the flat look (so ``instance_id`` and depth are
bit-identical between looks), different shading: GGX materials from ``RenderMesh.materials``,
sky light from an environment (HDRI by id through the asset catalogue, or the procedural
gradient), PCF sun shadows, height fog, ACES tone mapping; then FXAA into a separate texture
(``Look.fxaa``), read back as ``lit`` only.

GL resources derived from world content (environment textures, ground material) are cached by
content key (HDRI id, sky colours, surface id / procedural kind + colour), never by history.
"""

from __future__ import annotations

import logging
import math

import moderngl
import numpy as np

from sceneforge.core.meshes import Material
from sceneforge.engine.server.gl import envlight as E
from sceneforge.engine.server.gl import frame as F
from sceneforge.engine.server.gl.frame import Draw, Frame
from sceneforge.engine.server.gl.program import Program
from sceneforge.engine.server.gl.resources import PBR_FORMAT
from sceneforge.engine.limits import shown
from sceneforge.engine.server.gl.surfaces import procedural_surface
from sceneforge.engine.world import Scene

log = logging.getLogger(__name__)

EXPOSURE_BASE = 0.7  # linear scale at exposure_ev = 0
MAX_ENVS = 24  # environments kept on the GPU (~2 MB each with an HDRI background)
MAX_REMEMBERED = 256  # missing HDRI ids / looked-up surfaces remembered (then forgotten at once)
SKY_BRIGHTNESS = 1.4  # the visible sky vs its light (brighter reads washed out after ACES)
DEFAULT_ROUGHNESS = 0.65  # meshes without materials (vertex colours only)
GROUND_BOUNCE = 0.8  # fraction of the ground colour's radiance seen as bounce light
SKY_LIGHT = 0.6  # Sky.ambient was tuned for the flat look's fake ambient; physically
# the clear sky gives ~0.2-0.25 of the sun's light: level = 0.6 × ambient


def _lin(c) -> np.ndarray:
    return E.srgb_to_linear(c).astype(np.float32)


class _EnvTextures:
    """One environment on the GPU: prefiltered 3D texture (+ background for HDRIs)."""

    def __init__(self, ctx: moderngl.Context, env: E.EnvLight):
        self.env = env
        layers, h, w, _ = env.spec.shape
        self.spec = ctx.texture3d((w, h, layers), 3, np.ascontiguousarray(env.spec).tobytes(), dtype="f4")
        self.spec.filter = (moderngl.LINEAR, moderngl.LINEAR)
        self.spec.repeat_x, self.spec.repeat_y, self.spec.repeat_z = True, False, False
        self.background = None
        if env.background is not None:
            bh, bw, _ = env.background.shape
            self.background = ctx.texture((bw, bh), 3, np.ascontiguousarray(env.background).tobytes(), dtype="f4")
            self.background.filter = (moderngl.LINEAR, moderngl.LINEAR)
            self.background.repeat_x, self.background.repeat_y = True, False

    def release(self) -> None:
        self.spec.release()
        if self.background is not None:
            self.background.release()


class PbrLook:
    """Draws the PBR colour pass with the :class:`Passes`' programs, meshes and targets."""

    def __init__(self, passes):
        """``passes``: the :class:`engine.server.gl.passes.Passes` that creates this look (its
        ``ctx``, ``program``, ``shadows``, ``textures``, ``noise_texture`` and ``render_ground``)."""
        self.p = passes
        self.ctx = passes.ctx
        self._envs: dict[tuple, _EnvTextures] = {}
        self._missing: set[str] = set()  # HDRI ids the catalogue does not have
        # Ground surfaces by id, looked up once: the texture cache is keyed by Material object, and
        # a content source that builds a new Material per call (the bare asset library) would
        # otherwise re-upload and re-mipmap the ground's textures on every frame.
        self._surfaces: dict[str, Material | None] = {}
        self._dummy2d = self.ctx.texture((1, 1), 4, bytes([255, 255, 255, 255]))
        self._post_vao: dict = {}

    # --- world content -----------------------------------------------------------------------
    def environment(self, scene: Scene, content) -> tuple[_EnvTextures, bool]:
        """(textures, is_hdri): the scene's HDRI when the catalogue has it, else the procedural sky."""
        sky = scene.sky
        if sky.hdri and sky.hdri not in self._missing:
            key = ("hdri", sky.hdri)
            if key not in self._envs:
                img = _lookup(content, "hdri", sky.hdri)
                if img is None:  # remembered: a frame is the same whether or not it was asked before
                    log.warning("HDRI %s not available: using the procedural sky", shown(sky.hdri))
                    if len(self._missing) >= MAX_REMEMBERED:
                        self._missing.clear()
                    self._missing.add(sky.hdri)
                    key = None
                else:
                    self._store(key, E.from_image(img, background=True))
            if key is not None:
                return self._envs[key], True
        key = ("procedural", tuple(sky.zenith), tuple(sky.horizon))
        if key not in self._envs:
            self._store(key, E.procedural(tuple(sky.zenith), tuple(sky.horizon)))
        return self._envs[key], False

    def _store(self, key: tuple, env: E.EnvLight) -> None:
        if len(self._envs) >= MAX_ENVS:
            self._envs.pop(next(iter(self._envs))).release()
        self._envs[key] = _EnvTextures(self.ctx, env)

    def ground_material(self, scene: Scene, content) -> Material:
        g = scene.ground
        if g.surface:
            if g.surface not in self._surfaces:
                if len(self._surfaces) >= MAX_REMEMBERED:  # ids come from clients: bounded
                    self._surfaces.clear()
                m = _lookup(content, "surface", g.surface)
                self._surfaces[g.surface] = m if isinstance(m, Material) and m.albedo is not None else None
            if self._surfaces[g.surface] is not None:
                return self._surfaces[g.surface]
        return procedural_surface(g.texture, tuple(int(c) for c in g.color))

    # --- the pass ----------------------------------------------------------------------------
    def lit_pass(self, scene: Scene, frame: "Frame", with_normal: bool, content) -> None:
        p = self.p
        t = p.target(frame.camera)
        fbo = t.lit_normal if with_normal else t.lit
        fbo.use()
        fbo.clear(0.0, 0.0, 0.0, 0.0, depth=1.0)
        self.ctx.enable(moderngl.DEPTH_TEST)
        env, is_hdri = self.environment(scene, content)
        world = self._world_uniforms(scene, env, is_hdri)
        fog = scene.fog.density > 0
        common = ("n" if with_normal else "") + p.shadows.flags() + ("f" if fog else "")
        prepared: set = set()

        def prog_for(flags: str) -> tuple[Program, str]:
            key = "pbr_" + "".join(sorted(common + flags))
            prog = p.program(key)
            if key not in prepared:
                self._set_frame(prog, frame, world, env)
                prepared.add(key)
            return prog, key

        for d, vis in zip(frame.draws, frame.visible):
            if vis:
                self._draw_actor(d, prog_for)
        self._draw_ground(scene, frame, content, prog_for)
        self._draw_sky(scene, frame, fbo, with_normal, world, env, is_hdri, fog)
        t.post_valid = False
        if scene.look.fxaa:
            self._fxaa(t, frame.camera)

    def _world_uniforms(self, scene: Scene, env: _EnvTextures, is_hdri: bool) -> dict:
        sun, sky, fog = scene.sun, scene.sky, scene.fog
        to_sun = sun.direction_to_sun()
        sun_rad = _lin(sun.color) * float(sun.intensity)
        level = SKY_LIGHT * float(sky.ambient) * float(sky.intensity) * float(sun.intensity)
        sh = env.env.sh * level
        bounce = np.zeros(3, np.float32)
        if not is_hdri:  # the gradient sky has no ground: add the sunlit ground's bounce light
            ground_rad = _lin(scene.ground.color) * GROUND_BOUNCE * (float(sun.intensity) * max(to_sun[2], 0.0) + level)
            bounce = ground_rad.astype(np.float32)
            sh = sh + E.lower_hemisphere_sh() * bounce[None, :]
        hdri_sun = env.env.sun if is_hdri else None
        rot = math.radians(E.sky_rotation_deg(sky, sun, None if hdri_sun is None else hdri_sun[0]))
        horizon_rad = env.env.horizon * level
        fog_col = horizon_rad
        if fog.color is not None:  # the given hue at the horizon's brightness
            c = _lin(fog.color)
            fog_col = c / max(_luma(c), 1e-4) * _luma(horizon_rad)
        return {
            "u_to_sun": tuple(float(x) for x in to_sun),
            "u_sun_radiance": tuple(float(x) for x in sun_rad),
            "u_sh": np.ascontiguousarray(sh, dtype=np.float32).tobytes(),
            "u_sky_scale": level,
            "u_env_rot": (math.cos(rot), math.sin(rot)),
            "u_bounce": tuple(float(x) for x in bounce),
            "u_bounce_mix": 0.0 if is_hdri else 1.0,
            "u_exposure": EXPOSURE_BASE * 2.0 ** float(scene.look.exposure_ev),
            "u_fog_density": float(fog.density) / 1.0e5,
            "u_fog_falloff": 1.0 / max(float(fog.height_falloff_m) * 100.0, 1.0),
            "u_fog_color": tuple(float(x) for x in fog_col),
            "u_zenith": tuple(float(x) for x in _lin(sky.zenith) * env.env.scale * level * SKY_BRIGHTNESS),
            "u_horizon": tuple(float(x) for x in _lin(sky.horizon) * env.env.scale * level * SKY_BRIGHTNESS),
            "u_sun_cos": math.cos(math.radians(max(sun.angular_diameter_deg, 0.05) / 2.0)),
            "u_glow": float(sky.turbidity) / 3.0,
            "u_bg_gain": SKY_BRIGHTNESS,
        }

    def _set_frame(self, prog: Program, frame: "Frame", world: dict, env: _EnvTextures) -> None:
        prog.set("u_view_proj", F.gl_bytes(frame.view_proj))
        prog.set("u_cam_pos", tuple(float(x) for x in frame.camera.location))
        for k, v in world.items():
            prog.set(k, v)
        self.p.shadows.bind(prog)  # unit 0
        env.spec.use(5)
        prog.set("u_spec", 5)

    def _bind_material(self, prog: Program, m: Material | None) -> None:
        tex = self.p.textures
        if m is None:  # vertex colours (the VERTEX_COLOR variant)
            prog.set("u_base_color", (1.0, 1.0, 1.0, 1.0))
            prog.set("u_roughness", DEFAULT_ROUGHNESS)
            prog.set("u_metallic", 0.0)
            return
        prog.set("u_base_color", tuple(float(c) for c in m.base_color))
        prog.set("u_roughness", float(m.roughness))
        prog.set("u_metallic", float(m.metallic))
        prog.set("u_alpha_cutoff", float(m.alpha_cutoff) if m.alpha_cutoff is not None else 0.0)
        for name, unit, uniform in (("albedo", 2, "u_albedo"), ("normal_map", 3, "u_normal_map"), ("orm_map", 4, "u_orm")):
            t = tex.get(m, name)
            if t is not None:
                t.use(unit)
                prog.set(uniform, unit)

    def _draw_actor(self, d: "Draw", prog_for) -> None:
        mesh = d.mesh
        for part in mesh.parts:
            m = part.material
            flags = (
                "c"
                if m is None
                else (
                    ("t" if m.albedo is not None else "")
                    + ("m" if m.normal_map is not None else "")
                    + ("o" if m.orm_map is not None else "")
                    + ("a" if part.alpha_tested else "")
                    + ("j" if m.normal_map is not None and m.normal_space == "object" else "")
                )
            )
            prog, key = prog_for(flags)
            prog.set("u_model", d.placed.model_bytes)
            prog.set("u_normal_mat", d.placed.normal_bytes)
            prog.set("u_id", d.index + 1)
            if d.tint is None:
                prog.set("u_tint", (0.0, 0.0, 0.0, 0.0))
            else:  # tint × albedo luminance / the mesh's brightest (linear): the brightest part = the tint
                k = 1.0 / max(mesh.max_luma**2.2, 1e-3) if m is None else 1.0 / 0.5
                prog.set("u_tint", tuple(float(c) / 255.0 for c in d.tint) + (1.0,))
                prog.set("u_tint_gain", min(k, 20.0))
            self._bind_material(prog, m)
            vao = mesh.vao(self.ctx, prog.prog, key, PBR_FORMAT)
            if len(mesh.parts) == 1:
                vao.render()
            else:
                vao.render(vertices=part.count, first=part.first)

    def _draw_ground(self, scene: Scene, frame: "Frame", content, prog_for) -> None:
        m = self.ground_material(scene, content)
        flags = "g" + ("m" if m.normal_map is not None else "") + ("o" if m.orm_map is not None else "")
        prog, key = prog_for(flags)
        prog.set("u_model", F.gl_bytes(np.eye(4)))
        prog.set("u_normal_mat", F.gl_bytes(np.eye(3)))
        prog.set("u_id", 0)
        prog.set("u_tint", (0.0, 0.0, 0.0, 0.0))
        self._bind_material(prog, m)
        prog.set("u_tile", float(scene.ground.tile_cm))
        prog.set("u_macro", 0.0 if m.name == "flat" else 1.0)
        self.p.noise_texture().use(1)
        prog.set("u_noise", 1)
        self.p.render_ground(scene.ground, frame.ground, prog.prog, key, PBR_FORMAT)

    def _draw_sky(
        self, scene: Scene, frame: "Frame", fbo, with_normal: bool, world: dict, env: _EnvTextures, is_hdri: bool, fog: bool
    ) -> None:
        key = "pbrsky_" + ("n" if with_normal else "") + ("f" if fog else "")
        prog = self.p.program(key)
        cam = frame.camera
        proj = cam.projection_matrix(1.0, 2.0)
        prog.set("u_eye_to_world", F.gl_bytes(F.eye_to_world(cam)))
        prog.set("u_inv_focal", (1.0 / proj[0, 0], 1.0 / proj[1, 1]))
        prog.set("u_cam_pos", tuple(float(x) for x in cam.location))
        for k, v in world.items():
            prog.set(k, v)
        prog.set("u_hdri", 1.0 if is_hdri else 0.0)
        (env.background or self._dummy2d).use(6)
        prog.set("u_background", 6)
        env.spec.use(5)
        prog.set("u_spec", 5)
        if key not in self._post_vao:
            self._post_vao[key] = self.ctx.vertex_array(prog.prog, [])
        self.ctx.depth_func = "<="
        fbo.depth_mask = False
        self._post_vao[key].render(vertices=3)
        fbo.depth_mask = True
        self.ctx.depth_func = "<"

    def _fxaa(self, t, camera) -> None:
        """FXAA from the lit colour into ``t.post`` (ids, depth and the colour attachment untouched)."""
        prog = self.p.program("fxaa")
        post = t.post_fbo
        post.use()
        self.ctx.disable(moderngl.DEPTH_TEST)
        t.color.use(7)
        t.color.filter = (moderngl.LINEAR, moderngl.LINEAR)
        prog.set("u_color", 7)
        prog.set("u_texel", (1.0 / camera.width, 1.0 / camera.height))
        if "fxaa" not in self._post_vao:
            self._post_vao["fxaa"] = self.ctx.vertex_array(prog.prog, [])
        self._post_vao["fxaa"].render(vertices=3)
        self.ctx.enable(moderngl.DEPTH_TEST)
        t.post_valid = True

    def release(self) -> None:
        for e in self._envs.values():
            e.release()
        for vao in self._post_vao.values():
            vao.release()
        self._dummy2d.release()
        self._envs, self._post_vao = {}, {}


def _luma(c: np.ndarray) -> float:
    return float(np.dot(c, [0.2126, 0.7152, 0.0722]))


def _lookup(content, what: str, ident: str):
    """``content.hdri(id)`` / ``content.surface(id)`` or None (no catalogue, no method, unknown id)."""
    fn = getattr(content, what, None)
    if fn is None:
        return None
    try:
        return fn(ident)
    except Exception as e:  # noqa: BLE001 - a missing texture must fall back, not fail the frame
        log.warning("%s %s unavailable (%s): procedural fallback", what, shown(ident), shown(str(e)))
        return None
