"""Environments as YAML: look (ground, sky, sun), background clutter, object triples, sampling.

    >>> from scenarios.environments import load_env, list_envs
    >>> env = load_env("desert")              # a shipped name, or a path to a user YAML file
    >>> [t.id for t in env.triples]
    ['rock_truck', 'cactus_camel', 'barrel_camel']
    >>> actors = env.clutter(np.random.default_rng(0), keep_out=[(0, 0, 800)])

The five shipped environments reproduce SpaRRTa's (Desert, Forest, Winter Town, Bridge, City),
including its difficulty ordering: clutter density grows from the sparse desert to the city.
Clutter sits in a *ring* around the sampling area so it frames the scene without landing on the
labelled objects; the sampler still checks visibility, so dense rings cost acceptance rate, which
is the point. The schema is documented with a complete example in ``docs/environments.md``.
"""
from __future__ import annotations

import functools
import logging
import math
from pathlib import Path
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator
from shapely.geometry import Point

from sceneforge.core.errors import ConfigError
from sceneforge.core.paths import check_component
from sceneforge.engine.limits import MAX_ANGLE_DEG, MAX_COORD_CM, SCALE_RANGE
from sceneforge.engine.world import Actor, Fog, Ground, Look, Rotator, Sky, Sun, Transform, instance_color
from sceneforge.engine.world_dict import WORLD_SECTIONS, apply_world, world_section, world_to_dict
from sceneforge.scenarios.look import LookRandomization
from sceneforge.scenarios.occupancy import Occupancy
from sceneforge.scenarios.placement import Site, footprint_radius, ground_z_under, pick_variants, place_group

ENVS_DIR = Path(__file__).parent / "envs"
CLUTTER_COLOR_BASE = 1000   # instance_color index offset for clutter (labelled objects use 0..)


# At most this many background actors per sample: landmarks plus every clutter group's largest
# count. Why: ``count: 100000000`` (or 70,000 landmarks) was accepted and then placed silently for
# minutes; the shipped environments use at most 154 and the server caps a scene at
# engine.limits.MAX_ACTORS. Documented in docs/environments.md.
MAX_ENV_ACTORS = 2048
# An environment file is hand-written (the shipped ones are < 4 KB); parsing YAML costs ~10 s per
# MB, so a file of 70,000 landmarks took 30 s before its actor count could be refused.
MAX_ENV_FILE_BYTES = 256 * 1024


class _Strict(BaseModel):
    """Unknown keys and non-finite numbers (``.nan``, ``.inf`` in YAML) are errors, not values:
    a NaN zone corner was accepted silently and an infinite ring crashed numpy's sampler."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, allow_inf_nan=False)


def _within_world(values, what: str):
    """Coordinates (cm) inside the world the server accepts (|v| <= engine.limits.MAX_COORD_CM):
    ``ring_cm: [0, 1e300]`` is finite but overflowed the sampler with a traceback."""
    if any(abs(v) > MAX_COORD_CM for v in values):
        raise ValueError(f"{what} {list(values)}: coordinates must be within +-{MAX_COORD_CM:g} cm")
    return values


# The look sections (ground, sky, sun, fog, look) are engine.world's own types, validated by
# engine.world_dict.world_section: one schema for environment files and the server's world dict
# (same fields, bounds from engine.limits). Ground lengths are cm; the ``_cm``-suffixed names of
# older environment files are still accepted.
log = logging.getLogger(__name__)
_LEGACY_GROUND = {"relief_amplitude_cm": "relief_amplitude", "relief_wavelength_cm": "relief_wavelength",
                  "extent_cm": "extent"}


def _world_section(name: str, value):
    if isinstance(value, WORLD_SECTIONS[name]):
        return value
    if name == "ground" and isinstance(value, dict):
        value = {_LEGACY_GROUND.get(k, k): v for k, v in value.items()}
    try:
        section = world_section(name, value)
    except ConfigError as e:
        raise ValueError(str(e)) from None
    if name == "ground" and section.relief_amplitude < 0:
        raise ValueError(f"world.ground.relief_amplitude must be >= 0, got {section.relief_amplitude}")
    if name == "sun" and section.pitch <= 0:
        raise ValueError(f"world.sun.pitch must be > 0 (the sun above the horizon), got {section.pitch}")
    return section


def _ground_colour_precedence(ground: dict, env: str) -> dict:
    """``surface`` wins over ``color``: a textured surface is drawn with its own albedo. The
    colour a file gives beside a surface is only the stand-in's (the surface missing from the
    asset library, e.g. offline with the procedural pack), which such files say with
    ``fallback_color``; a plain ``color`` beside a surface is what a user who wants a red ground
    writes, and would be silently ignored, so it is a one-line warning (issue 33, item 6)."""
    ground = dict(ground)
    if "fallback_color" in ground:
        if not ground.get("surface"):
            raise ValueError("ground.fallback_color is the colour drawn when ground.surface is missing; "
                             "without a surface write ground.color")
        if "color" in ground:
            raise ValueError("ground: give color or fallback_color, not both")
        ground["color"] = ground.pop("fallback_color")
    elif ground.get("surface") and "color" in ground:
        log.warning("environment %s: ground.color %s is not drawn: ground.surface %r is (the colour only "
                    "shows when that surface is missing); write fallback_color to say so, or remove "
                    "surface for a plain-coloured ground", env, ground["color"], ground["surface"])
    return ground


class ClutterGroup(_Strict):
    """``count`` objects drawn from ``classes``, placed in the ring ``ring_cm`` around the centre."""

    classes: list[str] = Field(min_length=1)
    count: int | tuple[int, int] = 0
    ring_cm: tuple[float, float] = (2000.0, 6000.0)
    scale: tuple[float, float] = (0.85, 1.15)
    prefer_tag: str | None = None      # use variants with this tag when a class has any
    gap_cm: float = Field(100.0, ge=0)
    along: str | None = None           # a name in ``lines``: stand along it instead of anywhere in the ring
    offset_cm: float = 0.0             # distance from the line, on its side (scenarios/placement.py)
    facing: Literal["random", "line", "along"] = "random"   # yaw: random, front to the line, along it
    avoid: list[str] = Field(default_factory=list)     # names in ``zones`` the footprint must not touch
    within: list[str] = Field(default_factory=list)    # names in ``zones`` the footprint must lie inside
    overlap: bool = False              # objects of this group may overlap each other (dunes merging)

    @model_validator(mode="after")
    def _check(self) -> "ClutterGroup":
        lo, hi = (self.count, self.count) if isinstance(self.count, int) else self.count
        if lo < 0 or hi < lo:
            raise ValueError(f"count must be >= 0 (or [min, max] with min <= max), got {self.count}")
        if not 0 <= self.ring_cm[0] < self.ring_cm[1]:
            raise ValueError(f"ring_cm must be [inner, outer] with 0 <= inner < outer, got {self.ring_cm}")
        _within_world(self.ring_cm, "ring_cm")
        _within_world((self.offset_cm, self.gap_cm), "offset_cm/gap_cm")
        if not SCALE_RANGE[0] <= self.scale[0] <= self.scale[1] <= SCALE_RANGE[1]:
            raise ValueError(f"scale must be [min, max] with {SCALE_RANGE[0]:g} <= min <= max <= "
                             f"{SCALE_RANGE[1]:g}, got {self.scale}")
        if self.facing != "random" and self.along is None:
            raise ValueError(f"facing: {self.facing} needs a line to face ('along: NAME')")
        return self


class Landmark(_Strict):
    """A fixed background object (e.g. the bridge), placed identically in every sample."""

    cls: str = Field(alias="class")
    location_cm: tuple[float, float]
    yaw: float = 0.0
    scale: float = Field(1.0, gt=0)
    flat: bool = False      # a ground feature (street, pond): walkable, does not block clutter

    @model_validator(mode="after")
    def _bounded(self) -> "Landmark":
        _within_world(self.location_cm, "location_cm")
        if not abs(self.yaw) <= MAX_ANGLE_DEG or not SCALE_RANGE[0] <= self.scale <= SCALE_RANGE[1]:
            raise ValueError(f"yaw must be within +-{MAX_ANGLE_DEG:g} and scale within "
                             f"[{SCALE_RANGE[0]:g}, {SCALE_RANGE[1]:g}], got yaw {self.yaw}, scale {self.scale}")
        return self


class Triple(_Strict):
    id: str
    source_class: str = Field(alias="source")
    target_class: str = Field(alias="target")
    viewpoint_class: str = Field("human", alias="viewpoint")

    @field_validator("id")
    @classmethod
    def _id_is_a_directory_name(cls, v: str) -> str:
        return _path_component(v, "triple id")


class SamplingParams(_Strict):
    """SpaRRTa's sampling: Gaussian objects around ``centre_cm``, camera box, lens, margins."""

    centre_cm: tuple[float, float] = (0.0, 0.0)
    sigma_cm: float = Field(500.0, gt=0)
    max_pair_dist_cm: float = Field(1000.0, gt=0)
    cam_xy_range_cm: float = Field(2500.0, gt=0)
    cam_height_range_cm: tuple[float, float] = (100.0, 1500.0)
    fov_deg: float = Field(2 * math.degrees(math.atan(0.5)), gt=0, lt=180)   # 50 mm lens, 50 mm sensor
    image_size: int = Field(224, ge=16, le=4096)
    margin_ego_deg: float = Field(15.0, ge=0, lt=45)
    margin_allo_deg: float = Field(10.0, ge=0, lt=45)
    min_visible_ratio: float = Field(0.8, ge=0, le=1)
    min_bbox_px: float = Field(12.0, ge=0)
    perceptual_check: bool = True   # ego: reject views whose pixels contradict the label (scenarios/consistency.py)

    @field_validator("cam_height_range_cm")
    @classmethod
    def _heights(cls, v):
        if not 0 <= v[0] <= v[1]:
            raise ValueError(f"must be [min, max] with 0 <= min <= max, got {list(v)}")
        return _within_world(v, "cam_height_range_cm")

    @field_validator("centre_cm", "sigma_cm", "max_pair_dist_cm", "cam_xy_range_cm")
    @classmethod
    def _in_the_world(cls, v, info):
        return _within_world(v if isinstance(v, tuple) else (v,), info.field_name) and v


def _path_component(v: str, what: str) -> str:
    """Names that become dataset directories (issue 13: ``id: ../../x`` escaped ``--out``)."""
    try:
        return check_component(v, what)
    except ConfigError as e:
        raise ValueError(str(e)) from None


class EnvSpec(_Strict):
    name: str
    description: str = ""
    ground: Ground = Ground()
    sky: Sky = Sky()
    sun: Sun = Sun()
    fog: Fog = Fog()
    look: Look = Look()
    randomize: LookRandomization | None = None   # per-sample look draws (scenarios/look.py)
    clutter: list[ClutterGroup] = Field(default_factory=list)
    landmarks: list[Landmark] = Field(default_factory=list)
    triples: list[Triple] = Field(min_length=1)
    sampling: SamplingParams = SamplingParams()
    assets: list[str] = Field(default_factory=list)   # extra manifest files, relative to the YAML
    style_tags: list[str] = Field(default_factory=list)  # prefer variants with these tags (e.g. snow)
    zones: dict[str, list[tuple[float, float, float, float]]] = Field(default_factory=dict)  # rects, cm
    lines: dict[str, list[tuple[float, float, float, float]]] = Field(default_factory=dict)  # segments, cm

    @field_validator("zones", "lines")
    @classmethod
    def _shapes_in_the_world(cls, v, info):
        for name, shapes in v.items():
            for shape in shapes:
                _within_world(shape, f"{info.field_name}.{name}")
        return v

    @field_validator("lines")
    @classmethod
    def _segments_have_length(cls, v):
        for name, segs in v.items():
            for seg in segs:
                if seg[0] == seg[2] and seg[1] == seg[3]:
                    raise ValueError(f"lines.{name}: segment {list(seg)} has zero length")
        return v

    @model_validator(mode="after")
    def _actor_cap(self) -> "EnvSpec":
        counts = [g.count if isinstance(g.count, int) else g.count[1] for g in self.clutter]
        total = len(self.landmarks) + sum(counts)
        if total > MAX_ENV_ACTORS:
            raise ValueError(f"{len(self.landmarks)} landmarks + clutter counts {counts} = {total} background "
                             f"actors; at most {MAX_ENV_ACTORS} per sample")
        return self

    @model_validator(mode="after")
    def _names_exist(self) -> "EnvSpec":
        for i, g in enumerate(self.clutter):
            for key, names, known in (("avoid", g.avoid, self.zones), ("within", g.within, self.zones),
                                      ("along", [g.along] if g.along else [], self.lines)):
                missing = [n for n in names if n not in known]
                if missing:
                    section = "lines" if key == "along" else "zones"
                    raise ValueError(f"clutter[{i}].{key}: {', '.join(missing)} is not in '{section}' "
                                     f"(it has: {', '.join(sorted(known)) or 'nothing'})")
        return self

    @field_validator("name")
    @classmethod
    def _name_is_a_directory_name(cls, v: str) -> str:
        return _path_component(v, "environment name")

    @field_validator("ground", "sky", "sun", "fog", "look", mode="before")
    @classmethod
    def _look_section(cls, v, info):
        if info.field_name == "ground" and isinstance(v, dict):
            v = _ground_colour_precedence(v, info.data.get("name", "?"))
        return _world_section(info.field_name, v)


class Environment:
    """A loaded environment; see the module docstring."""

    def __init__(self, spec: EnvSpec, path: Path, library=None, licenses=None):
        self.spec, self.path, self._library = spec, path, library
        self.licenses = tuple(licenses) if licenses else None
        self.name = spec.name
        self.triples = list(spec.triples)
        self.sampling = spec.sampling

    @property
    def library(self):
        """The asset library clutter draws from: given, or default + the env's own manifests."""
        if self._library is None:
            from sceneforge.assets_manifest.library import shared_default_library

            self._library = shared_default_library(tuple(self.asset_packs()), self.licenses)
        return self._library

    def asset_packs(self) -> list[str]:
        """The environment's own asset-pack manifests as absolute paths (what servers must load)."""
        return [str((self.path.parent / a).resolve()) for a in self.spec.assets]

    @property
    def ground(self) -> Ground:
        return self.spec.ground

    @property
    def sun_obj(self) -> Sun:
        return self.spec.sun

    @property
    def sky_obj(self) -> Sky:
        return self.spec.sky

    @property
    def world(self) -> dict:
        """JSON-able dict for ``vset /sceneforge/world`` (engine.world's sections and field names);
        per-sample looks: :func:`scenarios.look.draw_look`."""
        s = self.spec
        return world_to_dict(self.name, sun=s.sun, sky=s.sky, ground=s.ground, fog=s.fog, look=s.look)

    def apply_to(self, scene) -> None:
        """Give an in-process :class:`engine.world.Scene` this environment's world."""
        apply_world(scene, self.world)

    def classes(self) -> set[str]:
        """Every asset class the environment uses (triples, clutter, landmarks)."""
        out = {c for t in self.triples for c in (t.source_class, t.target_class, t.viewpoint_class)}
        out |= {c for g in self.spec.clutter for c in g.classes}
        return out | {lm.cls for lm in self.spec.landmarks}

    def variants(self, cls: str, library=None) -> list[str]:
        """Asset ids of ``cls`` for this environment: those carrying one of ``style_tags`` when the
        class has any (snowy trees in Winter Town), else every active variant (sorted ids)."""
        return pick_variants(library or self.library, cls, self.spec.style_tags)

    def clutter(self, rng: np.random.Generator, keep_out=(), library=None) -> list[Actor]:
        """Background actors: landmarks, then each clutter group; deterministic given ``rng``.

        ``keep_out`` is a list of ``(x, y, r)`` discs (cm) no clutter footprint may touch (the
        labelled objects, the camera). Groups honour their ring, ``zones`` (``avoid``/``within``)
        and ``lines`` (``along``): scenarios/placement.py. Objects that find no free spot in 40
        tries are dropped.
        """
        lib = library or self.library
        occupied = Occupancy(keep_out)
        actors = [self._landmark(lm, k, lib) for k, lm in enumerate(self.spec.landmarks)]
        for lm, a in zip(self.spec.landmarks, actors):
            if not lm.flat:
                r = footprint_radius(lib, a.asset_id) * lm.scale
                occupied.add(Point(*lm.location_cm), r, *lm.location_cm, r)
        for k, group in enumerate(self.spec.clutter):
            for asset_id, x, y, yaw, s in place_group(group, rng, lib, occupied, self.spec.sampling.centre_cm,
                                                       self.spec.style_tags, self._geometry(), k):
                actors.append(self._actor(len(actors), asset_id, x, y, yaw, s, lib))
        return actors

    @functools.cached_property
    def _geometry_cache(self) -> Site:
        return Site(self.spec.zones, self.spec.lines)

    def _geometry(self) -> Site:
        """Zones (rectangles + their shapely union) and lines as a placement.Site, built once per
        environment (with the union of each group's zone list)."""
        return self._geometry_cache

    def _landmark(self, lm: Landmark, k: int, lib) -> Actor:
        if lm.flat:     # lies on the ground as it is: no footprint search, z = 0
            return Actor(f"clutter_{k:03d}", lib.resolve(lm.cls),
                         Transform((*lm.location_cm, 0.0), Rotator(0.0, lm.yaw, 0.0), (lm.scale,) * 3),
                         color=instance_color(CLUTTER_COLOR_BASE + k))
        return self._actor(k, lib.resolve(lm.cls), *lm.location_cm, lm.yaw, lm.scale, lib)

    def _actor(self, k: int, asset_id: str, x: float, y: float, yaw: float, s: float, lib) -> Actor:
        r = footprint_radius(lib, asset_id) * s
        z = ground_z_under(self.ground, x, y, r)
        return Actor(f"clutter_{k:03d}", asset_id, Transform((x, y, z), Rotator(0.0, yaw, 0.0), (s, s, s)),
                     color=instance_color(CLUTTER_COLOR_BASE + k))


def list_envs() -> list[str]:
    """Names of the shipped environments."""
    return sorted(p.stem for p in ENVS_DIR.glob("*.yaml"))


def is_explicit_path(ref: str | Path) -> bool:
    """A reference that can only mean a file: it ends in ``.yaml``/``.yml`` or has a directory part
    (``./desert``, ``envs/mine``). Anything else is first a shipped environment's name."""
    p = Path(ref)
    return p.suffix in (".yaml", ".yml") or len(p.parts) > 1 or "/" in str(ref) or str(ref).startswith(".")


def env_path(name_or_path: str | Path) -> Path:
    """The file an environment reference names. Shipped names win over files in the working
    directory (issue 39: a file ``./desert`` silently replaced the shipped ``desert``, and a
    directory ``desert/``, which every dataset root has, gave "Is a directory"); write
    ``./desert`` or ``desert.yaml`` to mean the file. A bare name that is not shipped may still
    name a file here."""
    p = Path(name_or_path)
    if is_explicit_path(name_or_path):
        return p
    shipped = ENVS_DIR / f"{name_or_path}.yaml"
    if shipped.exists():
        if p.is_file():
            log.warning("environment %r is the shipped one, not the file ./%s (write ./%s to use the file)",
                        str(name_or_path), p, p)
        return shipped
    if p.is_file():
        return p
    if p.is_dir():
        raise ConfigError(f"environment {str(name_or_path)!r}: ./{p} is a directory, not an environment file; "
                          f"shipped: {', '.join(list_envs())}")
    import difflib

    close = difflib.get_close_matches(str(name_or_path), list_envs(), n=1, cutoff=0.6)
    hint = f"did you mean {close[0]!r}? " if close else ""
    raise ConfigError(f"unknown environment {str(name_or_path)!r}; {hint}shipped: {', '.join(list_envs())} "
                      "(or give a path to a .yaml file)")


def freeze_envs(refs, source: str = "envs") -> dict[str, dict]:
    """Environment references (names, paths, or ``["all"]``) → their *content*, keyed by name.

    ``{name: {"source": ref, "sha256": hex, "dir": absolute dir of the file (None for a shipped
    one), "yaml": text}}``.
    A job records this in its config, so an environment is its file's content everywhere: the
    fingerprint changes when the file does, and workers (local or on Ray nodes) rebuild the
    environment from the text instead of looking a name up (a user file named like a shipped
    environment can never be swapped for it). ``dir`` resolves the file's relative asset packs.
    """
    import hashlib

    refs = list(list_envs()) if list(refs) == ["all"] else list(refs)
    out: dict[str, dict] = {}
    for ref in refs:
        path = env_path(ref)
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as e:
            raise ConfigError(f"{source}: {path}: cannot read ({getattr(e, 'strerror', None) or e})") from None
        env = load_env(path, text=text)
        if env.name in out:
            raise ConfigError(f"{source}: two environments are named {env.name!r} ({out[env.name]['source']} "
                              f"and {ref}); rename one (its 'name:' field)")
        out[env.name] = {"source": str(ref), "sha256": hashlib.sha256(text.encode()).hexdigest(),
                         "dir": _recorded_dir(path), "yaml": text}
    return out


def load_frozen_env(frozen: dict, key: str, library=None, licenses=None) -> Environment:
    """The environment ``key`` (its name or the reference it was given as) from :func:`freeze_envs`."""
    entry = frozen.get(key) or next((e for e in frozen.values() if e.get("source") == key), None)
    if entry is None:
        raise ConfigError(f"environment {key!r} is not part of this job (it has {', '.join(sorted(frozen))})")
    name = key if key in frozen else next(n for n, e in frozen.items() if e is entry)
    folder = Path(entry["dir"]) if entry.get("dir") else ENVS_DIR
    return load_env(folder / f"{name}.yaml", library, licenses, text=entry["yaml"])


def _recorded_dir(path: Path) -> str | None:
    """Where a frozen environment's relative asset packs live: None for a shipped environment
    (resolved to this installation's envs/ when loaded), so the record — and with it the job's
    fingerprint, job.json and the dataset card — does not depend on where sceneforge is installed."""
    folder = path.resolve().parent
    return None if folder == ENVS_DIR.resolve() else str(folder)


def _check_file_size(path: Path, text: str | None) -> None:
    """Refuse an environment file over :data:`MAX_ENV_FILE_BYTES` before parsing it."""
    try:
        size = len(text.encode("utf-8")) if text is not None else path.stat().st_size
    except OSError:
        return   # read_yaml names the file and the reason
    if size > MAX_ENV_FILE_BYTES:
        raise ConfigError(f"{path}: {size} bytes; an environment file may have at most {MAX_ENV_FILE_BYTES} "
                          f"(at most {MAX_ENV_ACTORS} background actors per sample)")


def load_env(name_or_path: str | Path, library=None, licenses=None, *, text: str | None = None) -> Environment:
    """Load a shipped environment by name or a user YAML by path; errors name file:line: field.

    With ``text`` the YAML is parsed from it and the path only names the file in messages and
    anchors relative asset packs (what :func:`load_frozen_env` does in workers)."""
    from sceneforge.assets_manifest.schema import KNOWN_CLASSES, read_yaml, read_yaml_text, validation_message

    path = Path(name_or_path) if text is not None else env_path(name_or_path)
    _check_file_size(path, text)
    data, root = read_yaml_text(text, path) if text is not None else read_yaml(path)
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: an environment must be a mapping (name, triples, ...)")
    try:
        spec = EnvSpec.model_validate(data)
    except ValidationError as e:
        raise ConfigError(validation_message(path, e, root, data)) from None
    env = Environment(spec, path, library, licenses)
    lib_classes = set(env.library.classes()) if library is not None or spec.assets else set(KNOWN_CLASSES)
    unknown = sorted(env.classes() - lib_classes)
    if unknown:  # names that are not classes may pin asset ids (``source: proc_truck_blue``)
        unknown = sorted(set(unknown) - set(env.library.ids()))
    if unknown:
        raise ConfigError(f"{path}: unknown class(es) or asset id(s) {', '.join(unknown)}; known classes: "
                          f"{', '.join(sorted(lib_classes))}")
    return env
