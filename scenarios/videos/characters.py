"""Skinned characters as the subject and distractors of a clip (opt-in ``characters: true``).

With the character pack installed (``sceneforge assets install characters``), an actor whose
class the pack has (human, deer, bear, fox, husky, camel among the library's classes) is drawn
as a 0 A.D. character instead of its rigid asset: the server's ``character:`` asset ids and one
``vset /sceneforge/character_poses`` per frame (engine/server/characters.py). The actor's track
(its location and yaw per frame: every DSI answer) is unchanged; only what is drawn differs.

Per actor (:func:`plan`): the variant (a coat, a person) and phase offset come from the clip's
``CHARACTER_STREAM``; per frame the ground speed along the track picks the clip (``idle`` below
``STAND_CMS``; ``run`` when the speed is nearer the run's natural speed than the walk's, in log
terms) and the phase advances by ``speed / stride`` cycles per second, the stride measured from
the clip's own planted feet (assets_manifest/characters/motion.py); a standing actor plays its
idle cycle at its own rate. The mesh is placed at the track point plus the clip's within-cycle
root surge along the heading (``root_cm(phase) - stride x phase``, a few cm), so the feet push
the body. A turn counts as ground covered by the feet (``|yaw rate| x`` a third of the body's
length), so a character turning in place walks round rather than idling. Real heights per
species (``model.SPECIES``) replace the asset's box.

The clip record gets ``characters`` (class, variant, actor, licence per actor) and every frame's
state goes to gt/frames.jsonl; the dataset card carries the CC-BY-SA attribution.

Props (helmets, shields, weapons hung on the actor's bones) follow ``character_props``
(:func:`props_on`: ``auto`` draws them only where the environment's YAML allows them, none of the
shipped, modern environments; ``on``; ``off``); the server draws them as part of the character's
one mesh (``...:props`` ids), so its instance mask includes them.

Classes only the pack has (horse, wolf, elephant, zebra, ...) may be named in ``subjects``:
:class:`WithPackClasses` adds them to the asset library the scenario reads, as one asset id per
class (``character:<class>``, :func:`pack_asset`) whose box is the character's own (variant 0,
walk, phase 0: the species' real height, :data:`model.SPECIES`), so the motion sampler, the
scene graphs and the ground truth size them like any asset; such an actor is always drawn as a
character (never sent to the server under that id).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from sceneforge.engine.world import Actor, Transform
from sceneforge.scenarios.videos import motion as mo
from sceneforge.scenarios.videos.frames import render_frame_loop

CHARACTER_STREAM = 6  # the clip's seed stream for variants and phases (5: rigs' gait phases)
STAND_CMS = 5.0
PHASES = 256  # the server quantises phases to 1/256 of a cycle (engine/server/characters.py)
ASSET_PREFIX = "character:"  # a pack-only class's asset id: character:<class>
LICENSE = "cc-by-sa-3.0"


def pack_asset(cls: str) -> str:
    """The asset id a pack-only class has in the scenario's library (records, gt): ``character:<cls>``."""
    return f"{ASSET_PREFIX}{cls}"


def is_pack_asset(asset_id: str) -> bool:
    return isinstance(asset_id, str) and asset_id.startswith(ASSET_PREFIX)


@dataclass(frozen=True)
class PackInfo:
    """What the scenario asks of an asset's info, for a pack-only class."""

    id: str
    cls: str
    license: str = LICENSE
    attribution: str = ""
    origin: str = "characters"


class WithPackClasses:
    """The asset library plus ``classes`` that only the character pack has (see the module
    docstring). Everything else is the library's own answer."""

    def __init__(self, library, pack, classes):
        self._library, self._pack = library, pack
        self._infos = {pack_asset(c): PackInfo(pack_asset(c), c, attribution=pack.attribution()) for c in classes}
        self._sizes: dict[str, tuple[float, float, float]] = {}

    def __getattr__(self, name: str):
        return getattr(self._library, name)

    def info(self, asset_id: str):
        return self._infos[asset_id] if asset_id in self._infos else self._library.info(asset_id)

    def by_class(self, cls: str) -> list:
        own = self._library.by_class(cls)
        return own or [i for i in self._infos.values() if i.cls == cls]

    def classes(self) -> list[str]:
        return sorted({*self._library.classes(), *(i.cls for i in self._infos.values())})

    def size_cm(self, asset_id: str) -> tuple[float, float, float]:
        """A pack-only class's box: (length along X, width along Y, height) of its first variant
        standing in its walk pose at phase 0, in cm (the species' real height)."""
        if asset_id not in self._infos:
            return self._library.size_cm(asset_id)
        if asset_id not in self._sizes:
            v = np.asarray(self._pack.mesh(self._infos[asset_id].cls, 0, "walk", 0.0, planted=False).vertices, float)
            self._sizes[asset_id] = tuple(float(x) for x in np.ptp(v, axis=0))
        return self._sizes[asset_id]

    def _split(self, ids) -> tuple[list[str], list[str]]:
        ids = list(ids)
        return [i for i in ids if i not in self._infos], [i for i in ids if i in self._infos]

    def licenses(self, ids) -> list[str]:
        own, ours = self._split(ids)
        return sorted({*self._library.licenses(own), *(self._infos[i].license for i in ours)})

    def has_share_alike(self, ids) -> bool:
        own, ours = self._split(ids)
        return bool(ours) or self._library.has_share_alike(own)

    def attributions(self, ids) -> list[str]:
        own, ours = self._split(ids)
        return sorted({*self._library.attributions(own), *(self._infos[i].attribution for i in ours)})


@dataclass(frozen=True, eq=False)
class CharacterTrack:
    """One actor drawn as a character over a clip."""

    cls: str
    variant: int
    actor: str
    clips: list  # per frame: walk | run | idle
    phases: np.ndarray  # (T,) cycles
    offsets_cm: np.ndarray  # (T,) forward root surge along the heading
    strides: dict
    props: bool = False  # the actor's helmets, shields, weapons (drawn as part of the one mesh)

    def asset_id(self, t: int) -> str:
        k = int(round((float(self.phases[t]) % 1.0) * PHASES)) % PHASES
        return f"character:{self.cls}:{self.variant}:{self.clips[t]}:{k}" + (":props" if self.props else "")

    def transform(self, track: mo.Track, t: int) -> Transform:
        """The mesh's transform at frame ``t``: the track's pose moved by the root surge."""
        h = math.radians(float(track.yaw[t]))
        d = float(self.offsets_cm[t])
        x, y, z = (float(v) for v in track.location[t])
        return Transform((x + d * math.cos(h), y + d * math.sin(h), z), track.rotator(t))

    def frame_state(self, t: int) -> dict:
        return {"class": self.cls, "variant": self.variant, "clip": self.clips[t], "phase": float(self.phases[t] % 1.0)}

    def to_record(self, info: dict | None = None) -> dict:
        return {
            "class": self.cls,
            "variant": self.variant,
            "actor": self.actor,
            "license": "cc-by-sa-3.0",
            "creator": (info or {}).get("holder", "Wildfire Games"),
            "stride_cm": {k: round(v, 3) for k, v in sorted(self.strides.items())},
            "props": self.props,
        }


def speeds(location: np.ndarray, fps: float, yaw: np.ndarray | None = None, reach_cm: float = 0.0) -> np.ndarray:
    """(T,) ground speed (cm/s) at each frame (central differences; one-sided at the ends). With
    ``yaw`` (deg), a turn counts too: its feet, ``reach_cm`` from the body's centre, cover
    ``|yaw rate| x reach_cm`` of ground, so a character turning in place steps round instead of
    idling (the rigs' turning gait, scenarios/videos/gait.py)."""
    xy = np.asarray(location, float)[:, :2]
    if len(xy) < 2:
        return np.zeros(len(xy))
    v = np.linalg.norm(np.gradient(xy, axis=0), axis=1) * fps
    if yaw is not None and reach_cm > 0:
        turn = np.abs(np.radians(np.gradient(np.asarray(yaw, float)))) * fps * reach_cm
        v = np.maximum(v, turn)
    return v


def props_on(setting: str, env_allows: bool) -> bool:
    """Whether characters carry their props: ``on`` / ``off``, or ``auto``: where the environment
    allows them (its ``character_props``; none of the shipped, modern environments)."""
    return setting == "on" or (setting == "auto" and bool(env_allows))


def plan(
    lib,
    motions,
    cls: str,
    location: np.ndarray,
    yaw: np.ndarray,
    fps: float,
    rng: np.random.Generator,
    props: bool = False,
) -> CharacterTrack:
    """The character that draws an actor of ``cls`` along (``location``, ``yaw``), with its
    optional props when ``props`` (the pose, the clip choice and the stride are the body's)."""
    variant = int(rng.integers(lib.n_variants(cls)))
    phase0 = float(rng.random())
    ch = lib.character(cls, variant)
    have = {c: motions(cls, variant, c) for c in ("walk", "run") if c in ch.clips}
    moving = {c: m for c, m in have.items() if m.stride_cm > 0 and m.natural_speed_cms > 0}  # clips whose feet travel
    body = lib.mesh(cls, variant, "walk", 0.0, planted=False).vertices  # the clip's own (no foot lock to solve here)
    v = speeds(location, fps, yaw, 0.35 * float(np.ptp(body[:, 0])))  # feet ~ a third of the length from the centre
    clips, phases, offsets = [], np.zeros(len(v)), np.zeros(len(v))
    phase = {"walk": phase0, "run": phase0, "idle": phase0}

    def rate(c: str, speed: float) -> float:
        """Cycles per second of clip ``c`` at ``speed``: the distance over its stride (a clip whose
        feet do not travel plays at its own rate while moving)."""
        if c in moving:
            return speed / moving[c].stride_cm
        if c == "idle" or speed >= STAND_CMS:
            return 1.0 / max(ch.clips[c].duration_s, 1e-3)
        return 0.0

    for t in range(len(v)):
        if v[t] < STAND_CMS and "idle" in ch.clips:
            c = "idle"
        elif len(moving) == 2:
            near = {k: abs(math.log(max(v[t], 1.0) / m.natural_speed_cms)) for k, m in moving.items()}
            c = min(near, key=near.get)
        else:
            c = next(iter(moving), "walk")
        if t:
            for k in phase:
                if k in ch.clips:
                    phase[k] += 0.5 * (rate(k, v[t]) + rate(k, v[t - 1])) / fps
        clips.append(c)
        phases[t] = phase[c]
        if c in moving:
            m = moving[c]
            offsets[t] = float(m.root_cm(phase[c])) - m.stride_cm * phase[c]
    return CharacterTrack(cls, variant, ch.actor, clips, phases, offsets, {c: m.stride_cm for c, m in have.items()}, props)


def render_clip(
    client,
    clip: mo.ClipMotion,
    subject: Actor,
    scenery: list[Actor],
    world: dict,
    fov: float,
    size: int,
    kinds: tuple[str, ...],
    movers: list,
    drawn: dict,
) -> tuple[dict, list[dict]]:
    """``scenario.render_clip`` with the actors named in ``drawn`` ({name: CharacterTrack}) as
    characters: same spawn order (instance ids), same per-frame visibility of every owner."""
    client.set_world(world)
    client.reset()
    tracks = {subject.name: clip.subject, **{m.name: m.track for m in movers}}
    assets = {subject.name: subject.asset_id, **{m.name: m.asset_id for m in movers}}
    names = [subject.name, *(m.name for m in movers)]

    def pose(name: str, t: int) -> Transform:
        tr = tracks[name]
        if name in drawn:
            return drawn[name].transform(tr, t)
        return Transform(tuple(float(v) for v in tr.location[t]), tr.rotator(t))

    client.spawn([*scenery, *(Actor(n, drawn[n].asset_id(0) if n in drawn else assets[n], pose(n, 0)) for n in names)])

    def pose_at(t: int) -> None:
        client.set_poses({n: {"location": pose(n, t).location, "rotation": pose(n, t).rotation} for n in names})
        if drawn:
            client.set_character_poses({n: {"clip": c.clips[t], "phase": float(c.phases[t])} for n, c in drawn.items()})

    return render_frame_loop(client, clip, fov, size, kinds, pose_at, lambda t: client.visibility(0, names))


def record(drawn: dict, info: dict | None = None) -> dict:
    """The clip record's ``characters``: {actor name: class, variant, actor file, licence, strides}."""
    return {name: c.to_record(info) for name, c in sorted(drawn.items())}
