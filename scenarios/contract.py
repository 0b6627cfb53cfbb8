"""The one contract between the runner (inline, local farm, Ray) and every scenario.

A *job* is a scenario + its config + a seed + a sample count. A scenario is a class, registered
beside its definition (:func:`scenarios.registry.register_scenario`, as timm's ``register_model``)::

    @register_scenario
    class Distance(Scenario):
        NAME = "distance"                        # registry name: `sceneforge run distance`
        Config = DistanceConfig                  # a ScenarioConfig: its fields are the command line

        def plan(self) -> JobPlan: ...           # count samples, fingerprint the config
        def preflight(self) -> None: ...         # optional: checks run before the first-use asset fetch
        def server_spec(self) -> ServerSpec: ... # optional: packs / licences / renderer
        def run(self, shard, out_dir, *, server, progress=None) -> ShardResult: ...  # one shard
        def finalize(self, out_dir) -> dict: ... # tables, splits, dataset card; returns stats

``Scenario(config)`` parses the config once (a parsed ``Config`` is taken as it is): the runner
builds the scenario once per process (the parent, each worker) and calls its steps, so nothing
re-parses the config or re-reads an environment file per step. The farm splits the sample
indices into :class:`Shard` s and calls ``run`` on a worker that owns a render server. Because
every sample's RNG derives from ``(seed, ..., index)``, the output does not depend on which worker
ran which shard; ``finalize`` then merges per-sample records in index order.

``NEEDS_SERVER = False`` (pure CPU work such as re-encoding): the farm starts no render server
and passes ``server=""``. ``wds_samples(out_dir)`` (optional): the samples for ``--format wds``.

Scenarios are found by name through :mod:`scenarios.registry` (built-in ones and the
``sceneforge.scenarios`` entry points of installed plugins) or by import path; the output
directory is claimed (``OUT/job.json``: :meth:`Scenario.path` + fingerprint + normalised config)
by the runner alone.

``run`` must be idempotent: a sample whose files are complete is skipped, each file is written
to a temporary name and renamed, so a killed worker never leaves a half-written sample.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import ClassVar

from sceneforge.core.errors import ConfigError
from sceneforge.scenarios.config import ScenarioConfig
from sceneforge.scenarios.registry import by_path, lookup, scenario_names


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


class Scenario:
    """Base of every scenario (see the module docstring): one instance per job and process."""

    NAME: ClassVar[str] = ""  # registry name (an identifier)
    Config: ClassVar[type[ScenarioConfig] | None] = None  # None: the config stays a plain dict (test toys)
    NEEDS_SERVER: ClassVar[bool] = True
    # OUT/job.json's "scenario" and what workers import: the defining module's path unless set
    # (sparrta and videos keep their package's, so datasets made before classes resume)
    PATH: ClassVar[str | None] = None

    def __init__(self, config: "dict | ScenarioConfig"):
        cls = type(self).Config
        self.config = cls.from_dict(config) if cls is not None else config

    @classmethod
    def path(cls) -> str:
        return cls.PATH or short_path(cls.__module__)

    def plan(self) -> JobPlan:
        raise NotImplementedError

    def preflight(self) -> None:
        """Refuse a bad config (:class:`ConfigError`, one line) on what does not depend on the
        assets the CLI fetches on first use: the command line calls it BEFORE that fetch (~180 MB
        into an empty cache), so a typo is refused without downloading or writing anything.
        ``plan`` still checks everything, on the assets as they are then. Default: nothing beyond
        the config's own validation (done when the config was parsed)."""

    def server_spec(self) -> ServerSpec:
        """What this job's render servers must serve (default: the plain default library)."""
        return ServerSpec()

    def run(self, shard: Shard, out_dir: Path, *, server: str, progress=None) -> ShardResult:
        raise NotImplementedError

    def finalize(self, out_dir: Path) -> dict:
        raise NotImplementedError


LIBRARY_PACKAGES = ("core", "engine", "scenarios", "probing", "renderfarm", "assets_manifest")


def import_path(name: str) -> str:
    """The module a scenario path names. Paths into the library are written, and recorded in
    every dataset's job.json, relative to the ``sceneforge`` namespace the library installs
    under (``"scenarios.sparrta"`` is ``sceneforge.scenarios.sparrta``): datasets made before the
    namespace move resume unchanged, and a user's own top-level ``scenarios`` package never
    shadows ours. Any other path is imported as it is."""
    return f"sceneforge.{name}" if name.split(".", 1)[0] in LIBRARY_PACKAGES else name


def short_path(module: str) -> str:
    """The inverse of :func:`import_path`: ``sceneforge.scenarios.distance`` → ``scenarios.distance``."""
    head, _, tail = module.partition(".")
    return tail if head == "sceneforge" and tail.split(".", 1)[0] in LIBRARY_PACKAGES else module


def get_scenario(name_or_path: str) -> type[Scenario]:
    """A scenario class by registered name (``"sparrta"``, built-in or a plugin's) or by import
    path (``"scenarios.sparrta"``, ``"my_pkg.my_scenario"``: the :class:`Scenario` it defines)."""
    cls = lookup(name_or_path) or by_path(name_or_path)
    if cls is not None:
        return cls
    path = import_path(name_or_path)
    try:
        module = importlib.import_module(path)
    except ModuleNotFoundError as e:
        if e.name and path.startswith(e.name):
            raise ConfigError(
                f"scenario '{name_or_path}': not a registered scenario ({', '.join(scenario_names())}) "
                "nor an importable module: no such module"
            ) from e
        raise
    found = by_path(name_or_path) or _defined_in(module)
    if found is None:
        raise ConfigError(
            f"scenario '{name_or_path}' defines no Scenario class (sceneforge.scenarios.contract.Scenario; docs/scenarios.md)"
        )
    return found


def _defined_in(module: ModuleType) -> type[Scenario] | None:
    classes = [
        c for c in vars(module).values() if isinstance(c, type) and issubclass(c, Scenario) and c.__module__ == module.__name__
    ]
    if len(classes) > 1:
        raise ConfigError(f"scenario module '{module.__name__}' defines {len(classes)} Scenario classes; register them by name")
    return classes[0] if classes else None


def config_class(name_or_path: str) -> type[ScenarioConfig]:
    """The scenario's ``Config`` (its fields are its command line and its job.json record)."""
    cls = get_scenario(name_or_path).Config
    if cls is None:
        raise ConfigError(f"scenario '{name_or_path}' has no Config (a scenarios.config.ScenarioConfig dataclass)")
    return cls
