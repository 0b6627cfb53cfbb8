"""The environment file's schema: what a YAML environment may say, validated with pydantic.

Kept apart from the loader (:mod:`scenarios.world.environments`) so that placement
(:mod:`scenarios.world.placement`) can name a :class:`ClutterGroup` without importing the loader
that imports it (the two were an import circle).
"""

from __future__ import annotations

import logging
import math
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from sceneforge.core.config_names import IMAGE_SIZE
from sceneforge.core.errors import ConfigError
from sceneforge.core.paths import check_component
from sceneforge.engine.limits import MAX_ANGLE_DEG, MAX_COORD_CM, SCALE_RANGE
from sceneforge.engine.world import Fog, Ground, Look, Sky, Sun
from sceneforge.engine.world_dict import WORLD_SECTIONS, world_section
from sceneforge.scenarios.world.look import LookRandomization

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
log = logging.getLogger("sceneforge.scenarios.world.environments")  # the loader's: one logger for environment files
_LEGACY_GROUND = {"relief_amplitude_cm": "relief_amplitude", "relief_wavelength_cm": "relief_wavelength", "extent_cm": "extent"}


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
            raise ValueError(
                "ground.fallback_color is the colour drawn when ground.surface is missing; without a surface write ground.color"
            )
        if "color" in ground:
            raise ValueError("ground: give color or fallback_color, not both")
        ground["color"] = ground.pop("fallback_color")
    elif ground.get("surface") and "color" in ground:
        log.warning(
            "environment %s: ground.color %s is not drawn: ground.surface %r is (the colour only "
            "shows when that surface is missing); write fallback_color to say so, or remove "
            "surface for a plain-coloured ground",
            env,
            ground["color"],
            ground["surface"],
        )
    return ground


class ClutterGroup(_Strict):
    """``count`` objects drawn from ``classes``, placed in the ring ``ring_cm`` around the centre."""

    classes: list[str] = Field(min_length=1)
    count: int | tuple[int, int] = 0
    ring_cm: tuple[float, float] = (2000.0, 6000.0)
    scale: tuple[float, float] = (0.85, 1.15)
    prefer_tag: str | None = None  # use variants with this tag when a class has any
    gap_cm: float = Field(100.0, ge=0)
    along: str | None = None  # a name in ``lines``: stand along it instead of anywhere in the ring
    offset_cm: float = 0.0  # distance from the line, on its side (scenarios/world/placement.py)
    facing: Literal["random", "line", "along"] = "random"  # yaw: random, front to the line, along it
    avoid: list[str] = Field(default_factory=list)  # names in ``zones`` the footprint must not touch
    within: list[str] = Field(default_factory=list)  # names in ``zones`` the footprint must lie inside
    overlap: bool = False  # objects of this group may overlap each other (dunes merging)

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
            raise ValueError(
                f"scale must be [min, max] with {SCALE_RANGE[0]:g} <= min <= max <= {SCALE_RANGE[1]:g}, got {self.scale}"
            )
        if self.facing != "random" and self.along is None:
            raise ValueError(f"facing: {self.facing} needs a line to face ('along: NAME')")
        return self


class Landmark(_Strict):
    """A fixed background object (e.g. the bridge), placed identically in every sample."""

    cls: str = Field(alias="class")
    location_cm: tuple[float, float]
    yaw: float = 0.0
    scale: float = Field(1.0, gt=0)
    flat: bool = False  # a ground feature (street, pond): walkable, does not block clutter

    @model_validator(mode="after")
    def _bounded(self) -> "Landmark":
        _within_world(self.location_cm, "location_cm")
        if not abs(self.yaw) <= MAX_ANGLE_DEG or not SCALE_RANGE[0] <= self.scale <= SCALE_RANGE[1]:
            raise ValueError(
                f"yaw must be within +-{MAX_ANGLE_DEG:g} and scale within "
                f"[{SCALE_RANGE[0]:g}, {SCALE_RANGE[1]:g}], got yaw {self.yaw}, scale {self.scale}"
            )
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
    fov_deg: float = Field(2 * math.degrees(math.atan(0.5)), gt=0, lt=180)  # 50 mm lens, 50 mm sensor
    image_size: int = Field(224, ge=IMAGE_SIZE[0], le=IMAGE_SIZE[1])  # the one range (core/config_names.py)
    margin_ego_deg: float = Field(15.0, ge=0, lt=45)
    margin_allo_deg: float = Field(10.0, ge=0, lt=45)
    min_visible_ratio: float = Field(0.8, ge=0, le=1)
    min_bbox_px: float = Field(12.0, ge=0)
    perceptual_check: bool = True  # ego: reject views whose pixels contradict the label (scenarios/sampling/consistency.py)

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
    randomize: LookRandomization | None = None  # per-sample look draws (scenarios/world/look.py)
    clutter: list[ClutterGroup] = Field(default_factory=list)
    landmarks: list[Landmark] = Field(default_factory=list)
    triples: list[Triple] = Field(min_length=1)
    sampling: SamplingParams = SamplingParams()
    assets: list[str] = Field(default_factory=list)  # extra manifest files, relative to the YAML
    style_tags: list[str] = Field(default_factory=list)  # prefer variants with these tags (e.g. snow)
    exclude_style_tags: list[str] = Field(default_factory=list)  # never draw variants with these tags (snow, desert)
    # whether skinned characters may carry their actor's helmets, shields and weapons here (videos
    # --characters, character_props: auto): off in a modern scene (no spear-carrying hoplites in the City)
    character_props: bool = False
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
            raise ValueError(
                f"{len(self.landmarks)} landmarks + clutter counts {counts} = {total} background "
                f"actors; at most {MAX_ENV_ACTORS} per sample"
            )
        return self

    @model_validator(mode="after")
    def _names_exist(self) -> "EnvSpec":
        for i, g in enumerate(self.clutter):
            for key, names, known in (
                ("avoid", g.avoid, self.zones),
                ("within", g.within, self.zones),
                ("along", [g.along] if g.along else [], self.lines),
            ):
                missing = [n for n in names if n not in known]
                if missing:
                    section = "lines" if key == "along" else "zones"
                    raise ValueError(
                        f"clutter[{i}].{key}: {', '.join(missing)} is not in '{section}' "
                        f"(it has: {', '.join(sorted(known)) or 'nothing'})"
                    )
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
