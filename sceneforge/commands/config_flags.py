"""Command-line flags generated from a scenario config's fields, so no command wires flags to
fields by hand.

Every field declared with :func:`sceneforge.scenarios.config.option` (help, flag name, choices)
becomes a flag: ``n: int = option(8, help="scenes")`` is ``--n N``; a tuple field takes one or
more values; a bool field that defaults to False is a switch (``--masks``), one that defaults to
True is switched off by its ``flag`` (``--no-clutter``). A nested config field (``motion``)
contributes its own fields' flags, set as ``motion.field``. Flags default to "not given", so a
``--config`` file's values stand unless a flag overrides them (scenarios/config_loader.py).

    add_config_flags(parser, SparrtaConfig, skip=("tasks",))
    cfg, plain = config_from_args(args, SparrtaConfig, command="sceneforge generate")
"""

from __future__ import annotations

import argparse
import dataclasses
import typing
from typing import Any, Iterable, Mapping

from sceneforge.scenarios.config import cli_fields, is_tuple_field
from sceneforge.scenarios.config_loader import load_config

DEST = "config:"  # argparse dest prefix of generated flags (never a valid identifier: no clash)


def flag_names(f: dataclasses.Field) -> list[str]:
    """``flag`` (a name or several), else ``--`` + the field's name (a nested field's too: ``--fps``)."""
    flag = f.metadata.get("flag")
    names = [flag] if isinstance(flag, str) else list(flag or ())
    return names or ["--" + f.name.replace("_", "-")]


def _kind(cls: type, f: dataclasses.Field) -> str:
    hints = typing.get_type_hints(cls)
    hint = hints.get(f.name)
    args = [a for a in typing.get_args(hint) if a is not type(None)] or [hint]
    if is_tuple_field(cls, f.name):
        return "tuple"
    for kind, t in (("bool", bool), ("int", int), ("float", float)):
        if any(a is t for a in args):
            return kind
    if dataclasses.is_dataclass(args[0]):
        return "nested"
    return "str"


def add_config_flags(
    parser: argparse.ArgumentParser, cls: type, *, skip: Iterable[str] = (), required: Iterable[str] = (), prefix: str = ""
) -> None:
    """One flag per command-line field of ``cls`` (except ``skip``; ``required`` ones must be given)."""
    skip, required = set(skip), set(required)
    for f in cli_fields(cls):
        if f.name in skip:
            continue
        meta, kind = f.metadata, _kind(cls, f)
        if kind == "nested":
            add_config_flags(
                parser,
                typing.get_type_hints(cls)[f.name],
                skip={s.split(".", 1)[1] for s in skip if s.startswith(f.name + ".")},
                prefix=prefix + f.name + ".",
            )
            continue
        kw: dict[str, Any] = {"dest": DEST + prefix + f.name, "default": None, "help": _help(f, kind)}
        if kind != "bool" and (meta.get("metavar") or not meta.get("choices") or meta.get("type")):
            kw["metavar"] = meta.get("metavar") or f.name.upper()
        if kind == "bool":
            kw.update(action="store_const", const=not f.default if f.default in (True, False) else True)
        elif meta.get("repeat"):
            kw.update(action="append", type=meta.get("type") or str)
        else:
            kw["type"] = meta.get("type") or {"int": int, "float": float}.get(kind, str)
            if meta.get("choices") and not meta.get("type"):
                kw["choices"] = meta["choices"]
            if kind == "tuple" and not meta.get("type"):
                kw["nargs"] = "+"
        if f.name in required:
            kw["required"] = True
        parser.add_argument(*flag_names(f), **kw)


def _help(f: dataclasses.Field, kind: str) -> str:
    text = f.metadata.get("help") or ""
    default = f.default if f.default is not dataclasses.MISSING else None
    if (
        kind != "bool"
        and default not in (None, (), "")
        and "default" not in text
        and not (isinstance(default, tuple) and len(default) > 3)
    ):
        shown = ",".join(map(str, default)) if isinstance(default, tuple) else default
        text = f"{text} (default {shown})" if text else f"default {shown}"
    return text.replace("%", "%%")


def overrides_from_args(args: argparse.Namespace) -> dict:
    """The generated flags that were given: ``{field or "nested.field": value}``."""
    return {k[len(DEST) :]: v for k, v in vars(args).items() if k.startswith(DEST) and v is not None}


def config_from_args(
    args: argparse.Namespace, cls: type, *, command: str, extra: Mapping[str, Any] | None = None
) -> tuple[Any, dict]:
    """``--config`` YAML (when the command has it) overridden by the generated flags and ``extra``
    → (validated config, the merged plain dict the runner records)."""
    overrides = {**overrides_from_args(args), **{k: v for k, v in (extra or {}).items() if v is not None}}
    return load_config(cls.from_dict, command=command, config_file=getattr(args, "config", None), overrides=overrides)
