"""Per-sample domain randomisation of the look (issue 14 item 5), declared in the environment YAML.

    randomize:                        # every key optional; a missing key keeps the env's value
      sun_pitch: [25, 70]             # degrees above the horizon (time of day), uniform
      sun_yaw: [-180, 180]            # degrees (UE yaw), uniform
      sun_intensity: [0.8, 1.2]
      hdri: [null, pm_park, bd_forest]  # choice list; null = the procedural gradient sky
      hdri_rotation_deg: [0, 360]
      sky_intensity: [0.8, 1.2]
      fog_density: [0.0, 1.5]         # per km at the ground
      exposure_ev: [-0.5, 0.5]
      fov_deg: [45, 65]               # camera horizontal FOV (scenarios apply it to the camera)

:func:`draw_look` is a pure function of ``(env, rng)``: the world dict for
``vset /sceneforge/world`` with the drawn values, the same keys every time (draws happen in a fixed
order whatever the section contains, so adding a key to the YAML never shifts the others' draws).
Scenarios record the returned dict in each sample's params (``"world"``) and draw ``rng`` from
the sample's own seed stream, so the same seed gives the same look at any worker count.
"""

from __future__ import annotations

import copy
import math

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_validator

Range = tuple[float, float]


class LookRandomization(BaseModel):
    """Ranges ``[low, high]`` drawn uniformly per sample; ``hdri`` a list of choices."""

    model_config = ConfigDict(extra="forbid")

    sun_pitch: Range | None = None
    sun_yaw: Range | None = None
    sun_intensity: Range | None = None
    hdri: list[str | None] | None = Field(None, min_length=1)
    hdri_rotation_deg: Range | None = None
    sky_intensity: Range | None = None
    fog_density: Range | None = None
    exposure_ev: Range | None = None
    fov_deg: Range | None = None

    @model_validator(mode="after")
    def _ordered(self) -> "LookRandomization":
        limits = {
            "sun_pitch": (1.0, 90.0),
            "sun_intensity": (0.0, 100.0),
            "sky_intensity": (0.0, 100.0),
            "fog_density": (0.0, 1000.0),
            "exposure_ev": (-20.0, 20.0),
            "fov_deg": (1.0, 179.0),
            "sun_yaw": (-36000.0, 36000.0),
            "hdri_rotation_deg": (-36000.0, 36000.0),
        }
        for name, (lo_ok, hi_ok) in limits.items():
            r = getattr(self, name)
            if r is None:
                continue
            lo, hi = r
            if not (math.isfinite(lo) and math.isfinite(hi) and lo_ok <= lo <= hi <= hi_ok):
                raise ValueError(f"{name} must be [low, high] with {lo_ok:g} <= low <= high <= {hi_ok:g}, got {list(r)}")
        return self


ORDER = (
    "sun_pitch",
    "sun_yaw",
    "sun_intensity",
    "hdri",
    "hdri_rotation_deg",
    "sky_intensity",
    "fog_density",
    "exposure_ev",
    "fov_deg",
)


def draw_values(spec: LookRandomization | None, rng: np.random.Generator) -> dict:
    """The drawn values (only the keys the spec has). Always consumes the same random numbers
    (one per key of :data:`ORDER`), so a spec's draws do not depend on which keys it lists."""
    u = rng.random(len(ORDER))
    out: dict = {}
    if spec is None:
        return out
    for k, x in zip(ORDER, u):
        v = getattr(spec, k)
        if v is None:
            continue
        if k == "hdri":
            out[k] = v[min(int(x * len(v)), len(v) - 1)]
        else:
            out[k] = float(v[0] + (v[1] - v[0]) * x)
    return out


# randomised value -> (world section, field) it sets
_WORLD_FIELDS = {
    "sun_pitch": ("sun", "pitch"),
    "sun_yaw": ("sun", "yaw"),
    "sun_intensity": ("sun", "intensity"),
    "hdri": ("sky", "hdri"),
    "hdri_rotation_deg": ("sky", "rotation_deg"),
    "sky_intensity": ("sky", "intensity"),
    "fog_density": ("fog", "density"),
    "exposure_ev": ("look", "exposure_ev"),
}


def draw_look(env, rng: np.random.Generator) -> dict:
    """``env.world`` with this sample's drawn look (see the module docstring). ``fov_deg``, when
    randomised, is returned under the extra key ``"camera": {"fov_deg": ...}``, which scenarios pop
    before sending the world (the server has no camera in its world)."""
    world = copy.deepcopy(env.world)
    drawn = draw_values(getattr(env.spec, "randomize", None), rng)
    sections = {name: world.setdefault(name, {}) for name in ("sun", "sky", "fog", "look")}
    for key, (section, field) in _WORLD_FIELDS.items():
        if key in drawn:
            sections[section][field] = drawn[key]
    if "fov_deg" in drawn:
        world["camera"] = {"fov_deg": drawn["fov_deg"]}
    return world


def server_world(world: dict) -> dict:
    """The part of a drawn world the render server takes (without the camera entry)."""
    return {k: v for k, v in world.items() if k != "camera"}


LOOK_STREAM = 7919  # seed stream of a sample's look (scene groups use streams 1 + attempt)


def card_worlds(env) -> list[dict]:
    """World dicts naming every HDRI/surface a dataset of ``env`` can show (for licences in cards):
    the environment's own world plus its randomisation choices."""
    spec = getattr(env.spec, "randomize", None)
    return [env.world] + ([{"randomize": spec.model_dump(exclude_none=True)}] if spec is not None else [])
