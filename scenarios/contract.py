"""The one contract between the runner (inline, local farm, Ray) and every scenario.

A *job* is a scenario name + its config (a plain dict, validated by the scenario) + a seed + a
sample count. The farm splits the sample indices into :class:`Shard` s and calls the scenario's
``run(config, shard, out_dir, server=...)`` on a worker that owns a render server. Because every
sample's RNG derives from ``(seed, ..., index)``, the output does not depend on which worker ran
which shard; ``finalize`` then merges per-sample records in index order.

A scenario module (e.g. ``scenarios.sparrta``) provides::

    def plan(config: dict) -> JobPlan            # validate; count samples; fingerprint config
    def run(config: dict, shard: Shard, out_dir: Path, *, server: str) -> ShardResult
    def finalize(config: dict, out_dir: Path) -> dict   # tables, splits, dataset card; returns stats

Optionally a scenario sets ``NEEDS_SERVER = False`` (pure CPU work such as re-encoding); the
farm then starts no render server and passes ``server=""``. A scenario that needs more than the
default library on its servers defines ``server_spec(config) -> ServerSpec`` (asset packs,
licence filter, renderer): the runner passes it to every server it starts *as arguments* and
checks external servers against it.

Scenarios are found by name through :mod:`scenarios.registry`; the output directory is claimed
(``OUT/job.json``: scenario + fingerprint + normalised config) by the runner alone.

``run`` must be idempotent: a sample whose files are complete is skipped, each file is written
to a temporary name and renamed, so a killed worker never leaves a half-written sample.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Protocol

from sceneforge.core.errors import ConfigError
from sceneforge.scenarios.config import ScenarioConfig
from sceneforge.scenarios.registry import module_path, registered, scenario_names


@dataclass(frozen=True)
class Shard:
    """A contiguous or explicit set of global sample indices of one job."""

    shard_id: int
    indices: tuple[int, ...]


@dataclass(frozen=True)
class JobPlan:
    """What a scenario says about a validated config before any work starts."""

    n_samples: int
    fingerprint: str  # hash of the normalised config; resume refuses a different one
    description: str = ""
    config: dict | None = None  # the normalised config recorded in OUT/job.json


@dataclass(frozen=True)
class ServerSpec:
    """What a scenario's render servers must serve; handed to each server as arguments.

    assets:   extra asset-pack manifests (absolute paths) beside the default library;
    licenses: licence families to serve (None = all), e.g. ("cc0", "cc-by");
    renderer: a name from :mod:`engine.server.renderers` (``gl`` = the embedded rasteriser).
    """

    assets: tuple[str, ...] = ()
    licenses: tuple[str, ...] | None = None
    renderer: str = "gl"


@dataclass
class ShardResult:
    """What a worker reports back; the farm aggregates these into the job summary."""

    shard_id: int
    done: list[int] = field(default_factory=list)  # sample indices now complete
    skipped: list[int] = field(default_factory=list)  # already complete before this run
    failed: dict[int, str] = field(default_factory=dict)  # index -> one-line error
    rejections: dict[str, int] = field(default_factory=dict)  # rule -> count
    seconds: float = 0.0


class Scenario(Protocol):
    def plan(self, config: dict) -> JobPlan: ...
    def run(self, config: dict, shard: Shard, out_dir: Path, *, server: str) -> ShardResult: ...
    def finalize(self, config: dict, out_dir: Path) -> dict: ...


LIBRARY_PACKAGES = ("core", "engine", "scenarios", "probing", "renderfarm", "assets_manifest")


def import_path(name: str) -> str:
    """The module a scenario path names. Paths into the library are written, and recorded in
    every dataset's job.json, relative to the ``sceneforge`` namespace the library installs
    under (``"scenarios.sparrta"`` is ``sceneforge.scenarios.sparrta``): datasets made before the
    namespace move resume unchanged, and a user's own top-level ``scenarios`` package never
    shadows ours. Any other path is imported as it is."""
    return f"sceneforge.{name}" if name.split(".", 1)[0] in LIBRARY_PACKAGES else name


def load_scenario(name: str) -> ModuleType:
    """Import a scenario module by import path (``"scenarios.sparrta"``) and check the contract."""
    path = import_path(name)
    try:
        module = importlib.import_module(path)
    except ModuleNotFoundError as e:
        if e.name and path.startswith(e.name):
            raise ConfigError(
                f"scenario '{name}': not a registered scenario ({', '.join(scenario_names())}) "
                "nor an importable module: no such module"
            ) from e
        raise
    missing = [f for f in ("plan", "run", "finalize") if not callable(getattr(module, f, None))]
    if missing:
        raise ConfigError(f"scenario '{name}' lacks {', '.join(missing)}() of the farm contract")
    cls = getattr(module, "Config", None)
    if cls is not None and not (isinstance(cls, type) and issubclass(cls, ScenarioConfig)):
        raise ConfigError(f"scenario '{name}': Config must derive from sceneforge.scenarios.config.ScenarioConfig")
    return module


def server_spec(module: ModuleType, config: dict) -> ServerSpec:
    """The scenario's :class:`ServerSpec` for ``config`` (default: the plain default library)."""
    fn = getattr(module, "server_spec", None)
    return fn(config) if callable(fn) else ServerSpec()


def needs_server(module: ModuleType) -> bool:
    """Whether the farm must give this scenario's workers a render server (default: yes)."""
    return bool(getattr(module, "NEEDS_SERVER", True))


def get_scenario(name_or_path: str) -> ModuleType:
    """A registered scenario by name (``"sparrta"``) or any scenario module by import path,
    imported and checked against the contract (a registered one's ``NAME`` must be its name)."""
    module = load_scenario(module_path(name_or_path))
    name = getattr(module, "NAME", None)
    if registered(name_or_path) and name is not None and name != name_or_path:
        raise ConfigError(f"scenario '{name_or_path}' is registered as {module_path(name_or_path)!r}, whose NAME is {name!r}")
    return module


def config_class(name_or_path: str) -> type[ScenarioConfig]:
    """The scenario's ``Config`` (its fields are its command line and its job.json record)."""
    cls = getattr(get_scenario(name_or_path), "Config", None)
    if cls is None:
        raise ConfigError(f"scenario '{name_or_path}' has no Config (a scenarios.config.ScenarioConfig dataclass)")
    return cls
