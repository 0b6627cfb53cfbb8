"""``--renderer cycles``: path-traced ``lit`` from Blender Cycles, everything else from GL.

Hybrid by design: visibility checks, pixel counts, masks, ids, depth and normals stay on the fast
embedded GL backend (rejection sampling calls them many times per accepted sample; they do not
depend on shading), and only ``lit`` is path-traced, by a persistent Blender worker process
(:mod:`.client`). :meth:`CyclesBackend.render_cycles` also returns Cycles' own object-index and
depth passes, used to check that both renderers see the same geometry (tests: ids equal on every
pixel, depth within 1%).

Frames: UE is left-handed, Blender right-handed; the single conversion is ``S = diag(1, -1, 1)``
(flip Y): mesh vertices are uploaded as ``S v``, actor matrices as ``S M S`` and the camera's
axes as ``S`` (right, up, -forward), so the image is the same as GL's, not mirrored.
"""

from __future__ import annotations

import hashlib
import logging
import math
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from sceneforge.core.errors import ConfigError
from sceneforge.core.meshes import RenderMesh
from sceneforge.engine.limits import MAX_CYCLES_SAMPLES, MAX_CYCLES_SEED, shown
from sceneforge.engine import render_kinds
from sceneforge.engine.server import characters as ch
from sceneforge.engine.server.backend import MeshProvider, PixelCount, RenderBackend
from sceneforge.engine.server.cycles import install
from sceneforge.engine.server.cycles.client import BlenderWorker, decode_png
from sceneforge.engine.server.gl.envlight import CLAMP_MEAN, hdri_sun, sky_rotation_deg, upper_mean
from sceneforge.engine.server.gl.frame import ray_factor
from sceneforge.engine.server.gl.ground import ground_tiles
from sceneforge.engine.world import Camera, Ground, Scene

log = logging.getLogger(__name__)

FLIP = np.diag([1.0, -1.0, 1.0, 1.0])  # UE (left-handed) ↔ Blender (right-handed)
HDRI_LIGHT = 0.55  # a normalised HDRI lights like the gradient sky (mean luminance ~0.55 at ambient 1)
SKY_DEPTH = 1.0e9  # Cycles writes ~1e10 cm where a ray hits nothing
ID_FILTER_WIDTH = 0.01  # px, Blender's minimum: first samples within ±0.005 px of pixel centres


@dataclass(frozen=True)
class CyclesSettings:
    """What determines a Cycles image besides the scene (all part of a dataset's identity)."""

    samples: int = 16
    seed: int = 0
    threads: int = 1
    denoise: bool = True
    prefilter: str = "FAST"  # OIDN's albedo/normal prefilter: FAST (-0.8 CPU-s per 224² frame) or ACCURATE
    filter_width: float = 1.5  # pixels (Blackman-Harris); ids/depth passes use the first sample
    sun_strength: float = 5.0  # Blender sun irradiance (W/m²) per unit of Sun.intensity
    sky_strength: float = 0.35  # sky light (not its look) at Sky.ambient = 0.35
    view_transform: str = "Standard"  # Blender colour management ("AgX" looks more filmic)
    exposure: float = 0.0  # stops

    @classmethod
    def from_options(cls, options: dict, threads: int) -> "CyclesSettings":
        """From a renderer spec's options (``cycles:samples=32,seed=1,denoise=0``), all strings."""

        def integer(key: str, default: int, lo: int, hi: int) -> int:
            raw = options.get(key)
            if raw is None:
                return default
            try:
                value = int(raw)
            except ValueError:
                raise ConfigError(f"renderer cycles: {key} must be an integer, got {shown(raw, 40)}") from None
            if not lo <= value <= hi:
                raise ConfigError(f"renderer cycles: {key} must be in {lo}..{hi}, got {value}")
            return value

        denoise = integer("denoise", 1, 0, 1)
        prefilter = str(options.get("prefilter", cls.prefilter)).upper()
        if prefilter not in ("FAST", "ACCURATE"):
            raise ConfigError(f"renderer cycles: prefilter must be fast or accurate, got {shown(options['prefilter'], 40)}")
        return cls(
            samples=integer("samples", cls.samples, 1, MAX_CYCLES_SAMPLES),
            seed=integer("seed", cls.seed, 0, MAX_CYCLES_SEED),
            threads=max(1, int(threads)),
            denoise=bool(denoise),
            prefilter=prefilter,
        )

    def worker_settings(self) -> dict:
        return {
            "samples": self.samples,
            "seed": self.seed,
            "threads": self.threads,
            "denoise": self.denoise,
            "denoise_prefilter": self.prefilter,
            "filter_width": self.filter_width,
            "view_transform": self.view_transform,
            "exposure": self.exposure,
        }


class CyclesBackend(RenderBackend):
    """Path-traced ``lit`` (Cycles, CPU, OpenImageDenoise) + the GL backend for everything else."""

    name = "cycles"
    renderer = "cycles"

    def __init__(
        self,
        mesh_provider: MeshProvider,
        *,
        threads: int = 1,
        settings: CyclesSettings | None = None,
        root: Path | None = None,
        gl: RenderBackend | None = None,
        timeout_s: float = 600.0,
        content=None,
    ) -> None:
        inst = install.require(root)  # fails with the install hint before anything starts
        self.settings = settings or CyclesSettings(threads=threads)
        self._provider = mesh_provider
        # HDRIs and ground surfaces by id: the server's AssetCatalog (whose bound ``mesh`` is the
        # provider), as for the GL backend; None → gradient sky / procedural ground.
        self._content = content if content is not None else getattr(mesh_provider, "__self__", None)
        if gl is None:
            # lazy: the GL backend loads moderngl and EGL; CyclesSettings (validating
            # `--renderer cycles:...` options) is imported without them
            from sceneforge.engine.server.gl.backend import GLBackend

            # labels must outline Cycles' own (full-detail) geometry: no levels of detail
            gl = GLBackend(mesh_provider, threads=threads, lod=False)
        self.gl = gl
        # Blender's own output (progress, warnings, tracebacks): quoted in errors, removed on close
        self._log_path = Path(tempfile.gettempdir()) / f"sceneforge-cycles-{os.getpid()}-{id(self):x}.log"
        self.worker = BlenderWorker(inst.python, self.settings.worker_settings(), timeout_s=timeout_s, log_path=self._log_path)
        self._uploaded: set[str] = set()
        self._poses: dict[str, str] = {}  # a posed character's mesh key -> the pose (asset id) it holds
        self._hdri_sun_yaw: dict[str, float | None] = {}  # HDRI key -> yaw of its own sun (sky_rotation_deg)
        self._generation = -1
        self.last_frame: dict = {}  # the worker's wall/CPU seconds of the last path-traced frame

    # --- RenderBackend ----------------------------------------------------------------------
    def render(self, scene: Scene, camera: Camera, kinds: tuple[str, ...]) -> dict[str, np.ndarray]:
        kinds = render_kinds.require(self.renderer, kinds)  # ConfigError: unknown or not drawn here
        out: dict[str, np.ndarray] = {}
        rest = tuple(k for k in kinds if k != "lit")
        if rest:
            out.update(self.gl.render(scene, camera, rest))
        if "lit" in kinds:
            out["lit"] = self._frame(scene, camera, ("lit",))["lit"]
        return {k: out[k] for k in kinds}

    def pixel_counts(self, scene: Scene, camera: Camera, names: list[str]) -> dict[str, PixelCount]:
        return self.gl.pixel_counts(scene, camera, names)

    def triangle_count(self, scene: Scene) -> int:
        return self.gl.triangle_count(scene)

    def info(self) -> dict:
        s = self.settings
        return {
            "backend": self.name,
            "blender": self.worker.blender_version or "not started",
            "samples": s.samples,
            "seed": s.seed,
            "threads": s.threads,
            "denoiser": f"OpenImageDenoise ({s.prefilter.lower()} prefilter)" if s.denoise else "none",
            "worker_pid": self.worker.pid,
            "gl": self.gl.info(),
        }

    def close(self) -> None:
        self.worker.close()
        self.gl.close()

    def interrupt(self) -> None:
        """Stop a frame in progress now (any thread; the server is shutting down): the Blender
        worker is killed, the waiting render raises at once instead of after the whole frame."""
        self.worker.kill()

    # --- Cycles' own passes (checks against GL) ---------------------------------------------
    def render_cycles(
        self, scene: Scene, camera: Camera, kinds: tuple[str, ...] = ("lit", "instance_id", "depth")
    ) -> dict[str, np.ndarray]:
        """Everything from Cycles: ``lit``, ``instance_id`` (object-index pass), ``plane_depth``
        and ``depth`` (Z pass, planar → ray like GL). Ids and depth come from each pixel's
        first sample, so when they are asked for the frame uses a 0.01 px pixel filter (the
        first sample then lies within ±0.005 px of the pixel centre, where GL samples)."""
        passes = {"lit"} if "lit" in kinds else set()
        if {"instance_id", "object_mask"} & set(kinds):
            passes.add("index")
        if {"depth", "plane_depth"} & set(kinds):
            passes.add("depth")
        # ids/depth come from each pixel's first sample: a narrow filter keeps it at the centre
        exact = passes & {"index", "depth"}
        raw = self._frame(scene, camera, tuple(sorted(passes)), filter_width=ID_FILTER_WIDTH if exact else None)
        out = {}
        if "lit" in raw:
            out["lit"] = raw["lit"]
        if "index" in raw:
            ids = np.rint(raw["index"]).astype(np.int32)
            out["instance_id"] = ids
            if "object_mask" in kinds:
                pal = np.zeros((len(scene.actors) + 1, 3), dtype=np.uint8)
                for i, a in enumerate(scene.actors.values()):
                    pal[i + 1] = a.color
                out["object_mask"] = pal[np.clip(ids, 0, len(scene.actors))]
        if "plane_depth" in raw:
            planar = raw["plane_depth"].astype(np.float32)
            planar[planar >= SKY_DEPTH] = np.inf
            out["plane_depth"] = planar
            out["depth"] = planar * ray_factor(camera.width, camera.height, camera.focal_px)
        return {k: out[k] for k in kinds if k in out}

    # --- scene → worker ---------------------------------------------------------------------
    def _frame(
        self, scene: Scene, camera: Camera, passes: tuple[str, ...], filter_width: float | None = None
    ) -> dict[str, np.ndarray]:
        self.worker.ensure()
        if self.worker.generation != self._generation:  # a (re)started worker has no meshes
            self._uploaded.clear()
            self._poses.clear()
            self._generation = self.worker.generation
        objects, matrices = [], []
        ground_key = self._ensure_ground(scene.ground)
        objects.append({"name": "__sf_ground", "mesh": ground_key, "pass_index": 0, "tint": None})
        matrices.append(np.eye(4))
        for i, actor in enumerate(scene.actors.values()):
            if actor.hidden:
                continue
            key = self._ensure_mesh(actor.asset_id, actor.name)
            if key is None:
                continue
            objects.append(
                {
                    "name": actor.name,
                    "mesh": key,
                    "pass_index": i + 1,
                    "tint": list(actor.tint) if actor.tint is not None else None,
                }
            )
            matrices.append(FLIP @ actor.transform.matrix() @ FLIP)
        header = {
            "op": "frame",
            "world": self._world(scene),
            "objects": objects,
            "camera": {"fov_deg": camera.fov_deg, "width": camera.width, "height": camera.height},
            "passes": list(passes),
            "filter_width": filter_width or self.settings.filter_width,
        }
        reply, arrays = self.worker.call(
            header, {"matrices": np.asarray(matrices, dtype=np.float64), "camera_matrix": camera_matrix(camera)}
        )
        self.last_frame = {k: reply[k] for k in ("render_wall_s", "render_cpu_s") if k in reply}
        out = dict(arrays)
        if "lit_png" in out:
            out["lit"] = decode_png(out.pop("lit_png"))
        return out

    def _world(self, scene: Scene) -> dict:
        s = self.settings
        sun, sky = scene.sun, scene.sky
        level = float(sky.intensity) * float(sun.intensity)
        w = {
            "to_sun": (np.diag([1.0, -1.0, 1.0]) @ sun.direction_to_sun()).tolist(),
            "sun_strength": s.sun_strength * float(sun.intensity),
            "sun_color": list(sun.color),
            "sun_angle_deg": float(sun.angular_diameter_deg),
            "sky_zenith": list(sky.zenith),
            "sky_horizon": list(sky.horizon),
            "sky_strength": s.sky_strength * float(sky.ambient) / 0.35 * level,
            "sky_camera": level,
            "exposure_ev": float(scene.look.exposure_ev),
            "hdri": None,
        }
        key = self._ensure_hdri(sky.hdri) if sky.hdri else None
        if key is not None:  # normalised (upper-hemisphere mean 1) like GL: ``ambient`` means the same
            rotation = sky_rotation_deg(sky, sun, self._hdri_sun_yaw.get(key))  # as the GL backend
            w.update(
                hdri=key,
                hdri_rotation=math.radians(rotation),
                sky_strength=HDRI_LIGHT * float(sky.ambient) * level,
                sky_camera=HDRI_LIGHT * level,
            )
        return w

    def _ensure_hdri(self, hdri_id: str) -> str | None:
        key = f"hdri:{hdri_id}"
        if key in self._uploaded:
            return key
        img = _content(self._content, "hdri", hdri_id)
        if img is None:
            log.warning("HDRI %r not available: using the gradient sky", hdri_id)
            return None
        self.worker.call({"op": "hdri", "key": key}, {"image": hdri_for_blender(np.asarray(img, np.float32))})
        found = hdri_sun(img)
        self._hdri_sun_yaw[key] = None if found is None else found[0]
        self._uploaded.add(key)
        return key

    def _ensure_mesh(self, asset_id: str, actor: str = "") -> str | None:
        if ch.is_character(asset_id):
            return self._ensure_posed(asset_id, actor)
        key = f"asset:{asset_id}"
        if key in self._uploaded:
            return key
        mesh = self._provider(asset_id)
        if mesh.n_triangles == 0:
            return None
        self._upload(key, mesh)
        return key

    def _ensure_posed(self, asset_id: str, actor: str) -> str | None:
        """A skinned character (engine/server/characters.py): one Blender mesh per actor and
        character variant, uploaded once (faces, UVs, textures), then moved to each new pose by
        its vertices and normals alone (the worker's ``pose`` op): the CPU-skinned mesh of the pose,
        vertex for vertex the one the GL renderer skins on the GPU. A video's hundreds of poses
        stay one mesh per actor in the worker instead of one (with its textures) per pose."""
        cls, variant, _clip, _phase = ch.parse(asset_id)
        props = int(ch.has_props(asset_id))  # with props the mesh has other vertices: its own Blender mesh
        key = "posed:" + hashlib.sha1(f"{cls}\0{variant}\0{props}\0{actor}".encode()).hexdigest()[:20]
        if key in self._uploaded and self._poses.get(key) == asset_id:
            return key
        mesh = self._provider(asset_id)
        if mesh.n_triangles == 0:
            return None
        if key not in self._uploaded:
            self._upload(key, mesh)
        else:
            flip = np.array([1.0, -1.0, 1.0], dtype=np.float32)
            arrays = {"vertices": mesh.vertices * flip}
            if mesh.normals is not None:
                arrays["normals"] = mesh.normals * flip
            self.worker.call({"op": "pose", "key": key}, arrays)
        self._poses[key] = asset_id
        return key

    def _ensure_ground(self, ground: Ground) -> str:
        sig = repr(
            (
                ground.color,
                ground.texture,
                ground.relief_amplitude,
                ground.relief_wavelength,
                ground.extent,
                ground.surface,
                ground.tile_cm,
            )
        )
        key = "ground:" + hashlib.sha1(sig.encode()).hexdigest()[:16]
        if key not in self._uploaded:
            surface = _content(self._content, "surface", ground.surface) if ground.surface else None
            self._upload(key, ground_mesh(ground, surface), ground=True)
        return key

    def _upload(self, key: str, mesh: RenderMesh, ground: bool = False) -> None:
        header, arrays = mesh_message(key, mesh, ground=ground)
        self.worker.call(header, arrays)
        self._uploaded.add(key)


def camera_matrix(camera: Camera) -> np.ndarray:
    """Blender camera-to-world 4x4 (camera looks down its -Z, +Y up) in Blender's frame."""
    axes = camera.rotation.matrix()  # columns: forward, right, up (UE world)
    flip = np.diag([1.0, -1.0, 1.0])
    m = np.eye(4)
    m[:3, 0] = flip @ axes[:, 1]
    m[:3, 1] = flip @ axes[:, 2]
    m[:3, 2] = -(flip @ axes[:, 0])
    m[:3, 3] = flip @ np.asarray(camera.location, dtype=np.float64)
    return m


def mesh_message(key: str, mesh: RenderMesh, ground: bool = False) -> tuple[dict, dict]:
    """A ``mesh`` request: geometry in Blender's frame (Y flipped), colours, optional PBR data.

    Materials as GL draws them (``gl/resources.py``): every material keeps its factors (base
    colour, roughness, metallic); textures only where the mesh has UVs. A face with a material
    never shows the vertex colours (their flat fallback), so they are only drawn by a mesh
    without materials."""
    flip = np.array([1.0, -1.0, 1.0], dtype=np.float32)
    arrays = {"vertices": mesh.vertices * flip, "faces": mesh.faces[:, ::-1].copy(), "colors": mesh.colors}
    if mesh.normals is not None:
        arrays["normals"] = mesh.normals * flip
    materials = []
    if mesh.materials:
        textured = mesh.uvs is not None
        if textured:
            arrays["uvs"] = mesh.uvs
        for i, m in enumerate(mesh.materials):
            materials.append(
                {
                    "roughness": m.roughness,
                    "metallic": m.metallic,
                    "base_color": [float(x) for x in m.base_color],
                    "alpha_cutoff": m.alpha_cutoff,
                }
            )
            for name, img in (("albedo", m.albedo), ("normal", m.normal_map), ("orm", m.orm_map)):
                if img is not None and textured:
                    arrays[f"{name}{i}"] = np.asarray(img, dtype=np.uint8)
        if mesh.face_materials is not None:
            arrays["face_materials"] = mesh.face_materials
    header = {
        "op": "mesh",
        "key": key,
        "ground": ground,
        "materials": materials or None,
        "vertex_tint_gain": vertex_tint_gain(mesh.colors),
    }
    return header, arrays


def vertex_tint_gain(colors: np.ndarray) -> float:
    """GL's ``u_tint_gain`` for vertex colours (``gl/pbr.py``, ``GpuMesh.max_luma``): 1 / the
    brightest colour's luminance (its sRGB luma to the power 2.2), at most 20."""
    luma = colors.astype(np.float64) @ np.array([0.299, 0.587, 0.114]) / 255.0
    max_luma = max(float(luma.max()) if len(luma) else 1.0, 1e-3)
    return min(1.0 / max(max_luma**2.2, 1e-3), 20.0)


def _content(content, what: str, ident: str):
    """``content.hdri(id)`` / ``content.surface(id)`` or None (no catalogue, unknown id, error)."""
    fn = getattr(content, what, None)
    if fn is None:
        return None
    try:
        return fn(ident)
    except Exception as e:  # noqa: BLE001 - a missing texture falls back, it does not fail the frame
        log.warning("%s %r unavailable (%s): fallback", what, ident, e)
        return None


def hdri_for_blender(img: np.ndarray) -> np.ndarray:
    """Our equirect (row 0 = zenith, u = atan2(y, x)/2π + 1/2 in UE axes, see gl/envlight.py) for
    Blender's Environment Texture, whose u is 1/2 − atan2(y_b, x_b)/2π with y_b = −y: the same
    columns, so the image goes as it is (an earlier mirror + half turn showed a feature at UE yaw
    ψ at 180° − ψ; measured with tests/engine/test_hdri_sun.py). Normalised so the upper
    hemisphere's mean luminance is 1, the HDRI's own sun clamped (the sun lamp lights and shadows
    separately), exactly as the GL backend prepares it."""
    img = np.nan_to_num(np.asarray(img, np.float32), nan=0.0, posinf=0.0, neginf=0.0).clip(0.0)
    img = img / max(upper_mean(img), 1e-6)
    return np.ascontiguousarray(np.minimum(img, CLAMP_MEAN))


def ground_mesh(ground: Ground, surface=None) -> RenderMesh:
    """The GL backend's ground tiles merged into one mesh (same heights, same extent); with a
    ``surface`` material, UVs repeat it every ``tile_cm``."""
    verts, faces, colors, normals, off = [], [], [], [], 0
    for mesh, n in ground_tiles(ground):
        verts.append(mesh.vertices)
        faces.append(mesh.faces + off)
        colors.append(mesh.colors)
        normals.append(n)
        off += len(mesh.vertices)
    v = np.concatenate(verts)
    if surface is None:
        return RenderMesh(v, np.concatenate(faces), np.concatenate(colors), normals=np.concatenate(normals))
    tile = float(getattr(surface, "tile_cm", None) or ground.tile_cm or 300.0)
    uvs = (v[:, :2] / tile).astype(np.float32)
    white = np.full((len(v), 3), 255, np.uint8)
    return RenderMesh(v, np.concatenate(faces), white, normals=np.concatenate(normals), uvs=uvs, materials=(surface,))
