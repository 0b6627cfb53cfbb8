"""The installed character pack as a library: classes, variants, posed meshes.

    lib = CharacterLibrary.installed()          # None when `assets install characters` was not run
    lib.classes()                               # ['bear', 'camel', ..., 'human', ...] (those present)
    mesh = lib.mesh("horse", 0, "walk", 0.25)   # RenderMesh: UE axes, cm, origin on the ground, +X forward

A class's variants are the actors listed for it in :data:`model.SPECIES` that exist in the pack
(e.g. eight people, four horse coats). Characters are loaded once and kept; posed meshes are not
(the caller caches what it needs, bounded). ``rig`` + ``palette`` are the same figure for a renderer
that skins on the GPU: the bind pose uploaded once, a few KB of bone matrices per pose. A character
with its optional props (helmets, shields, weapons: ``props=True``) is another character of the same
size (the props do not count in its height).
"""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np

from sceneforge.assets_manifest.characters import actors as A
from sceneforge.assets_manifest.characters import model as M
from sceneforge.assets_manifest.characters.pack import attribution, dataset_notice, installed, pack_root
from sceneforge.core.errors import AssetError
from sceneforge.core.meshes import RenderMesh, SkinRig


class CharacterLibrary:
    """Characters of one installed pack (``root`` = ``<cache>/characters``)."""

    def __init__(self, root: Path, species: dict | None = None, props: bool = False, info: dict | None = None):
        self.root = Path(root)
        self.species = dict(species or M.SPECIES)
        self.props = props  # helmets, shields, weapons: off by default (no spear-carrying hoplites in the City)
        self.info = info or {}
        self._chars: dict[tuple[str, int], M.Character] = {}
        self._rigs: dict[tuple[str, int, bool], SkinRig] = {}
        self._lock = threading.Lock()
        self._present = {
            cls: tuple(a for a in actors if (self.root / A.actor_file(a)).is_file()) for cls, (actors, _h) in self.species.items()
        }

    @classmethod
    def installed(cls, cache_dir=None, **kw) -> "CharacterLibrary | None":
        info = installed(cache_dir)
        return None if info is None else cls(pack_root(cache_dir), info=info, **kw)

    def classes(self) -> list[str]:
        return sorted(c for c, a in self._present.items() if a)

    def n_variants(self, cls: str) -> int:
        return len(self._present.get(cls, ()))

    def actor(self, cls: str, variant: int) -> str:
        actors = self._present.get(cls, ())
        if not actors:
            raise AssetError(f"no character of class {cls!r} in the pack (has {', '.join(self.classes())})")
        return actors[variant % len(actors)]

    def character(self, cls: str, variant: int = 0, props: bool | None = None) -> M.Character:
        """``cls``'s ``variant``, with the actor's optional props (helmets, shields, weapons,
        :data:`model.PROP_ATTACH_OFF`) when ``props`` (default: the library's ``props``)."""
        props = self.props if props is None else bool(props)
        key = (cls, variant % max(self.n_variants(cls), 1), props)
        with self._lock:
            if key not in self._chars:
                self._chars[key] = M.load(self.root, self.actor(cls, variant), cls, self.species[cls][1], props, key[1])
            return self._chars[key]

    def attribution(self) -> str:
        """The credit line of the installed pack (pack.attribution)."""
        return attribution(self.info)

    def notice(self) -> str:
        """The CC-BY-SA paragraph for a dataset that shows characters (pack.dataset_notice)."""
        return dataset_notice(self.info)

    def mesh(
        self,
        cls: str,
        variant: int,
        clip: str,
        phase: float,
        asset_id: str | None = None,
        props: bool | None = None,
        planted: bool = True,
    ) -> RenderMesh:
        """The posed figure (model.Character.mesh); ``planted=False``: the clip's own pose, without
        the foot lock (cheaper: sizes and reach for planning, which the lock does not change by
        more than a few cm)."""
        return self.character(cls, variant, props).mesh(clip, phase, asset_id, planted)

    def rig(self, cls: str, variant: int, props: bool | None = None) -> SkinRig:
        """The bind-pose figure with its skin weights (model.Character.rig), built once per variant
        (and props): what a GPU-skinning renderer uploads once and poses with :meth:`palette`."""
        props = self.props if props is None else bool(props)
        key = (cls, variant % max(self.n_variants(cls), 1), props)
        with self._lock:
            rig = self._rigs.get(key)
        if rig is None:
            rig = self.character(cls, variant, props).rig(f"character:{cls}:{key[1]}" + (":props" if props else ""))
            with self._lock:
                self._rigs[key] = rig
        return rig

    def palette(self, cls: str, variant: int, clip: str, phase: float, props: bool | None = None) -> np.ndarray:
        """(S, 4, 4) float32 skinning palette of a pose (model.Character.palette), for :meth:`rig`."""
        return self.character(cls, variant, props).palette(clip, phase)
