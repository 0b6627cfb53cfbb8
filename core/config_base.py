"""One base for every validated config: parse a plain dict, validate, normalise, fingerprint.

A config is a frozen dataclass deriving from :class:`ConfigBase` (a scenario's from
``sceneforge.scenarios.config.ScenarioConfig``, a probe job's ``probing.config.ProbeConfig``).
Its fields are declared with :func:`option`, whose metadata serves two readers: validation here
(``choices``, ``bounds``, ``integer``) and the command line (``help``, ``flag``;
``sceneforge.commands.config_flags`` turns every field into a flag, so no command wires flags to
fields by hand)::

    @dataclass(frozen=True)
    class Config(ConfigBase):
        LABEL = "distance config"
        n: int = option(8, bounds=(1, 100_000), integer=True, help="scenes")
        image_format: str = option("jpg", choices=("jpg", "png"), flag="--format", help="image format")

        def check(self, source):           # optional: rules between fields
            self.need(self.n % 2 == 0, "n", "must be even", self.n, source)

``Config.from_dict(raw, source)`` refuses a non-mapping, unknown fields (listing the known
ones), a missing required field, a value of the wrong kind and every rule, each in one line
naming ``source``, the field and the value: ``c.yaml: image_format must be one of ('jpg', 'png'),
got 'gif'``. ``to_dict()`` is the normalised plain form (tuples as lists; fields in
:attr:`ConfigBase.OMIT_AT_DEFAULT` left out while at that value, so records made before a field
existed keep their identity); ``fingerprint()`` is its hash, what resume compares.

This module knows nothing of scenarios or probing (core imports nothing of ours but core), so
every package may build its configs on it (tests/test_layering.py).
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import math
import types
import typing
from dataclasses import MISSING, asdict, dataclass, fields, replace
from typing import Any, Callable, ClassVar, Mapping, TypeVar

from sceneforge.core.errors import ConfigError
from sceneforge.core.suggest import did_you_mean

C = TypeVar("C", bound="ConfigBase")


def option(
    default: Any = MISSING,
    *,
    help: str = "",
    flag: str | None = None,
    choices: tuple | None = None,
    bounds: tuple[float, float] | None = None,
    integer: bool = False,
    cli: bool = True,
    default_factory: Any = MISSING,
    compare: bool = True,
    metavar: str | None = None,
    parse: Callable[[str], Any] | None = None,
    repeat: bool = False,
) -> Any:
    """A config field with what validation and the command line need to know about it.

    help:     the flag's help text (and the field's documentation);
    flag:     the flag's name (default ``--`` + the field name with ``-`` for ``_``); for a bool
              field whose default is True, e.g. ``--no-clutter`` (the flag sets it False);
    choices:  allowed values (of each item, for a tuple field);
    bounds:   ``(low, high)`` inclusive, for a number (not a bool, not NaN);
    integer:  the value must be an int (not a bool);
    cli:      False keeps the field off the command line (recorded content);
    parse:    how the flag's one text value becomes the field's (e.g. :func:`comma_list`; ``str``:
              the text as it is, for a field whose ``coerce`` reads its spelling, ``1e-2,1e-3``);
    repeat:   the flag may be given several times (``--model-arg K=V --model-arg K2=V2``): a list.
    """
    meta = {
        "help": help,
        "flag": flag,
        "choices": tuple(choices) if choices is not None else None,
        "bounds": bounds,
        "integer": integer,
        "cli": cli,
        "metavar": metavar,
        "type": parse,
        "repeat": repeat,
    }
    kw: dict[str, Any] = {"metadata": meta, "compare": compare}
    if default_factory is not MISSING:
        kw["default_factory"] = default_factory
    elif default is not MISSING:
        kw["default"] = default
    if not compare:
        kw["hash"] = False
    return dataclasses.field(**kw)


def comma_list(text: str) -> list[str]:
    """``"cc0, cc-by"`` -> ``["cc0", "cc-by"]`` (a flag's comma-separated value)."""
    return [x.strip() for x in text.split(",") if x.strip()]


def is_number(value: Any) -> bool:
    """A real number: not a bool, not NaN (an int of any size: ``math.isnan`` of a 400-digit one
    raised OverflowError, issue 48)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    return isinstance(value, int) or not math.isnan(value)


def _num(x: float) -> str:
    """A bound as messages show it: ``1``, ``0.5``, ``inf``, ``9223372036854775807``."""
    return f"{x:g}" if isinstance(x, float) else str(x)


def is_tuple_field(cls: type, name: str) -> bool:
    """Whether the field is declared a tuple (``tuple[str, ...]``, possibly ``| None``)."""
    hint = _hints(cls).get(name)
    args = typing.get_args(hint) if typing.get_origin(hint) in (typing.Union, types.UnionType) else (hint,)
    return any(a is tuple or typing.get_origin(a) is tuple for a in args)


@functools.lru_cache(maxsize=None)
def _hints(cls: type) -> dict:
    return typing.get_type_hints(cls)


@dataclass(frozen=True)
class ConfigBase:
    """Base of every validated config (see the module docstring)."""

    LABEL: ClassVar[str] = "config"  # what error sources say when none is given
    ALIASES: ClassVar[Mapping[str, str]] = {}  # old field name -> its field (both given: error)
    OMIT_AT_DEFAULT: ClassVar[Mapping[str, Any]] = {}  # field -> value at which to_dict leaves it out

    # --- parsing -----------------------------------------------------------------------------
    @classmethod
    def from_dict(cls: type[C], raw: Any, source: str | None = None) -> C:
        """Validate a plain dict (YAML file + flags, or a recorded ``job.json`` config). An
        instance of ``cls`` is returned as it is: it was validated when it was made, so a config
        is parsed once per process however many steps take it (scenarios.contract.Scenario)."""
        if isinstance(raw, cls):
            return raw
        source = source or cls.default_source()
        if not isinstance(raw, Mapping):
            raise ConfigError(f"{source}: expected a mapping of config fields, got {type(raw).__name__}")
        values = cls.rename_aliases(dict(raw), source)
        known = [f.name for f in fields(cls)]
        unknown = sorted(set(values) - set(known), key=str)
        if unknown:
            raise ConfigError(f"{source}: unknown field(s) {', '.join(map(str, unknown))}; known: {', '.join(known)}")
        missing = [f.name for f in fields(cls) if f.default is MISSING and f.default_factory is MISSING and f.name not in values]
        if missing:
            raise ConfigError(
                f"{source}: missing field '{missing[0]}' (--{missing[0].replace('_', '-')} is required, "
                f"or set '{missing[0]}' in --config)"
            )
        values = cls.coerce(values, source)
        try:
            cfg = cls(**values)
        except TypeError as e:
            raise ConfigError(f"{source}: {e}") from None
        cfg.check_fields(source)
        cfg.check(source)
        return cfg.complete(source)

    @classmethod
    def default_source(cls) -> str:
        """What errors name when ``from_dict`` is given no source."""
        return cls.LABEL

    @classmethod
    def rename_aliases(cls, values: dict, source: str) -> dict:
        """Old field names (:attr:`ALIASES`) under their current name."""
        for old, new in cls.ALIASES.items():
            if old in values:
                if new in values:
                    raise ConfigError(f"{source}: give {new} only ({old} is its old name)")
                values = {(new if k == old else k): v for k, v in values.items()}
        return values

    @classmethod
    def coerce(cls, values: dict, source: str) -> dict:
        """Plain YAML/JSON values into field types: a string or list for a tuple field is a tuple
        of strings. Scenarios with nested configs extend this."""
        for name, value in list(values.items()):
            if value is not None and is_tuple_field(cls, name):
                values[name] = (
                    (value,)
                    if isinstance(value, str)
                    else tuple(str(x) for x in (value if isinstance(value, (list, tuple)) else [value]))
                )
        return values

    # --- validation --------------------------------------------------------------------------
    @staticmethod
    def need(ok: bool, name: str, what: str, value: Any, source: str) -> None:
        """One rule: ``source: name what, got value`` when it fails."""
        if not ok:
            text = repr(value)
            shown = text if len(text) <= 80 else f"{text[:60]}... ({len(text)} characters)"
            raise ConfigError(f"{source}: {name} {what}, got {shown}")

    def check_fields(self, source: str) -> None:
        """The rules declared on the fields (choices, bounds, integer); None passes when it is the default."""
        for f in fields(self):
            meta, value = f.metadata, getattr(self, f.name)
            if not meta or (value is None and f.default is None):
                continue
            bounds, integer = meta.get("bounds"), meta.get("integer")
            kind = "an integer" if integer else "a number"
            within = f" in [{_num(bounds[0])}, {_num(bounds[1])}]" if bounds is not None else ""
            if integer:
                self.need(
                    isinstance(value, int) and not isinstance(value, bool), f.name, f"must be {kind}{within}", value, source
                )
            if bounds is not None:
                self.need(is_number(value) and bounds[0] <= value <= bounds[1], f.name, f"must be {kind}{within}", value, source)
            choices = meta.get("choices")
            if choices is not None:
                items = value if isinstance(value, tuple) else (value,)
                bad = [v for v in items if v not in choices]
                try:
                    self.need(not bad, f.name, f"must be one of {choices}", value, source)
                except ConfigError as e:  # the closest choice, as env names and flags get (issue 47)
                    hint = did_you_mean(str(bad[0]), [str(c) for c in choices])
                    raise ConfigError(f"{e}; {hint}" if hint else str(e)) from None

    def check(self, source: str) -> None:
        """Rules between fields; a scenario overrides this."""

    def complete(self: C, source: str) -> C:
        """Values derived once, after validation (e.g. the environments' recorded content)."""
        return self

    # --- identity ----------------------------------------------------------------------------
    def to_dict(self) -> dict:
        """The normalised plain form (``OUT/job.json``'s ``config``): tuples as lists, fields at
        their :attr:`OMIT_AT_DEFAULT` value left out."""
        d = asdict(self)
        for name, value in self.OMIT_AT_DEFAULT.items():
            if name in d and d[name] == value:
                del d[name]
        return {k: list(v) if isinstance(v, tuple) else v for k, v in d.items()}

    def fingerprint(self) -> str:
        """Hash of :meth:`to_dict`: resume refuses an output directory made with a different one."""
        return hashlib.sha256(json.dumps(self.to_dict(), sort_keys=True).encode()).hexdigest()[:16]

    def replace(self: C, **changes: Any) -> C:
        return replace(self, **changes)


def cli_fields(cls: type[ConfigBase]) -> list[dataclasses.Field]:
    """The fields a command line offers (``option(cli=False)`` and fields without metadata left out)."""
    return [f for f in fields(cls) if f.metadata and f.metadata.get("cli", True)]
