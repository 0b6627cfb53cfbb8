"""The server's view of the asset library: ids, classes, meshes.

The render server only needs four things from an asset source: the ids it knows, each id's class
and size, a way to turn ``vset /objects/spawn truck`` (a class *or* an id) into one asset id, and
the :class:`~core.meshes.RenderMesh` for an id. :class:`AssetCatalog` adapts
an asset library (duck-typed like ``assets_manifest.AssetLibrary``) to exactly that. The library
is *handed in* by the server's entry point (:mod:`engine.server.main`), so this module knows no
asset package and tests can give it any object with ``ids/info/by_class/mesh``.

Two primitives, ``primitive_cube`` (100 cm cube) and ``primitive_sphere`` (100 cm diameter), are
always available, like UE's ``/Engine/BasicShapes``: tests and calibration scripts need geometry
whose extent is known exactly, whatever asset pack is installed.
"""

from __future__ import annotations

import logging
import math
import threading
from collections import OrderedDict
from typing import Any, Callable

import numpy as np

from sceneforge.core.errors import AssetError
from sceneforge.core.meshes import RenderMesh
from sceneforge.engine.limits import WORLD_CONTENT_KEPT, shown
from sceneforge.engine.server import characters as ch

log = logging.getLogger(__name__)

PRIMITIVE_CLASS = "primitive"


def _cube_mesh(size: float = 100.0) -> RenderMesh:
    """Axis-aligned cube, base on z=0, centred in XY; 24 vertices so faces keep flat colours."""
    h = size / 2.0
    corners = np.array([[x, y, z] for x in (-h, h) for y in (-h, h) for z in (0.0, size)], np.float32)
    quads = [(0, 1, 3, 2), (4, 6, 7, 5), (0, 4, 5, 1), (2, 3, 7, 6), (0, 2, 6, 4), (1, 5, 7, 3)]
    verts, faces = [], []
    for q in quads:
        base = len(verts)
        verts.extend(corners[list(q)])
        faces += [(base, base + 1, base + 2), (base, base + 2, base + 3)]
    colors = np.full((len(verts), 3), 200, np.uint8)
    return RenderMesh(np.array(verts), np.array(faces), colors, meta={"id": "primitive_cube"})


def _sphere_mesh(diameter: float = 100.0, rings: int = 24, segments: int = 48) -> RenderMesh:
    """UV sphere resting on z=0 (centre at z = radius)."""
    r = diameter / 2.0
    theta = np.linspace(0.0, math.pi, rings + 1)[:, None]
    phi = np.linspace(0.0, 2 * math.pi, segments, endpoint=False)[None, :]
    xyz = (
        np.stack([np.sin(theta) * np.cos(phi), np.sin(theta) * np.sin(phi), np.cos(theta) * np.ones_like(phi)], axis=-1).reshape(
            -1, 3
        )
        * r
    )
    xyz[:, 2] += r
    faces = []
    for i in range(rings):
        for j in range(segments):
            a, b = i * segments + j, i * segments + (j + 1) % segments
            c, d = a + segments, b + segments
            faces += [(a, c, b), (b, c, d)]
    colors = np.full((len(xyz), 3), 200, np.uint8)
    return RenderMesh(xyz.astype(np.float32), np.array(faces), colors, meta={"id": "primitive_sphere"})


PRIMITIVES = {
    "primitive_cube": (_cube_mesh, (100.0, 100.0, 100.0)),
    "primitive_sphere": (_sphere_mesh, (100.0, 100.0, 100.0)),
}


class AssetCatalog:
    """Asset ids/classes/meshes for the server, backed by an optional ``AssetLibrary``.

    >>> cat = AssetCatalog(None)          # primitives only
    >>> cat.resolve("primitive")          # a class name resolves to its first id
    'primitive_cube'
    """

    def __init__(
        self, library: Any | None = None, loader: Callable[[], Any] | None = None, characters: Callable[[], Any] | None = None
    ) -> None:
        self._library = library
        self._characters_loader = characters  # () -> CharacterLibrary | None, called once on first use
        self._characters: ch.CharacterMeshes | None = None
        self._loader = loader  # called once, on first use (possibly from a warm-up thread)
        self._load_error: str | None = None
        self._load_lock = threading.Lock()
        self._meshes: dict[str, RenderMesh] = {}
        # (kind, id) -> HDRI image / surface Material / None, least recently used first: an HDRI
        # is tens of MB, so only WORLD_CONTENT_KEPT are kept (ids come from clients)
        self._world_content: OrderedDict[tuple[str, str], object] = OrderedDict()
        self._lib_ids: set[str] | None = None
        self._lock = threading.Lock()

    @classmethod
    def deferred(cls, loader: Callable[[], Any], characters: Callable[[], Any] | None = None) -> "AssetCatalog":
        """Load on first use (or :meth:`warm`): importing a library pulls in trimesh, which
        costs seconds, and the server should be listening before that."""
        return cls(loader=loader, characters=characters)

    @property
    def characters(self) -> ch.CharacterMeshes | None:
        """The posed skinned characters (engine/server/characters.py), or None without the pack."""
        with self._load_lock:
            if self._characters_loader is not None:
                loader, self._characters_loader = self._characters_loader, None
                try:
                    lib = loader()
                except Exception as e:  # noqa: BLE001 - a broken pack must not take the assets down
                    log.error("character pack unavailable: %s: %s", type(e).__name__, e)
                    lib = None
                self._characters = ch.CharacterMeshes(lib) if lib is not None else None
            return self._characters

    def _character_meshes(self) -> ch.CharacterMeshes:
        chars = self.characters
        if chars is None:
            raise AssetError("no character pack on this server (install it: sceneforge assets install characters)")
        return chars

    def warm(self) -> None:
        """Load the library now (call from a background thread); errors surface on first use."""
        try:
            self.library
        except AssetError as e:
            log.error("%s", e)

    @property
    def library(self) -> Any | None:
        with self._load_lock:
            if self._loader is not None:
                loader, self._loader = self._loader, None
                try:
                    self._library = loader()
                except Exception as e:  # reported on every use, not just in the log
                    self._load_error = f"{type(e).__name__}: {e}"
            if self._load_error:
                raise AssetError(f"the asset library failed to load: {self._load_error}")
            return self._library

    # --- listing ---------------------------------------------------------------------------
    def ids(self) -> list[str]:
        lib_ids = list(self.library.ids()) if self.library is not None else []
        return lib_ids + [p for p in PRIMITIVES if p not in lib_ids]

    def asset_class(self, asset_id: str) -> str:
        if ch.is_character(asset_id):
            return ch.parse(asset_id)[0]
        if self._in_library(asset_id):
            return str(self.library.info(asset_id).cls)
        return PRIMITIVE_CLASS

    def size_cm(self, asset_id: str) -> list[float]:
        if ch.is_character(asset_id):
            b = self.mesh(asset_id).bounds()
            return [float(s) for s in b[1] - b[0]]
        if self._in_library(asset_id):
            size = getattr(self.library.info(asset_id), "size_cm", None)
            if size is not None:
                return [float(s) for s in np.ravel(size)]
            b = self.mesh(asset_id).bounds()
            return [float(s) for s in b[1] - b[0]]
        return list(PRIMITIVES[asset_id][1])

    def listing(self) -> list[dict]:
        """JSON-ready rows for ``vget /sceneforge/assets``."""
        return [
            {"id": a, "class": self.asset_class(a), "size_cm": self.size_cm(a), "triangles": self.mesh(a).n_triangles}
            for a in self.ids()
        ]

    # --- lookup ----------------------------------------------------------------------------
    def resolve(self, name: str) -> str:
        """An asset id, or a class name (→ the first id of that class in sorted order)."""
        if ch.is_character(name):
            return self._character_meshes().resolve(name)
        if name in PRIMITIVES or self._in_library(name):
            return name
        if name == PRIMITIVE_CLASS:
            return "primitive_cube"
        if self.library is not None:
            infos = list(self.library.by_class(name) or [])
            if infos:
                return sorted(str(i.id) for i in infos)[0]
        raise AssetError(f"unknown asset or class {name!r} (list them with vget /sceneforge/assets)")

    def mesh(self, asset_id: str) -> RenderMesh:
        """The normalised mesh (cached); the server's :data:`MeshProvider`."""
        if ch.is_character(asset_id):  # posed: bounded cache of their own
            return self._character_meshes().mesh(asset_id)
        with self._lock:
            if asset_id not in self._meshes:
                self._meshes[asset_id] = self._load_mesh(asset_id)
            return self._meshes[asset_id]

    def triangles(self, asset_id: str) -> int:
        """Triangles of an asset at full detail. A posed character's count is its variant's (the
        rig's, the same in every pose): no CPU skinning of each new pose just to count it."""
        if ch.is_character(asset_id):
            got = self.skinned(asset_id)
            if got is not None:
                return got[0].mesh.n_triangles
        return self.mesh(asset_id).n_triangles

    def skinned(self, asset_id: str):
        """(core.meshes.SkinRig, palette) of a posed character for a renderer that skins on the GPU
        (engine/server/characters.py ``CharacterMeshes.skinned``), or None: not a character, or a
        library without rigs (the renderer draws :meth:`mesh`, skinned on the CPU)."""
        if not ch.is_character(asset_id):
            return None
        return self._character_meshes().skinned(asset_id)

    def mesh_lod(self, asset_id: str, budget: int) -> RenderMesh | None:
        """The library's simplified mesh (a level of detail, ``AssetLibrary.mesh_lod``), or None
        when there is none (primitives, a library without levels): the renderer then draws the
        full mesh."""
        if ch.is_character(asset_id):
            return None
        fn = getattr(self.library, "mesh_lod", None) if self._in_library(asset_id) else None
        return None if fn is None else fn(asset_id, budget)

    # --- world content (issue 14): HDRIs and ground surfaces by id ---------------------------
    def hdri(self, hdri_id: str):
        """Linear float32 (H, W, 3) equirect image, or None when the library has no such HDRI (or
        no HDRIs at all): the renderer then falls back to its procedural sky."""
        return self._content("hdri", hdri_id)

    def surface(self, surface_id: str):
        """A ground :class:`~core.meshes.Material`, or None (the renderer's procedural fallback)."""
        return self._content("surface", surface_id)

    def hdri_ids(self) -> list[str]:
        fn = getattr(self.library, "hdri_ids", None) if self.library is not None else None
        return list(fn()) if fn is not None else []

    def check_world_ids(self, hdri: str | None, surface: str | None) -> None:
        """Refuse an HDRI or ground-surface id the library's catalogue does not list (AssetError,
        one line): a client's ids are checked *before* anything is looked up or cached.

        Ids the catalogue lists but this machine has not built (offline: no HDRI files) pass:
        the renderer falls back to the procedural sky / ground as before. Without a library, or
        one that serves no world content, every id passes (nothing is ever loaded for it)."""
        try:
            lib = self.library
        except AssetError:
            return  # reported on every render already; the fallbacks apply
        if lib is None:
            return
        if hdri is not None and getattr(lib, "hdri", None) is not None and not self._known_hdri(lib, hdri):
            known = self.hdri_ids()
            raise AssetError(
                f"world.sky.hdri: unknown HDRI {shown(hdri, 60)}{'; built here: ' + ', '.join(known[:20]) if known else ''}"
            )
        if surface is not None and getattr(lib, "surface", None) is not None:
            ids = getattr(lib, "surface_ids", None)
            known = list(ids()) if ids is not None else None
            if known is not None and surface not in known:
                raise AssetError(
                    f"world.ground.surface: unknown surface {shown(surface, 60)}; known: {', '.join(sorted(known)[:40])}"
                )

    @staticmethod
    def _known_hdri(lib, hdri: str) -> bool:
        info = getattr(lib, "hdri_info", None)
        if info is None:  # no catalogue to ask: what the library lists as built
            ids = getattr(lib, "hdri_ids", None)
            return ids is None or hdri in set(ids())
        try:
            info(hdri)
        except (KeyError, AssetError):
            return False
        return True

    def _content(self, kind: str, ident: str):
        fn = getattr(self.library, kind, None) if self.library is not None else None
        if fn is None:
            return None
        with self._lock:
            key = (kind, ident)
            if key in self._world_content:
                self._world_content.move_to_end(key)
                return self._world_content[key]
            try:
                value = fn(ident)
            except (KeyError, AssetError, FileNotFoundError) as e:
                log.warning("%s %s not available: %s", kind, shown(ident), shown(str(e)))
                value = None
            self._world_content[key] = value
            while len(self._world_content) > WORLD_CONTENT_KEPT:
                self._world_content.popitem(last=False)
            return value

    def _load_mesh(self, asset_id: str) -> RenderMesh:
        if self._in_library(asset_id):
            return self.library.mesh(asset_id)
        if asset_id in PRIMITIVES:
            return PRIMITIVES[asset_id][0]()
        raise AssetError(f"unknown asset {asset_id!r}")

    def _in_library(self, asset_id: str) -> bool:
        if self.library is None:
            return False
        if self._lib_ids is None:
            try:
                self._lib_ids = set(self.library.ids())
            except Exception:  # a broken library must not hide the primitives
                log.exception("asset library failed to list ids")
                self._lib_ids = set()
        return asset_id in self._lib_ids
