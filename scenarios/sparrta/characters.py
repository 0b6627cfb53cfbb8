"""Skinned 0 A.D. characters in SpaRRTa still scenes (opt-in ``characters: true``, issue 49 item 4).

With the character pack installed (``sceneforge assets install characters``), a labelled object
or allo viewpoint figure whose class the pack has (human, deer, bear, fox, ...) is drawn as a
character in a pose drawn from the scene group's RNG: a variant (a person, a coat), a clip
(``idle`` or ``walk``, whichever the character has) and a phase (one of the server's
``PHASES`` steps, so ``walk`` gives mid-stride poses). The pose is baked into the asset id
``character:<class>:<variant>:<clip>:<k>`` (engine/server/characters.py), so the server draws the
skinned mesh in every pass and the instance mask is the character. Its footprint, height and
silhouette come from that posed mesh, so the placement, projection and visibility rules run
unchanged on what is drawn; the labels never depend on the asset (positions only).

A class the pack lacks keeps its normal asset. The facing (the object's yaw; the mesh looks
along its local +X) goes to the sample's params under ``characters``. Props (helmets, shields,
weapons) follow ``character_props`` (``auto``: only where the environment's YAML allows them, none
of the shipped, modern environments): the id gets ``:props`` and the footprint, height and
silhouette are the posed mesh's with them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sceneforge.core.errors import ConfigError
from sceneforge.scenarios.sampling.rejection import AssetShape

PREFIX = "character:"
PHASES = 256  # the server's phase steps per cycle (engine/server/characters.py)
POSE_CLIPS = ("idle", "walk")  # still scenes: standing, or caught mid-stride
LICENSE = "cc-by-sa-3.0"
PROPS = ":props"  # the posed id's suffix for the optional props (engine/server/characters.py)


def is_character(asset_id: str) -> bool:
    return str(asset_id).startswith(PREFIX)


def parse(asset_id: str) -> tuple[str, int, str, int]:
    """``character:<class>:<variant>:<clip>:<k>[:props]`` -> (class, variant, clip, k)."""
    _, cls, variant, clip, k = asset_id.removesuffix(PROPS).split(":")
    return cls, int(variant), clip, int(k)


def has_props(asset_id: str) -> bool:
    """Whether the posed id draws the character's optional props (helmets, shields, weapons)."""
    return str(asset_id).endswith(PROPS)


def load_pack():
    """The installed CharacterLibrary; ConfigError in one line when the pack is missing."""
    from sceneforge.assets_manifest.characters import CharacterLibrary  # the asset package (trimesh): only with characters

    lib = CharacterLibrary.installed()
    if lib is None:
        raise ConfigError("characters: true needs the character pack: run `sceneforge assets install characters` first")
    return lib


@dataclass(frozen=True)
class _Info:
    """What the scene graph asks of an asset's info (its class), for a character id."""

    id: str
    cls: str
    license: str = LICENSE


class CharacterAssets:
    """The environment's asset library with the posed characters' ids known too (class, size):
    the scene graph describes every spawned actor through it. Everything else is forwarded."""

    def __init__(self, lib, shapes: "CharacterShapes"):
        self._lib, self._shapes = lib, shapes

    def info(self, asset_id: str):
        if is_character(asset_id):
            return _Info(asset_id, parse(asset_id)[0])
        return self._lib.info(asset_id)

    def size_cm(self, asset_id: str) -> tuple[float, float, float]:
        if is_character(asset_id):
            lo, hi = self._shapes.bounds(asset_id)
            return tuple(float(v) for v in hi - lo)
        return self._lib.size_cm(asset_id)

    def __getattr__(self, name: str):
        return getattr(self._lib, name)


class CharacterShapes:
    """A ShapeCache whose ``pick`` draws a posed character for a class the pack has (variant,
    clip, phase from the caller's RNG) and the normal asset otherwise."""

    def __init__(self, base, pack, props: bool = False):
        self.base, self.pack, self.props = base, pack, bool(props)
        self.lib = CharacterAssets(base.lib, self)
        self._classes = set(pack.classes())
        self._shapes: dict[str, AssetShape] = {}
        self._bounds: dict[str, np.ndarray] = {}

    def _vertices(self, asset_id: str) -> np.ndarray:
        cls, variant, clip, k = parse(asset_id)
        return np.asarray(self.pack.mesh(cls, variant, clip, k / PHASES, asset_id, props=has_props(asset_id)).vertices, float)

    def bounds(self, asset_id: str) -> np.ndarray:
        if asset_id not in self._bounds:
            v = self._vertices(asset_id)
            self._bounds[asset_id] = np.stack([v.min(axis=0), v.max(axis=0)])
        return self._bounds[asset_id]

    def __call__(self, asset_id: str) -> AssetShape:
        if not is_character(asset_id):
            return self.base(asset_id)
        if asset_id not in self._shapes:
            (x0, y0, _), (x1, y1, z1) = self.bounds(asset_id)
            footprint = np.array([[x0, y0], [x1, y0], [x1, y1], [x0, y1]], float)  # the posed mesh's box
            self._shapes[asset_id] = AssetShape(
                asset_id, parse(asset_id)[0], footprint, float(z1), silhouette=lambda: self._vertices(asset_id)
            )
        return self._shapes[asset_id]

    def pick(self, rng: np.random.Generator, cls: str) -> AssetShape:
        if cls not in self._classes:
            return self.base.pick(rng, cls)
        variant = int(rng.integers(self.pack.n_variants(cls)))
        clips = [c for c in POSE_CLIPS if c in self.pack.character(cls, variant).clips]
        clip = clips[int(rng.integers(len(clips)))]
        k = int(rng.integers(PHASES))
        return self(f"{PREFIX}{cls}:{variant}:{clip}:{k}" + (PROPS if self.props else ""))


def params_block(objs: dict) -> dict:
    """The params' ``characters``: {object name: class, variant, clip, phase, facing_deg, licence}
    of the objects drawn as characters ({} when none). ``facing_deg``: the yaw the character
    looks along (UnrealCV degrees, its mesh's +X turned by the object's yaw)."""
    out = {}
    for name, p in sorted(objs.items()):
        if is_character(p.shape.asset_id):
            cls, variant, clip, k = parse(p.shape.asset_id)
            out[name] = {
                "class": cls,
                "variant": variant,
                "clip": clip,
                "phase": k / PHASES,
                "facing_deg": float(p.yaw),
                "license": LICENSE,
                "props": has_props(p.shape.asset_id),
            }
    return out


def card_block(recs: list[dict]) -> dict:
    """The dataset card's character licence (only when some sample shows a character)."""
    shown = sorted(r["index"] for r in recs if any(is_character(a) for a in r.get("assets", [])))
    if not shown:
        return {}
    pack = load_pack()
    return {
        "license": "CC-BY-SA-3.0",
        "attribution": pack.attribution(),
        "notice": pack.notice(),
        "samples": len(shown),
    }
