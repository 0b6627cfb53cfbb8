"""Skinned characters in the server (issue 49 item 2): posed asset ids and their meshes.

A character actor's asset id names its pose:

    character:<class>:<variant>:<clip>:<k>[:props]      e.g. character:horse:2:walk:96

``:props`` draws the actor's optional props (helmets, shields, weapons; off without it: no
spear-carrying hoplites unless a scene asks), hung on their bones, as part of the one mesh.

``k`` is the clip phase in 1/:data:`PHASES` of a cycle (``phase = k / PHASES``), so a walking
horse is a finite set of meshes that the caches can bound. ``vset /sceneforge/character_poses``
(commands/characters.py) moves an actor to another pose by changing its asset id; every pass
(lit, depth, normals, instance masks: one id per character, its props included, since a posed
character is one mesh) then draws the skinned mesh. The GL renderer skins on the GPU
(:meth:`CharacterMeshes.skinned`: the variant's rig, uploaded once, and the pose's palette of bone
matrices, kept per posed id; gl/skinning.py); :meth:`CharacterMeshes.mesh` is the same pose
skinned on the CPU (numpy, ~3 ms for 1,000 vertices with the foot lock), for the Cycles renderer,
the fallback and the tests. Optical flow moves each pixel of a character by its own skinning
(gl/skin_flow.py; without the GPU path, by the nearest skinned vertices, optical_flow.py).

The library (``assets_manifest.characters.CharacterLibrary``) is handed in by the entry point,
like the asset library: this module knows no asset package.
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from typing import Any

from sceneforge.core.errors import AssetError
import numpy as np

from sceneforge.core.meshes import RenderMesh, SkinRig

PREFIX = "character:"
PHASES = 256
CLIPS = ("walk", "run", "idle")
KEPT = 512  # posed meshes kept on the CPU side (a few clips' worth of every pose)
PALETTES_KEPT = 4096  # GPU-skinning palettes kept (<= 4 KB each: 60 slots x 64 B at most in the pack)
_ID = re.compile(r"^character:([a-z][a-z_]{0,31}):(\d{1,3}):(walk|run|idle):(\d{1,3})(:props)?$")
PROPS = ":props"


def is_character(asset_id: str) -> bool:
    return isinstance(asset_id, str) and asset_id.startswith(PREFIX)


def posed_id(cls: str, variant: int, clip: str, phase: float, props: bool = False) -> str:
    """The asset id of ``cls``'s ``variant`` at ``clip`` / ``phase`` (cycles; wraps, quantised),
    with its optional props when ``props``."""
    k = int(round((float(phase) % 1.0) * PHASES)) % PHASES
    return f"{PREFIX}{cls}:{int(variant)}:{clip}:{k}" + (PROPS if props else "")


def has_props(asset_id: str) -> bool:
    """Whether a (valid) posed id draws the optional props."""
    return isinstance(asset_id, str) and asset_id.endswith(PROPS)


def parse(asset_id: str) -> tuple[str, int, str, float]:
    """(class, variant, clip, phase) of a posed id; AssetError naming it otherwise."""
    m = _ID.match(asset_id) if isinstance(asset_id, str) else None
    if m is None or int(m.group(4)) >= PHASES:
        raise AssetError(
            f"bad character id {str(asset_id)[:80]!r}: "
            f"expected character:<class>:<variant>:<walk|run|idle>:<0..{PHASES - 1}>[:props]"
        )
    return m.group(1), int(m.group(2)), m.group(3), int(m.group(4)) / PHASES


class CharacterMeshes:
    """Posed meshes of a character library, least recently used dropped beyond :data:`KEPT`."""

    def __init__(self, library: Any):
        self.library = library
        self._meshes: OrderedDict[str, RenderMesh] = OrderedDict()
        self._palettes: OrderedDict[str, np.ndarray] = OrderedDict()  # posed id -> palette (a few KB each)
        self._lock = threading.Lock()

    def classes(self) -> list[str]:
        return list(self.library.classes())

    def knows(self, asset_id: str) -> bool:
        try:
            cls, variant, _clip, _ph = parse(asset_id)
        except AssetError:
            return False
        return cls in self.library.classes() and 0 <= variant < self.library.n_variants(cls)

    def resolve(self, asset_id: str) -> str:
        cls, variant, _clip, _ph = parse(asset_id)
        if cls not in self.library.classes():
            raise AssetError(f"no character class {cls!r} in the pack (has {', '.join(self.library.classes())})")
        if not 0 <= variant < self.library.n_variants(cls):
            raise AssetError(f"character {cls!r} has variants 0..{self.library.n_variants(cls) - 1}, not {variant}")
        return asset_id

    def skinned(self, asset_id: str) -> tuple[SkinRig, np.ndarray] | None:
        """(rig, palette) of a posed id for a renderer that skins on the GPU (the bind pose, built
        once per variant, and this pose's bone matrices), or None when the library has no rigs (the
        renderer then draws :meth:`mesh`, skinned on the CPU)."""
        if not hasattr(self.library, "rig"):
            return None
        cls, variant, clip, phase = parse(self.resolve(asset_id))
        props = has_props(asset_id)
        rig = self.library.rig(cls, variant, props=props)
        with self._lock:
            palette = self._palettes.get(asset_id)
            if palette is not None:
                self._palettes.move_to_end(asset_id)
        if palette is None:  # a pose's bones (with the foot lock's IK: 1-3 ms), kept: datasets revisit poses
            palette = self.library.palette(cls, variant, clip, phase, props=props)
            palette.setflags(write=False)
            with self._lock:
                self._palettes[asset_id] = palette
                while len(self._palettes) > PALETTES_KEPT:
                    self._palettes.popitem(last=False)
        return rig, palette

    def mesh(self, asset_id: str) -> RenderMesh:
        with self._lock:
            if asset_id in self._meshes:
                self._meshes.move_to_end(asset_id)
                return self._meshes[asset_id]
        cls, variant, clip, phase = parse(self.resolve(asset_id))
        mesh = self.library.mesh(cls, variant, clip, phase, asset_id, props=has_props(asset_id))
        with self._lock:
            self._meshes[asset_id] = mesh
            while len(self._meshes) > KEPT:
                self._meshes.popitem(last=False)
        return mesh
