"""The Blender worker: a script run by the isolated environment's Python, which has ``bpy``.

It is started by :mod:`engine.server.cycles.client` as
``<venv>/bin/python worker.py <request-fd> <reply-fd>`` and never imports our packages (``bpy``
is GPL-3 and pins numpy < 2, so it lives in its own process and venv). Blender prints progress
to stdout/stderr, so requests and replies travel on two dedicated pipes (see ``wire.py``).

Requests (``op``):

* ``hello``: settings (threads, samples, seed, denoise) → Blender version.
* ``mesh``: one asset's geometry (already in Blender's frame: the client flips UE's Y axis) and
  materials; kept for the worker's lifetime, shared by every object that uses it.
* ``frame``: the whole scene by reference: world (sun, sky, ground key), objects (name, mesh
  key, 4x4 matrix, pass index, tint), camera (4x4, horizontal FOV, size), wanted passes. Objects
  not named any more are removed; only changed matrices are written.
* ``quit``.

Replies: ``{"ok": true, ...}`` with arrays, or ``{"ok": false, "error": "..."}``.
"""

from __future__ import annotations

import atexit
import math
import os
import shutil
import sys
import tempfile
import time
import traceback

import numpy as np

import materials  # noqa: E402  (next to this script)
import wire  # noqa: E402
from exr import read_exr  # noqa: E402

import bpy  # noqa: E402  (only ever imported in the worker's own venv)


def srgb_to_linear(c: np.ndarray) -> np.ndarray:
    c = np.asarray(c, dtype=np.float64)
    return np.where(c <= 0.04045, c / 12.92, ((c + 0.055) / 1.055) ** 2.4)


class Worker:
    def __init__(self, tmp: str | None = None) -> None:
        self.meshes: dict[str, bpy.types.Mesh] = {}
        self.objects: dict[str, bpy.types.Object] = {}
        self.images: dict[str, bpy.types.Image] = {}
        self.matrices: dict[str, tuple] = {}
        # the client owns ``tmp`` (and removes it even after a crash); standalone: our own
        self.tmp = tmp or tempfile.mkdtemp(prefix="sceneforge-cycles-")
        if tmp is None:
            atexit.register(shutil.rmtree, self.tmp, True)
        self.settings: dict = {}
        self.world_key = None
        self.ground_key = None
        self._reset_scene()

    # --- setup ------------------------------------------------------------------------------
    def _reset_scene(self) -> None:
        bpy.ops.wm.read_factory_settings(use_empty=True)
        scene = bpy.context.scene
        self.scene = scene
        scene.render.engine = "CYCLES"
        c = scene.cycles
        c.device = "CPU"
        c.use_adaptive_sampling = False  # a fixed sample count: same work, same result
        c.use_animated_seed = False
        c.max_bounces, c.diffuse_bounces, c.glossy_bounces = 4, 2, 2
        c.transmission_bounces, c.transparent_max_bounces, c.volume_bounces = 2, 8, 0
        c.caustics_reflective = c.caustics_refractive = False
        c.sample_clamp_indirect = 10.0
        scene.render.use_persistent_data = True  # keep the BVH/shaders between frames
        scene.render.threads_mode = "FIXED"
        scene.render.resolution_percentage = 100
        scene.render.pixel_aspect_x = scene.render.pixel_aspect_y = 1.0
        scene.render.film_transparent = False
        scene.view_settings.look = "None"
        scene.display_settings.display_device = "sRGB"
        layer = scene.view_layers[0]
        layer.use_pass_z = True
        layer.use_pass_object_index = True
        cam_data = bpy.data.cameras.new("sf_camera")
        cam_data.sensor_fit = "HORIZONTAL"
        cam_data.clip_start, cam_data.clip_end = 5.0, 1.0e7  # cm, like the GL backend's near
        self.camera = bpy.data.objects.new("sf_camera", cam_data)
        scene.collection.objects.link(self.camera)
        scene.camera = self.camera
        sun_data = bpy.data.lights.new("sf_sun", "SUN")
        self.sun = bpy.data.objects.new("sf_sun", sun_data)
        scene.collection.objects.link(self.sun)
        self.world = bpy.data.worlds.new("sf_world")
        scene.world = self.world
        self._build_world_nodes()

    def _build_world_nodes(self) -> None:
        """Sky: a zenith/horizon gradient over the view direction's elevation (as the GL sky)."""
        w = self.world
        nt = w.node_tree
        nt.nodes.clear()
        coord = nt.nodes.new("ShaderNodeTexCoord")
        sep = nt.nodes.new("ShaderNodeSeparateXYZ")
        ramp = nt.nodes.new("ShaderNodeValToRGB")
        bg = nt.nodes.new("ShaderNodeBackground")
        out = nt.nodes.new("ShaderNodeOutputWorld")
        nt.links.new(coord.outputs["Generated"], sep.inputs[0])
        nt.links.new(sep.outputs["Z"], ramp.inputs["Fac"])
        # An HDRI (equirect, already in Blender's orientation) replaces the gradient when set
        env = nt.nodes.new("ShaderNodeTexEnvironment")
        mapping = nt.nodes.new("ShaderNodeMapping")
        nt.links.new(coord.outputs["Generated"], mapping.inputs["Vector"])
        nt.links.new(mapping.outputs["Vector"], env.inputs["Vector"])
        pick = nt.nodes.new("ShaderNodeMix")
        pick.data_type = "RGBA"
        pick.inputs["Factor"].default_value = 0.0
        nt.links.new(ramp.outputs["Color"], pick.inputs[6])
        nt.links.new(env.outputs["Color"], pick.inputs[7])
        nt.links.new(pick.outputs[2], bg.inputs["Color"])
        nt.links.new(bg.outputs["Background"], out.inputs["Surface"])
        self.sky_env, self.sky_mapping, self.sky_pick = env, mapping, pick
        # The camera sees the sky at full brightness; as a light it counts ``sky_strength``.
        path = nt.nodes.new("ShaderNodeLightPath")
        strength = nt.nodes.new("ShaderNodeMix")
        strength.data_type = "FLOAT"
        nt.links.new(path.outputs["Is Camera Ray"], strength.inputs["Factor"])
        strength.inputs[3].default_value = 1.0
        nt.links.new(strength.outputs[0], bg.inputs["Strength"])
        self.sky_ramp, self.sky_light = ramp, strength

    def hello(self, h: dict, a: dict) -> tuple[dict, dict]:
        s = self.settings = dict(h.get("settings", {}))
        scene = self.scene
        scene.render.threads = int(s.get("threads", 1))
        scene.cycles.samples = int(s.get("samples", 16))
        scene.cycles.seed = int(s.get("seed", 0))
        scene.cycles.use_denoising = bool(s.get("denoise", True))
        if scene.cycles.use_denoising:
            scene.cycles.denoiser = "OPENIMAGEDENOISE"
            scene.cycles.denoising_input_passes = "RGB_ALBEDO_NORMAL"
            scene.cycles.denoising_prefilter = str(s.get("denoise_prefilter", "ACCURATE"))
            scene.cycles.denoising_use_gpu = False
        scene.view_settings.view_transform = str(s.get("view_transform", "Standard"))
        scene.view_settings.exposure = float(s.get("exposure", 0.0))
        scene.cycles.pixel_filter_type = "BLACKMAN_HARRIS"
        scene.cycles.filter_width = float(s.get("filter_width", 1.5))
        return {"ok": True, "blender": bpy.app.version_string, "cycles_threads": scene.render.threads}, {}

    # --- assets -----------------------------------------------------------------------------
    def mesh(self, h: dict, a: dict) -> tuple[dict, dict]:
        key = h["key"]
        if key in self.meshes:
            return {"ok": True}, {}
        v, f = a["vertices"], a["faces"]
        me = bpy.data.meshes.new(key)
        me.vertices.add(len(v))
        me.vertices.foreach_set("co", v.astype(np.float32).ravel())
        me.loops.add(3 * len(f))
        me.loops.foreach_set("vertex_index", f.astype(np.int32).ravel())
        me.polygons.add(len(f))
        me.polygons.foreach_set("loop_start", np.arange(0, 3 * len(f), 3, dtype=np.int32))
        me.update()
        if len(f):
            me.polygons.foreach_set("use_smooth", np.ones(len(f), dtype=bool))
            if "normals" in a:
                me.normals_split_custom_set_from_vertices(a["normals"].astype(np.float32).reshape(-1, 3).tolist())
            else:
                me.set_sharp_from_angle(angle=math.radians(float(h.get("crease_deg", 40.0))))
        col = me.color_attributes.new("sf_color", "FLOAT_COLOR", "POINT")
        lin = np.concatenate([srgb_to_linear(a["colors"] / 255.0), np.ones((len(v), 1))], axis=1)
        col.data.foreach_set("color", lin.astype(np.float32).ravel())
        if "uvs" in a:
            uv_layer = me.uv_layers.new(name="UVMap")
            uv = a["uvs"].astype(np.float32)
            # RenderMesh uvs are OpenGL's (v = 1 at the texture's row 0, its top) and images are
            # stored bottom row first (materials.image): Blender's v is the same, no flip
            uv_layer.data.foreach_set("uv", uv[f.ravel()].ravel())
        mats = h.get("materials") or [None]
        noise = float(self.settings.get("ground_noise_scale", 0.002))
        for i, m in enumerate(mats):
            gain = float(h.get("vertex_tint_gain", 1.0)) if m is None else materials.MATERIAL_TINT_GAIN
            me.materials.append(
                materials.material(f"{key}#{i}", m, a, i, ground=bool(h.get("ground")), ground_noise_scale=noise, tint_gain=gain)
            )
        if "face_materials" in a and len(f):
            me.polygons.foreach_set("material_index", a["face_materials"].astype(np.int32))
        self.meshes[key] = me
        return {"ok": True}, {}

    def pose(self, h: dict, a: dict) -> tuple[dict, dict]:
        """New vertex positions (and normals) for an uploaded mesh of the same topology: a skinned
        character's next pose, without uploading its faces, UVs and textures again."""
        me = self.meshes[h["key"]]
        v = a["vertices"].astype(np.float32).reshape(-1, 3)
        if len(v) != len(me.vertices):
            raise ValueError(f"pose of {h['key']!r}: {len(v)} vertices, the mesh has {len(me.vertices)}")
        me.vertices.foreach_set("co", v.ravel())
        if "normals" in a and len(me.polygons):
            me.normals_split_custom_set_from_vertices(a["normals"].astype(np.float32).reshape(-1, 3).tolist())
        me.update()
        return {"ok": True}, {}

    def hdri(self, h: dict, a: dict) -> tuple[dict, dict]:
        """A linear float equirect (H, W, 3), row 0 = zenith, already in Blender's orientation."""
        key = h["key"]
        if key not in self.images:
            px = a["image"].astype(np.float32)
            hh, ww = px.shape[:2]
            rgba = np.ones((hh, ww, 4), dtype=np.float32)
            rgba[..., :3] = px
            img = bpy.data.images.new(key, ww, hh, alpha=False, float_buffer=True)
            img.pixels.foreach_set(rgba[::-1].ravel())
            img.pack()
            self.images[key] = img
        return {"ok": True}, {}

    # --- per frame --------------------------------------------------------------------------
    def _set_world(self, w: dict) -> None:
        key = repr(sorted(w.items()))
        if key == self.world_key:
            return
        self.world_key = key
        zen = srgb_to_linear(np.asarray(w["sky_zenith"]) / 255.0)
        hor = srgb_to_linear(np.asarray(w["sky_horizon"]) / 255.0)
        elems = self.sky_ramp.color_ramp.elements
        elems[0].position, elems[0].color = 0.0, (*hor, 1.0)
        elems[1].position, elems[1].color = 1.0, (*zen, 1.0)
        self.sky_light.inputs[2].default_value = float(w["sky_strength"])
        self.sky_light.inputs[3].default_value = float(w.get("sky_camera", 1.0))
        hdri = w.get("hdri")
        if hdri is not None:
            self.sky_env.image = self.images[hdri]
            self.sky_mapping.inputs["Rotation"].default_value = (0.0, 0.0, float(w.get("hdri_rotation", 0.0)))
        self.sky_pick.inputs["Factor"].default_value = 1.0 if hdri is not None else 0.0
        self.scene.view_settings.exposure = float(w.get("exposure_ev", 0.0))
        to_sun = np.asarray(w["to_sun"], dtype=np.float64)
        from mathutils import Vector

        self.sun.rotation_mode = "QUATERNION"
        self.sun.rotation_quaternion = Vector(to_sun.tolist()).to_track_quat("Z", "Y")
        sun = self.sun.data
        sun.energy = float(w["sun_strength"])
        sun.color = tuple(srgb_to_linear(np.asarray(w["sun_color"]) / 255.0))
        sun.angle = math.radians(float(w.get("sun_angle_deg", 0.53)))

    def _sync_objects(self, objs: list[dict], arrays: dict) -> None:
        matrices = arrays.get("matrices", np.zeros((0, 4, 4)))
        wanted = {}
        for i, o in enumerate(objs):
            wanted[o["name"]] = (o, matrices[i])
        for name in list(self.objects):
            if name not in wanted or self.objects[name].data.name != wanted[name][0]["mesh"]:
                bpy.data.objects.remove(self.objects.pop(name), do_unlink=True)
                self.matrices.pop(name, None)
        from mathutils import Matrix

        for name, (o, m) in wanted.items():
            ob = self.objects.get(name)
            if ob is None:
                ob = bpy.data.objects.new(name, self.meshes[o["mesh"]])
                self.scene.collection.objects.link(ob)
                self.objects[name] = ob
            mt = tuple(np.asarray(m, dtype=np.float64).ravel().tolist())
            if self.matrices.get(name) != mt:
                ob.matrix_world = Matrix(np.asarray(mt).reshape(4, 4).tolist())
                self.matrices[name] = mt
            if ob.pass_index != int(o["pass_index"]):
                ob.pass_index = int(o["pass_index"])
            tint = o.get("tint")
            on = 1.0 if tint is not None else 0.0
            if ob.get("sf_tint_on") != on:
                ob["sf_tint_on"] = on
            if tint is not None:
                lin = [float(x) for x in srgb_to_linear(np.asarray(tint) / 255.0)]
                if list(ob.get("sf_tint", [])) != lin:
                    ob["sf_tint"] = lin

    def frame(self, h: dict, a: dict) -> tuple[dict, dict]:
        scene = self.scene
        self._set_world(h["world"])
        self._sync_objects(h["objects"], a)
        cam = h["camera"]
        from mathutils import Matrix

        self.camera.matrix_world = Matrix(np.asarray(a["camera_matrix"], dtype=np.float64).tolist())
        self.camera.data.angle = math.radians(float(cam["fov_deg"]))
        scene.render.resolution_x, scene.render.resolution_y = int(cam["width"]), int(cam["height"])
        passes = set(h.get("passes", ["lit"]))
        scene.cycles.filter_width = float(h.get("filter_width", self.settings.get("filter_width", 1.5)))
        t0, c0 = time.perf_counter(), time.process_time()
        bpy.ops.render.render(write_still=False)
        render_wall, render_cpu = time.perf_counter() - t0, time.process_time() - c0
        result = bpy.data.images["Render Result"]
        out_h, out_a = {"ok": True, "render_wall_s": render_wall, "render_cpu_s": render_cpu}, {}
        if "lit" in passes:
            path = os.path.join(self.tmp, "lit.png")
            s = scene.render.image_settings
            s.media_type = "IMAGE"
            s.file_format, s.color_mode, s.color_depth, s.compression = "PNG", "RGB", "8", 0
            result.save_render(path, scene=scene)
            with open(path, "rb") as fh:
                out_a["lit_png"] = np.frombuffer(fh.read(), dtype=np.uint8)
        if passes & {"depth", "index"}:
            path = os.path.join(self.tmp, "data.exr")
            s = scene.render.image_settings
            s.media_type = "MULTI_LAYER_IMAGE"
            s.file_format, s.color_depth, s.exr_codec = "OPEN_EXR_MULTILAYER", "32", "NONE"
            result.save_render(path, scene=scene)
            with open(path, "rb") as fh:
                chans = read_exr(fh.read())
            out_h["channels"] = sorted(chans)
            for name, arr in chans.items():
                low = name.lower()
                if "depth" in passes and low.endswith(".depth.z"):
                    out_a["plane_depth"] = arr.astype(np.float32)
                if "index" in passes and low.endswith(".object index.x"):
                    out_a["index"] = arr.astype(np.float32)
        return out_h, out_a


def watch_parent(period_s: float = 1.0) -> None:
    """Exit when the server that started us is gone (re-parented): besides the client's
    PR_SET_PDEATHSIG, for a kernel without it. A thread, so it also fires between requests."""
    import threading

    parent = os.getppid()

    def poll() -> None:
        while True:
            time.sleep(period_s)
            if os.getppid() != parent:
                os._exit(3)

    threading.Thread(target=poll, name="sceneforge-parent-watch", daemon=True).start()


def main() -> int:
    req_fd, rep_fd = int(sys.argv[1]), int(sys.argv[2])
    watch_parent()
    worker = Worker(sys.argv[3] if len(sys.argv) > 3 else None)
    while True:
        try:
            header, arrays = wire.read_message(req_fd)
        except EOFError:
            return 0
        op = header.get("op")
        if op == "quit":
            wire.write_message(rep_fd, {"ok": True})
            return 0
        try:
            handler = {
                "hello": worker.hello,
                "mesh": worker.mesh,
                "pose": worker.pose,
                "hdri": worker.hdri,
                "frame": worker.frame,
            }[op]
            reply, out = handler(header, arrays)
        except Exception as e:  # noqa: BLE001 - reported to the client, which raises RenderError
            traceback.print_exc()
            reply, out = {"ok": False, "error": f"{type(e).__name__}: {e}"}, {}
        wire.write_message(rep_fd, reply, out)


if __name__ == "__main__":
    sys.exit(main())
