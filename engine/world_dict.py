"""The world dict of ``vset /sceneforge/world`` and of environment files: one schema for both.

A world is its sections (:class:`~engine.world.Sun`, ``Sky``, ``Ground``, ``Fog``, ``Look``); this
module turns JSON/YAML mappings into those types field by field (types and the bounds of
:mod:`engine.limits`; errors name ``world.<section>.<field>``) and back, so the server and the
environment loader validate the same way and a world is a pure function of its dict.
"""

from __future__ import annotations

from dataclasses import asdict, fields
from typing import TYPE_CHECKING

from sceneforge.core.errors import ConfigError
from sceneforge.engine import limits
from sceneforge.engine.world import Fog, Ground, Look, Sky, Sun

if TYPE_CHECKING:
    from sceneforge.engine.world import Scene

WORLD_SECTIONS: dict[str, type] = {"sun": Sun, "sky": Sky, "ground": Ground, "fog": Fog, "look": Look}


def _coerce_field(where: str, kind: str, value):
    """Convert a JSON/YAML value to a world field's annotated type; ConfigError names ``where``."""
    optional = kind.endswith("| None")
    if value is None and optional:
        return None
    base = kind.replace("| None", "").strip()
    if base == "RGB":
        ok = (
            isinstance(value, (list, tuple))
            and len(value) == 3
            and all(isinstance(v, int) and not isinstance(v, bool) and 0 <= v <= 255 for v in value)
        )
        if not ok:
            raise ConfigError(f"{where}: expected [r, g, b] ints in 0..255, got {value!r}")
        return tuple(value)
    if base == "float":
        value = limits.finite_float(where, value)  # a 400-digit integer is one line, not OverflowError
        section, name = where.split(".")[1:3]
        return float(limits.check_world_field(section, name, value))
    if base == "bool":
        if not isinstance(value, bool):
            raise ConfigError(f"{where}: expected true or false, got {value!r}")
        return value
    if not isinstance(value, str):
        raise ConfigError(f"{where}: expected a string{' or null' if optional else ''}, got {limits.shown(value)}")
    if len(value) > limits.MAX_NAME_LEN:
        raise ConfigError(f"{where}: {limits.shown(value, 40)} is longer than {limits.MAX_NAME_LEN} characters")
    return value


def world_section(name: str, data) -> object:
    """One world section (``sun``, ``sky``, ``ground``, ``fog``, ``look``) from a mapping, type-checked
    field by field; unknown fields and bad values raise :class:`ConfigError` naming ``world.<name>.<field>``.
    ``look`` may also be given as just its style string (``"look": "flat"``)."""
    cls = WORLD_SECTIONS[name]
    if name == "look" and isinstance(data, str):
        data = {"style": data}
    if not isinstance(data, dict):
        raise ConfigError(f"world.{name}: expected a mapping, got {type(data).__name__}")
    known = {f.name: str(f.type) for f in fields(cls)}
    unknown = sorted(set(data) - set(known))
    if unknown:
        raise ConfigError(f"{', '.join(f'world.{name}.{u}' for u in unknown)}: unknown field (known: {', '.join(sorted(known))})")
    return cls(**{k: _coerce_field(f"world.{name}.{k}", known[k], v) for k, v in data.items()})


def world_from_dict(data) -> dict:
    """The world dict of ``vset /sceneforge/world`` → ``{"env": str|None, "sun": Sun, ...}``; every
    section not given gets its defaults (so a world is a pure function of the dict)."""
    if not isinstance(data, dict):
        raise ConfigError(f"world: expected a mapping, got {type(data).__name__}")
    unknown = sorted(set(data) - {"env", *WORLD_SECTIONS})
    if unknown:
        raise ConfigError(f"world: unknown field(s) {unknown} (known: env, {', '.join(WORLD_SECTIONS)})")
    env = data.get("env")
    if env is not None:
        env = _coerce_field("world.env", "str | None", env)
    out: dict = {"env": env}
    for k, cls in WORLD_SECTIONS.items():
        out[k] = world_section(k, data[k]) if k in data else cls()
    return out


def world_to_dict(env: str | None = None, **sections) -> dict:
    """JSON-ready world dict from section objects (missing sections are left out = defaults)."""
    out: dict = {"env": env}
    for k in WORLD_SECTIONS:
        if sections.get(k) is not None:
            out[k] = {f: list(v) if isinstance(v, tuple) else v for f, v in asdict(sections[k]).items()}
    return out


def apply_world(scene: "Scene", data, check=None) -> None:
    """Replace the scene's env and every world section from a world dict (validated first, then
    ``check(world)`` when given: e.g. the server refusing ids its asset catalogue does not know)."""
    w = world_from_dict(data)
    if check is not None:
        check(w)
    scene.env, scene.sun, scene.sky, scene.ground, scene.fog, scene.look = (
        w["env"],
        w["sun"],
        w["sky"],
        w["ground"],
        w["fog"],
        w["look"],
    )
