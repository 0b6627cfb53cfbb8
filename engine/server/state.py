"""Everything one render server holds between commands: the scene, assets, renderer, output dir.

Commands that change something or render run on the server's single worker thread (see
``app.py``), which is also the thread that owns the GL context (moderngl standalone contexts are
bound to the thread that created them: using one from another thread fails with "cannot create
renderbuffer", checked on this machine). Commands that only read (``access=READ`` in the command
table) may also run on a connection thread. :attr:`ServerState.lock` keeps them apart from the
worker's edits: the worker holds it while it runs a command, except inside :meth:`with_backend`
(the renderer only reads the scene, and nothing else writes while the worker renders), so a read
sees the scene before or after an edit, never half of one, and does not wait for a frame.
"""

from __future__ import annotations

import logging
import os
import re
import threading
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator, TypeVar

import numpy as np

from sceneforge.core.errors import CommandError, PathSecurityError, RenderError
from sceneforge.engine import limits, render_kinds
from sceneforge.engine.limits import shown
from sceneforge.engine.server.backend import MeshProvider, RenderBackend
from sceneforge.engine.server.catalog import AssetCatalog
from sceneforge.engine.server.renderers import DEFAULT_RENDERER, backend_factory
from sceneforge.engine.server.unrealcv_state import UnrealcvState
from sceneforge.engine.world import Actor, Camera, Scene, instance_color

log = logging.getLogger(__name__)

MAX_CAMERAS = 64
T = TypeVar("T")
_SAFE_NAME = re.compile(r"^[A-Za-z0-9_.\-]+$")


def default_backend_factory(mesh_provider: MeshProvider, threads: int) -> RenderBackend:
    """The default renderer of :mod:`engine.server.renderers` (the embedded GL rasteriser)."""
    return backend_factory(DEFAULT_RENDERER)(mesh_provider, threads)


@dataclass
class ServerState:
    """The scene and its resources. ``output_dir`` None means file outputs are refused."""

    catalog: AssetCatalog
    output_dir: Path | None = None
    threads: int = 1
    port: int = 0
    backend_factory: Callable[[MeshProvider, int], RenderBackend] = default_backend_factory
    serving: dict = field(default_factory=dict)  # what the server was started with: packs, licenses, renderer
    scene: Scene = field(default_factory=Scene)
    spawned: int = 0  # instance colours are never reused within a scene (until reset)
    file_counter: int = 0
    unrealcv: UnrealcvState = field(default_factory=UnrealcvState)  # compat-only settings
    passed: dict = field(default_factory=dict)  # render_if_visible tokens whose view passed (newest last)
    max_request_pixels: int = limits.MAX_REQUEST_PIXELS  # budget of one request: pixels x passes
    max_scene_triangles: int = limits.MAX_SCENE_TRIANGLES  # budget of the scene a render draws
    _mesh_triangles: dict = field(default_factory=dict, repr=False, compare=False)  # asset id -> count
    busy_s: float = 0.0  # wall seconds the worker has spent running commands (``/sceneforge/info``): a
    # benchmark's wall time minus this is how long the server waited for requests
    _backend: RenderBackend | None = None
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)
    _lock_owner: int | None = field(default=None, repr=False, compare=False)

    PASSED_KEPT = 1024  # tokens remembered (a sampler's candidates of one sample share one)

    def mark_passed(self, token: str) -> None:
        """Remember that a ``render_if_visible`` request with ``token`` passed (bounded: oldest dropped)."""
        self.passed[token] = True
        while len(self.passed) > self.PASSED_KEPT:
            del self.passed[next(iter(self.passed))]

    @contextmanager
    def locked(self) -> Iterator[None]:
        """Hold :attr:`lock` for one command (the worker, or a connection thread for a read)."""
        with self.lock:
            self._lock_owner = threading.get_ident()
            try:
                yield
            finally:
                self._lock_owner = None

    @contextmanager
    def _unlocked(self) -> Iterator[None]:
        """Let reads in while the renderer works (only when this thread holds :attr:`lock`)."""
        if self._lock_owner != threading.get_ident():
            yield
            return
        self._lock_owner = None
        self.lock.release()
        try:
            yield
        finally:
            self.lock.acquire()
            self._lock_owner = threading.get_ident()

    # --- renderer --------------------------------------------------------------------------
    def backend(self) -> RenderBackend:
        """The renderer, created on first use in the calling (worker) thread."""
        if self._backend is None:
            self._backend = self.backend_factory(self.catalog.mesh, self.threads)
            log.info("renderer ready: %s", self._backend.info())
        return self._backend

    def render(self, cam_id: int, kinds: tuple[str, ...]) -> dict[str, np.ndarray]:
        camera = self.camera(cam_id)  # a bad id fails before the renderer starts
        self.check_budget(camera, len(kinds), "render")
        renderer = getattr(self.backend(), "renderer", "")  # a backend without a name is not in the table
        if renderer:  # a kind this renderer lacks: one line, and the renderer is not reset
            kinds = render_kinds.require(renderer, kinds, CommandError)
        return self.with_backend(lambda b: b.render(self.scene, camera, kinds))

    def check_budget(self, camera: Camera, passes: int, what: str) -> None:
        """Refuse a request of ``passes`` images (each kind asked for is one, a visibility count
        one) of ``camera``'s size when width x height x passes is over ``max_request_pixels``,
        before anything is drawn or allocated."""
        cost = camera.width * camera.height * passes
        if cost > self.max_request_pixels:
            raise CommandError(
                f"{what}: {camera.width}x{camera.height} px x {passes} pass(es) = {cost} "
                f"pixel-passes; at most {self.max_request_pixels} per request "
                "(--max-request-pixels)"
            )
        triangles = self.scene_triangles()
        if triangles > self.max_scene_triangles:
            raise CommandError(
                f"{what}: the scene's visible actors have {triangles} triangles at full detail; "
                f"at most {self.max_scene_triangles} per render (--max-scene-triangles)"
            )

    def scene_triangles(self) -> int:
        """Triangles of the visible actors at full detail (levels of detail draw fewer): the
        up-front cost bound of a frame. Counts are kept per asset id, so a check is one dict
        lookup per actor (~10 ms at the 65,536-actor cap). The ground is bounded separately
        (``limits.MAX_GROUND_CELLS``)."""
        counts, total = self._mesh_triangles, 0
        for actor in self.scene.actors.values():
            if actor.hidden:
                continue
            n = counts.get(actor.asset_id)
            if n is None:  # a posed character counts its rig's (catalog.triangles): no skinning per pose
                n = counts[actor.asset_id] = int(self.catalog.triangles(actor.asset_id))
            total += n
        return total

    def with_backend(self, call: Callable[[RenderBackend], T]) -> T:
        """Run ``call(backend)``; if it fails unexpectedly, drop the renderer so the next command
        gets a fresh one.

        Why: a render that dies half-way (out of memory, a GL error) can leave GL objects in a
        dead state, and every later render of every client would fail until a restart while
        ``vget /unrealcv/status`` still answers. Rebuilding the context costs ~1 s once.

        The worker lets go of :attr:`lock` meanwhile: reads from other clients are answered during
        the frame (the scene cannot change under it: only the worker edits it).
        """
        with self._unlocked():
            return self._call_backend(call)

    def _call_backend(self, call: Callable[[RenderBackend], T]) -> T:
        backend = self.backend()
        try:
            return call(backend)
        except (CommandError, PathSecurityError):
            raise
        except Exception as e:  # noqa: BLE001 - any renderer failure: recover, then report it
            log.exception("render failed; recreating the renderer")
            try:
                backend.close()
            except Exception:  # noqa: BLE001 - the context may already be unusable
                log.exception("closing the failed renderer")
            self._backend = None
            if isinstance(e, MemoryError):
                raise RenderError("render failed: out of memory (scene or image too large)") from None
            raise RenderError(f"render failed ({type(e).__name__}: {str(e)[:200]}); the renderer was reset") from None

    def interrupt(self) -> None:
        """Stop a render in progress, from any thread (shutdown): backends that can (Cycles:
        kills its Blender worker) do; the worker thread then closes the renderer as usual."""
        backend = self._backend
        stop = getattr(backend, "interrupt", None)
        if stop is not None:
            try:
                stop()
            except Exception:  # noqa: BLE001 - shutting down anyway
                log.exception("interrupting the renderer")

    def close(self) -> None:
        if self._backend is not None:
            self._backend.close()
            self._backend = None

    # --- scene lookups -----------------------------------------------------------------------
    def actor(self, name: str) -> Actor:
        try:
            return self.scene.actors[name]
        except KeyError:
            raise CommandError(f"Cannot find object {name!r}") from None  # the plugin's wording

    def camera(self, cam_id: int) -> Camera:
        try:
            return self.scene.cameras[cam_id]
        except KeyError:
            raise CommandError(f"Invalid sensor id {cam_id} (cameras: {sorted(self.scene.cameras)})") from None

    def camera_for_update(self, cam_id: int) -> Camera:
        """Existing camera, or the next one (copying camera 0's optics). Ids stay contiguous
        (0..n-1) as in UE: the official API counts ``vget /cameras`` and asks ids below it."""
        if cam_id in self.scene.cameras:
            return self.scene.cameras[cam_id]
        if cam_id != len(self.scene.cameras) or cam_id >= MAX_CAMERAS:
            raise CommandError(
                f"Invalid sensor id {cam_id}: create cameras in order (next id "
                f"{len(self.scene.cameras)}, at most {MAX_CAMERAS}) or with vset /cameras/spawn"
            )
        base = self.scene.cameras.get(0, Camera())
        return Camera(fov_deg=base.fov_deg, width=base.width, height=base.height)

    def next_color(self) -> tuple[int, int, int]:
        color = instance_color(self.spawned)
        self.spawned += 1
        return color

    def reset(self) -> None:
        self.scene.actors.clear()
        self.spawned = 0
        self.unrealcv.labels.clear()
        self.unrealcv.previous_frame.clear()

    # --- file outputs ------------------------------------------------------------------------
    def output_path(self, filename: str) -> Path:
        """Resolve a client-given file name inside ``output_dir``; anything else is refused."""
        if self.output_dir is None:
            raise PathSecurityError("this server has no --output-dir; ask for png/bmp/npy bytes instead")
        parts = filename.replace("\\", "/").split("/")
        if filename.startswith(("/", "~")) or os.path.isabs(filename) or ".." in parts:
            raise PathSecurityError(f"file name {filename!r} must be relative, without '..'")
        if any(len(p) > 255 for p in parts):
            raise PathSecurityError(f"file name {filename[:40]!r}...: a path component is longer than 255 characters")
        if not all(_SAFE_NAME.match(p) for p in parts):
            raise PathSecurityError(f"file name {filename!r}: use letters, digits, '_', '-', '.', '/' only")
        try:
            root = self.output_dir.resolve()
            path = (root / Path(*parts)).resolve()
        except (RuntimeError, OSError) as e:  # a symlink loop (RuntimeError before Python 3.13)
            raise PathSecurityError(
                f"file name {shown(filename, 80)} cannot be resolved inside the output "
                f"directory: {'symlink loop' if 'loop' in str(e).lower() else e}"
            ) from None
        if root != path and root not in path.parents:
            raise PathSecurityError(f"file name {filename!r} leaves the output directory")
        return path

    def auto_filename(self, kind: str, ext: str) -> str:
        self.file_counter += 1
        return f"{kind}_{self.file_counter:06d}.{ext}"
