"""The default embedded renderer: moderngl on a headless EGL context (Mesa llvmpipe on CPU).

Why moderngl: on this project's 2-core CPU machine it was the fastest renderer that does shadows
on llvmpipe, installs in 2 MB, and gives colour + integer instance ids + depth from one pass
(multiple render targets). See ``docs/renderer.md`` for the comparison and measured numbers.

Example::

    from sceneforge.engine.server.gl.backend import GLBackend
    backend = GLBackend(library.mesh)                   # any MeshProvider: asset id -> RenderMesh
    out = backend.render(scene, camera, ("lit", "object_mask", "depth"))
    counts = backend.pixel_counts(scene, camera, ["car_0", "tree_3"])

The camera comes only from ``Camera.view_matrix()`` / ``projection_matrix()`` (the single UE→GL
conversion), models from ``Transform.matrix()``; shaders work in UE world cm.
"""

from __future__ import annotations

import logging
import operator
import os
import threading
from contextlib import contextmanager

import numpy as np

from sceneforge.core.errors import ConfigError, RenderError
from sceneforge.engine.server.gl import frame as F
from sceneforge.engine.server.gl import lod as L
from sceneforge.engine import render_kinds
from sceneforge.engine.server.backend import MeshProvider, PixelCount, RenderBackend
from sceneforge.engine.server.gl.frame import Draw, Frame
from sceneforge.engine.server.gl.llvm_order import preload_before_gl
from sceneforge.engine.server.gl.passes import Passes
from sceneforge.engine.world import Camera, Scene

log = logging.getLogger(__name__)
COUNT_IN_ONE_PASS = True  # pixel counts: coverage recorded by the id pass (count_passes.id_pass named=)


def drawn_spheres(frame: "Frame") -> tuple[np.ndarray, np.ndarray]:
    """World bounding spheres (centres (n, 3), radii (n,)) of the levels the frame draws (not
    the full meshes' ``Draw.center``/``radius``): what the pixel-count culling tests use. A draw
    at full detail already has its sphere (the scene's ``Frame.centers``/``radii``: the same
    function of the same mesh), so only the levels of detail (``Frame.levelled``) are moved to
    world space here (a city frame draws ~10 of its ~70-165 actors at a level)."""
    centers, radii = frame.centers.copy(), frame.radii.copy()
    for k in frame.levelled:
        d = frame.draws[k]
        centers[k], radii[k] = F.world_sphere(d.placed, d.mesh.center, d.mesh.radius)
    return centers, radii


def possible_occluders(frame: "Frame", wanted: set[int], spheres=None) -> np.ndarray:
    """Which in-view actors the id pass of ``pixel_counts`` must draw: the wanted ones and every
    actor whose bounding sphere reaches nearer (planar depth) than the farthest point of a wanted
    one's. An actor wholly behind all of them can never win the depth test on their pixels, so
    their counts and boxes are the same without it (forests: the trees behind the objects).
    ``spheres``: :func:`drawn_spheres` of the frame when the caller has them."""
    visible = np.asarray(frame.visible, dtype=bool)
    if not len(frame.draws):
        return visible
    fwd = frame.camera.rotation.matrix()[:, 0]
    centers, radii = spheres if spheres is not None else drawn_spheres(frame)
    depth = (centers - np.asarray(frame.camera.location, float)) @ fwd
    is_wanted = np.array([d.index in wanted for d in frame.draws])
    if not (is_wanted & visible).any():
        return visible & is_wanted
    far = float(np.max((depth + radii)[is_wanted & visible]))
    return visible & (is_wanted | (depth - radii <= far + 1.0))  # 1 cm: far from rounding


def wanted_rect(frame: "Frame", drawn: list, spheres=None) -> tuple[tuple[int, int, int, int] | None, np.ndarray]:
    """The pixel block ``pixel_counts`` must render, and which draws can touch it.

    Every pixel of a wanted actor lies in the projection of its drawn level's bounding sphere
    (``F.sphere_rects``), so the union of those rectangles holds all of them; an actor whose own
    rectangle misses it cannot change their depth test, and the pixels outside it are never
    counted. Rendering the block only (a scissor) with only the actors that reach it gives the
    same counts and boxes as the whole frame (tested), for less raster, fewer draws and a
    smaller read-back. ``drawn``: the wanted draws in view. Returns ((x, y, w, h) bottom-up, or
    None when no wanted actor is in view; bool per draw, False for every draw out of view)."""
    cam = frame.camera
    overlaps = np.zeros(len(frame.draws), bool)
    if not drawn:
        return None, overlaps
    centers, radii = spheres if spheres is not None else drawn_spheres(frame)
    # only the draws in view can be drawn (an out-of-view one is never an occluder): a city frame
    # has ~15 of its ~70-165 actors in view, and the projection is the costly part here
    in_view = np.flatnonzero(np.asarray(frame.visible, dtype=bool))
    rects = F.sphere_rects(frame.view_proj, centers[in_view], radii[in_view], cam.width, cam.height)
    row = {frame.draws[k].index: r for r, k in enumerate(in_view.tolist())}
    own = rects[[row[d.index] for d in drawn]]
    x0, y0 = int(own[:, 0].min()), int(own[:, 1].min())
    x1, y1 = int(own[:, 2].max()), int(own[:, 3].max())
    if x1 <= x0 or y1 <= y0:
        return None, overlaps
    overlaps[in_view] = (rects[:, 0] < x1) & (rects[:, 2] > x0) & (rects[:, 1] < y1) & (rects[:, 3] > y0)
    return (x0, y0, x1 - x0, y1 - y0), overlaps


class GLBackend(RenderBackend):
    """Rasterising backend: lit/mask/depth/normal/ids in one pass, cached shadow map.

    ``threads`` sets ``LP_NUM_THREADS`` (llvmpipe's rasteriser threads) before the context is
    created, unless the environment already sets it. ``lod``: draw small, distant meshes at a
    level of detail when the content provides one (``content.mesh_lod``; see gl/lod.py).
    ``shadow_map_size``: texels across the sun's near shadow cascade (the far one has half as
    many; gl/shadow.py). ``gpu_skinning``: pose characters (``character:`` ids) in a vertex
    shader from their rig when the content serves one (``content.skinned``, gl/skinning.py); False
    draws the CPU-skinned mesh of each pose (the reference the GPU path is tested against).
    """

    name = "moderngl"
    renderer = "gl"

    def __init__(
        self,
        mesh_provider: MeshProvider,
        *,
        shadow_map_size: int = 2048,
        threads: int | None = None,
        content=None,
        lod: bool = True,
        gpu_skinning: bool = True,
    ):
        if threads is not None and "LP_NUM_THREADS" not in os.environ:
            os.environ["LP_NUM_THREADS"] = str(int(threads))
        import moderngl  # heavy-ish; keep it out of modules that only need the interface

        preload_before_gl()  # triton's LLVM before Mesa's: else a later `import timm` segfaults

        try:
            self._ctx = moderngl.create_standalone_context(backend="egl")
        except Exception as e:  # noqa: BLE001 - any EGL/driver failure is the same user problem
            raise RenderError(
                f"cannot create a headless EGL OpenGL context ({e}); install Mesa's EGL/GL drivers (libegl1, libgl1-mesa-dri)"
            ) from e
        self._provider = mesh_provider
        # World content by id (HDRIs, ground surfaces): an object with ``hdri(id)`` and
        # ``surface(id)`` (the server's AssetCatalog). Default: the object whose bound method
        # is the mesh provider (``catalog.mesh``), so the registry's factory signature stays.
        self._content = content if content is not None else getattr(mesh_provider, "__self__", None)
        self._lock = threading.RLock()
        self._lod = bool(lod)
        self._gpu_skinning = bool(gpu_skinning)
        self._passes = Passes(self._ctx, int(shadow_map_size))
        self._draws_cache: tuple | None = None  # (actors, full-detail draws, centres, radii): _scene_draws
        self._frame_cache: tuple | None = None  # (draws cache, ground, camera, Frame): _frame
        log.info("GL backend: %s, LP_NUM_THREADS=%s", self._ctx.info["GL_RENDERER"], os.environ.get("LP_NUM_THREADS", "default"))

    # --- RenderBackend ----------------------------------------------------------------------
    def render(self, scene: Scene, camera: Camera, kinds: tuple[str, ...]) -> dict[str, np.ndarray]:
        kinds = render_kinds.require(self.renderer, kinds)  # ConfigError: unknown or not drawn here
        with self._using():
            frame = self._frame(scene, camera)
            p = self._passes
            if "lit" in kinds or "normal" in kinds:
                p.update_shadow(scene, frame.draws, frame, content=self._content, lod=self._lod)
                p.lit_pass(scene, frame, with_normal="normal" in kinds, content=self._content)
            else:
                p.id_pass(frame, frame.draws, frame.visible, ground=scene.ground)
            return self._read(scene, frame, kinds)

    def pixel_counts(self, scene: Scene, camera: Camera, names: list[str]) -> dict[str, PixelCount]:
        order = {name: i for i, name in enumerate(scene.actors)}
        for n in names:
            if n not in order:
                raise ConfigError(f"pixel_counts: no actor named {n!r} in the scene")
        if not names:
            return {}
        with self._using():
            frame = self._frame(scene, camera)
            wanted = {order[n] for n in names}
            in_view = {d.index: d for d, v in zip(frame.draws, frame.visible) if v}
            drawn = [in_view[order[n]] for n in dict.fromkeys(names) if order[n] in in_view]
            spheres = drawn_spheres(frame)
            rect, overlaps = wanted_rect(frame, drawn, spheres=spheres)
            if rect is None:  # nothing wanted in view: every count is 0
                return {n: PixelCount(0, 0, None) for n in names}
            occluders = possible_occluders(frame, wanted, spheres=spheres) & overlaps
            if COUNT_IN_ONE_PASS and len(drawn) <= 32 and self._passes.counts_in_one_pass():  # coverage by the id pass
                self._passes.id_pass(frame, frame.draws, occluders, scene.ground, rect, named=drawn)
                alone = dict(zip((d.index for d in drawn), self._passes.read_coverage(frame, rect, len(drawn))))
            else:
                self._passes.id_pass(frame, frame.draws, occluders, ground=scene.ground, rect=rect)
                # coverage before reading the ids: its read-back waits for both passes at once (each
                # read-back is a wait for llvmpipe's rasteriser thread)
                alone = dict(zip((d.index for d in drawn), self._passes.coverage(frame, drawn, rect)))
            ids = self._passes.target(camera).read_ids(rect)
            visible = np.bincount(ids.ravel(), minlength=len(order) + 1)
            top = camera.height - (rect[1] + rect[3])  # the block's first row, counted from the top
            return {
                n: _pixel_count(ids, order[n] + 1, int(visible[order[n] + 1]), alone.get(order[n], 0), (rect[0], top))
                for n in names
            }

    def skinned_then(self, scene: Scene, camera: Camera, previous_assets: dict[str, str]) -> np.ndarray | None:
        """For optical flow (engine/server/optical_flow.py): (H, W, 4) float32, row 0 at the top,
        holding for every pixel of a GPU-skinned character whose pose differs from
        ``previous_assets[name]`` (its asset id at the previous frame, same rig) the actor-frame
        point (cm) of the same surface in that previous pose, w = 1; zeros elsewhere
        (gl/skin_flow.py). None when no visible character changed pose on the GPU path."""
        with self._using():
            frame = self._frame(scene, camera)
            names = list(scene.actors)
            pairs = []
            for d, vis in zip(frame.draws, frame.visible):
                then_id = previous_assets.get(names[d.index])
                if vis and then_id is not None and then_id != d.asset_id:
                    then = self._skinned_pose_of(names[d.index], d, then_id)
                    if then is not None:
                        pairs.append((d, then))
            if not pairs:
                return None
            return self._passes.skin_flow.draw(frame, pairs, self._passes.bind_alpha)

    def _skinned_pose_of(self, name: str, d: Draw, then_id: str):
        """The buffer of ``then_id``'s pose skinned for the draw ``d`` of actor ``name`` (a second
        buffer of the same rig), or None: not drawn from a GPU-skinned buffer, or another rig."""
        fn = getattr(self._content, "skinned", None)
        if fn is None or not self._gpu_skinning or not (d.asset_id.startswith("character:") and then_id.startswith("character:")):
            return None
        now, then = fn(d.asset_id), fn(then_id)
        if now is None or then is None or now[0].key != then[0].key:
            return None
        entry = self._passes.skinning.buffers.get((now[0].key, name))
        if entry is None or entry[0] is not d.mesh:
            return None
        return self._passes.skinning.posed(then[0], then[1], name + "\0then")

    def drawn_triangles(self, scene: Scene, camera: Camera) -> int:
        """Triangles one frame of ``camera`` draws: the visible actors at their level of detail
        plus the ground tiles in view at their level with their skirts (what the frame's cost follows;
        for benchmarks)."""
        with self._using():
            frame = self._frame(scene, camera)
            ground = sum(c for _, c in frame.ground)
            return ground + sum(d.mesh.n_triangles for d, v in zip(frame.draws, frame.visible) if v)

    def level_mesh(self, asset_id: str, level: int):
        """The :class:`~core.meshes.RenderMesh` a frame draws for ``asset_id`` at ``level`` (the
        content's decimated level or the asset's impostor, gl/impostor.py), or None when that level
        is the full mesh. For inspection (benchmarks/lod_sheet.py)."""
        with self._using():
            full = self._mesh(asset_id)
            if level <= 0:
                return None
            mesh = self._passes.mesh_cache.level_source(asset_id, full, level, self._content)
            return None if mesh is None or mesh.n_triangles >= full.n_triangles else mesh

    def triangle_count(self, scene: Scene) -> int:
        with self._using():
            ground = self._passes.ground_triangles(scene.ground)
            return ground + sum(self._triangles(a.asset_id) for a in scene.actors.values() if not a.hidden)

    def _triangles(self, asset_id: str) -> int:
        """An asset's full-detail triangles; a posed character's from its rig (``content.triangles``)
        when it is drawn skinned on the GPU, so counting builds no CPU-skinned mesh."""
        fn = getattr(self._content, "triangles", None)
        if self._gpu_skinning and fn is not None and asset_id.startswith("character:"):
            return int(fn(asset_id))
        return self._mesh(asset_id).n_triangles

    def info(self) -> dict:
        if self._ctx is None:
            return {"backend": self.name, "closed": True}
        info = self._ctx.info
        return {
            "backend": self.name,
            "gl_renderer": info["GL_RENDERER"],
            "gl_version": info["GL_VERSION"],
            "lod": self._lod,
            "lp_num_threads": os.environ.get("LP_NUM_THREADS", "default"),
        }

    def close(self) -> None:
        with self._lock:
            if self._ctx is not None:
                self._passes.release()
                self._ctx.release()
                self._ctx = None

    # --- internals --------------------------------------------------------------------------
    @contextmanager
    def _using(self):
        """Serialise calls, make the context current on this thread, map GL errors."""
        import moderngl

        with self._lock:
            if self._ctx is None:
                raise RenderError("GL backend is closed")
            try:
                with self._ctx:
                    try:
                        yield
                    finally:  # large targets released, textures trimmed: after the read-back
                        if self._passes is not None:
                            self._passes.after_frame()
            except moderngl.Error as e:
                raise RenderError(f"OpenGL error while rendering: {e}") from e

    def _mesh(self, asset_id: str):
        return self._passes.mesh(asset_id, self._provider)

    def _frame(self, scene: Scene, camera: Camera) -> Frame:
        """The frame of (scene, camera); the last one is kept while the scene holds the same actor
        objects and ground and the camera is equal: a ``render_if_visible`` that passes renders the
        view it has just counted, and the frame (culling, levels of detail, ground tiles: ~0.5 ms
        for a city) is the same. Passes only read a frame."""
        full, centers, radii = self._scene_draws(scene)
        last = self._frame_cache
        if last is not None and last[0] is self._draws_cache and last[1] is scene.ground and last[2] == camera:
            return last[3]
        frame = self._new_frame(scene, camera, full, centers, radii)
        self._frame_cache = (self._draws_cache, scene.ground, camera, frame)
        return frame

    def _new_frame(self, scene: Scene, camera: Camera, full: list[Draw], centers: np.ndarray, radii: np.ndarray) -> Frame:
        """``full``: the scene's draws at full detail (shared by its frames, never changed: a draw
        at a level of detail is a new ``Draw`` in this frame's list)."""
        draws = list(full)
        g = scene.ground
        near, far = F.near_far(camera, centers, radii, g.extent, abs(g.relief_amplitude))
        vp = F.view_proj(camera, near, far)
        planes = F.frustum_planes(vp)
        visible = F.spheres_in_frustum(planes, centers, radii)
        levelled = self._choose_levels(camera, draws, visible) if self._lod else ()
        ground = self._passes.ground_draws(g, camera, planes, self._lod)
        return Frame(camera, near, far, vp, draws, visible, planes, centers, radii, levelled, ground)

    def _scene_draws(self, scene: Scene) -> tuple[list[Draw], np.ndarray, np.ndarray]:
        """The camera-independent part of a frame: each drawn actor's mesh, placement and world
        bounding sphere. Kept while the scene holds the same actor objects (an ``Actor`` is
        immutable: any edit replaces it), so the pixel counts of many candidate views of one scene
        and its render do not redo it (~1 ms per frame for 250 actors)."""
        actors = list(scene.actors.values())
        cached = self._draws_cache
        if cached is not None and len(cached[0]) == len(actors) and all(map(operator.is_, cached[0], actors)):
            return cached[1], cached[2], cached[3]
        draws = []
        self._passes.skinning.begin()
        for i, (name, actor) in enumerate(scene.actors.items()):
            if actor.hidden:
                continue
            mesh = self._skinned(name, actor.asset_id) or self._mesh(actor.asset_id)
            if mesh.n_triangles == 0:
                continue
            placed = F.placed(actor.transform)
            c, r = F.world_sphere(placed, mesh.center, mesh.radius)
            draws.append(Draw(i, actor.asset_id, mesh, mesh, placed, c, r, actor.tint))
        centers = np.array([d.center for d in draws]).reshape(-1, 3)
        radii = np.array([d.radius for d in draws], dtype=np.float64)
        self._draws_cache = (actors, draws, centers, radii)
        return draws, centers, radii

    def _skinned(self, name: str, asset_id: str):
        """The actor's pose skinned on the GPU (gl/skinning.py), or None: not a character, GPU
        skinning off, no rig from the content, or a rig too big for the context's uniforms."""
        if not self._gpu_skinning or not asset_id.startswith("character:"):
            return None
        fn = getattr(self._content, "skinned", None)
        got = fn(asset_id) if fn is not None else None
        if got is None or not self._passes.skinning.supports(got[0]):
            return None
        return self._passes.skinning.posed(got[0], got[1], name)

    def _choose_levels(self, camera: Camera, draws: list[Draw], visible: np.ndarray) -> tuple[int, ...]:
        """Each visible actor's level of detail for this camera (gl/lod.py): a function of its
        mesh, bounding sphere and the camera only. A draw at a level is replaced in ``draws`` by
        a new ``Draw`` (the scene's full-detail ones are shared by its frames); returns their
        positions."""
        eye = np.asarray(camera.location, dtype=np.float64)
        levelled = []
        for k in np.flatnonzero(visible).tolist():
            d = draws[k]
            level = L.level_for(d.mesh.n_triangles, d.radius, float(np.linalg.norm(d.center - eye)), camera.focal_px)
            if level:
                mesh = self._passes.mesh_level(d.asset_id, d.caster, level, self._content)
                if mesh is not d.mesh:
                    draws[k] = Draw(d.index, d.asset_id, mesh, d.caster, d.placed, d.center, d.radius, d.tint)
                    levelled.append(k)
        return tuple(levelled)

    def _read(self, scene: Scene, frame: Frame, kinds: tuple[str, ...]) -> dict[str, np.ndarray]:
        t, cam, out = self._passes.target(frame.camera), frame.camera, {}
        if "lit" in kinds:
            out["lit"] = t.read_color()
        if "normal" in kinds:
            out["normal"] = t.read_normal()
        if "instance_id" in kinds or "object_mask" in kinds:
            ids = t.read_ids()
            if "instance_id" in kinds:
                out["instance_id"] = ids
            if "object_mask" in kinds:
                out["object_mask"] = np.take(_palette(scene), ids, axis=0)  # 3.7x faster than pal[ids]
        if "depth" in kinds or "plane_depth" in kinds:
            planar = F.planar_depth(t.read_depth(), frame.near, frame.far)
            if "plane_depth" in kinds:
                out["plane_depth"] = planar
            if "depth" in kinds:
                out["depth"] = planar * F.ray_factor(cam.width, cam.height, cam.focal_px)
        return {k: out[k] for k in kinds}


def _pixel_count(ids: np.ndarray, instance: int, visible: int, unoccluded: int, origin: tuple[int, int] = (0, 0)) -> PixelCount:
    """Hidden, empty or out-of-frustum actors were never drawn: 0 / 0 / None. ``ids`` may be a
    block of the image whose top-left pixel is ``origin`` (x, y from the top)."""
    if not visible:
        return PixelCount(visible, unoccluded, None)
    x0, y0, x1, y1 = _bbox(ids == instance)
    return PixelCount(visible, unoccluded, (x0 + origin[0], y0 + origin[1], x1 + origin[0], y1 + origin[1]))


def _palette(scene: Scene) -> np.ndarray:
    """Instance id → object-mask colour (id 0, ground and sky, is black)."""
    pal = np.zeros((len(scene.actors) + 1, 3), dtype=np.uint8)
    for i, actor in enumerate(scene.actors.values()):
        pal[i + 1] = actor.color
    return pal


def _bbox(mask: np.ndarray) -> tuple[int, int, int, int] | None:
    """Inclusive (x0, y0, x1, y1) of the True pixels (row 0 = top)."""
    rows = np.flatnonzero(mask.any(axis=1))
    if len(rows) == 0:
        return None
    cols = np.flatnonzero(mask.any(axis=0))
    return int(cols[0]), int(rows[0]), int(cols[-1]), int(rows[-1])
