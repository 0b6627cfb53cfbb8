"""The scenario registry: a scenario is found by its short name, everywhere.

A scenario is a :class:`scenarios.contract.Scenario` subclass, registered where it is defined::

    @register_scenario
    class Distance(Scenario):
        NAME = "distance"
        Config = DistanceConfig
        ...

Two sources fill the registry, on its first lookup, once per process: the built-in scenario
modules (:data:`BUILTIN_MODULES`: importing one runs its decorator, as timm's model modules do)
and the ``sceneforge.scenarios`` entry points of installed distributions (:mod:`core.plugins`:
a plugin's entry point names its class; a plugin that fails to load is skipped and listed by
``sceneforge plugins``). A plugin cannot take a built-in name. ``sceneforge run NAME --flags``
runs any of them, flags generated from its ``Config``; runners (:func:`renderfarm.run_job`) and
CLI commands take either a registry name or an import path (:func:`scenarios.contract.get_scenario`).
"""

from __future__ import annotations

import importlib
import threading

from sceneforge.core.errors import ConfigError
from sceneforge.core.plugins import load_group

GROUP = "sceneforge.scenarios"
# Where the built-in scenarios are defined (each module registers its class on import).
BUILTIN_MODULES = (
    "sceneforge.scenarios.sparrta.scenario",  # SpaRRTa ego/allo relation images
    "sceneforge.scenarios.videos.scenario",  # DSI-Bench-style dynamic clips + variants
    "sceneforge.scenarios.vqa.scenario",  # template VQA over metric scene graphs (CRISP/SpaCE-10 style)
    "sceneforge.scenarios.distance",  # which of two objects is nearer the camera (the kit's small example)
)
_REGISTRY: dict[str, type] = {}
_LOADING = threading.RLock()
_state = {"loaded": False, "builtins": False}


def register_scenario(cls: type) -> type:
    """Class decorator: make ``cls`` available as ``cls.NAME`` (the name must be an identifier;
    another class may not take a name that is registered already)."""
    name = getattr(cls, "NAME", "")
    if not isinstance(name, str) or not name.isidentifier():
        raise ConfigError(f"scenario class {cls.__qualname__}: NAME {name!r} must be an identifier")
    old = _REGISTRY.get(name)
    if old is not None and (old.__module__, old.__qualname__) != (cls.__module__, cls.__qualname__):
        raise ConfigError(f"scenario name {name!r} is taken by {old.__module__}.{old.__qualname__}")
    _REGISTRY[name] = cls
    return cls


def _register_plugin(name: str, obj: object) -> None:
    if not isinstance(obj, type) or not callable(getattr(obj, "plan", None)):
        raise ConfigError(f"entry point {name!r} names {obj!r}, not a Scenario class")
    if getattr(obj, "NAME", None) != name:
        raise ConfigError(f"entry point {name!r} names a scenario whose NAME is {getattr(obj, 'NAME', None)!r}")
    register_scenario(obj)


def _load() -> None:
    """The built-in modules, then the plugins' entry points: once per process."""
    if _state["loaded"]:
        return
    with _LOADING:
        if _state["loaded"]:
            return
        if not _state["builtins"]:
            _state["builtins"] = True
            for module in BUILTIN_MODULES:
                importlib.import_module(module)
        load_group(GROUP, _register_plugin)
        _state["loaded"] = True


def lookup(name: str) -> type | None:
    """The class registered as ``name``, or None."""
    _load()
    return _REGISTRY.get(name)


def by_path(path: str) -> type | None:
    """The registered class whose job.json path (``Scenario.path()``) is ``path``, or None."""
    _load()
    return next((c for c in _REGISTRY.values() if c.path() == path), None)


def registered(name: str) -> bool:
    return lookup(name) is not None


def scenario_names() -> list[str]:
    _load()
    return sorted(_REGISTRY)
