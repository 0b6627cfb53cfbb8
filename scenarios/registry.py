"""The scenario registry: a scenario is found by its short name, everywhere.

A scenario is one module (or package) that provides the contract of :mod:`scenarios.contract`::

    NAME = "sparrta"                          # registry name, CLI and docs use it
    Config                                    # a scenarios.config.ScenarioConfig dataclass:
                                              # Config.from_dict(raw, source) validates (ranges,
                                              # defaults, env-derived values, unknown keys named),
                                              # .to_dict() normalises, .fingerprint(); its fields'
                                              # metadata are the command line (sceneforge run NAME)
    plan(config) -> JobPlan                   # validate, count samples, fingerprint
    run(config, shard, out_dir, *, server) -> ShardResult
    finalize(config, out_dir) -> dict
    server_spec(config) -> ServerSpec         # optional: packs / licences / renderer for servers
    NEEDS_SERVER = True                       # optional

Adding a scenario costs that module plus one line in :data:`BUILTIN` (``scenarios/distance.py`` is
the example); ``sceneforge run NAME --flags`` runs any of them, flags generated from ``Config``
(:func:`scenarios.contract.config_class` reads it; :func:`get_scenario` checks ``NAME``). User code can call
:func:`register_scenario` for scenarios that live outside this repository. Runners
(:func:`renderfarm.run_job`) and CLI commands take either a registry name or an import path.
"""

from __future__ import annotations


from sceneforge.core.errors import ConfigError

# name -> import path of the module implementing the contract
BUILTIN: dict[str, str] = {
    "sparrta": "scenarios.sparrta",  # SpaRRTa ego/allo relation images
    "videos": "scenarios.videos",  # DSI-Bench-style dynamic clips + variants
    "vqa": "scenarios.vqa.scenario",  # template VQA over metric scene graphs (CRISP/SpaCE-10 style)
    "distance": "scenarios.distance",  # which of two objects is nearer the camera (the kit's small example)
}
_REGISTRY: dict[str, str] = dict(BUILTIN)


def register_scenario(name: str, module: str) -> None:
    """Make ``module`` (an import path) available as ``name``."""
    if not name.isidentifier():
        raise ConfigError(f"scenario name {name!r} must be an identifier")
    _REGISTRY[name] = module


def registered(name: str) -> bool:
    return name in _REGISTRY


def scenario_names() -> list[str]:
    return sorted(_REGISTRY)


def module_path(name_or_path: str) -> str:
    """Registry name → import path; anything else is taken as an import path (checked on import)."""
    return _REGISTRY.get(name_or_path, name_or_path)
