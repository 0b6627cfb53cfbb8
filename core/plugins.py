"""Plugins: what installed distributions add through entry points, read beside the built-in registries.

A third-party package extends sceneforge without forking it by declaring entry points in its own
``pyproject.toml`` (``examples/sceneforge-height/`` is a real one)::

    [project.entry-points."sceneforge.scenarios"]
    height = "sceneforge_height.scenario:Height"    # a scenarios.contract.Scenario subclass
    [project.entry-points."sceneforge.heads"]
    mlp = "sceneforge_height.heads:MLPHead"          # a probe head class

Each registry reads its group beside its built-in entries, once per process, on its first
lookup. Two ways, by what a lookup needs:

* **loaded** (:func:`load_group`: scenarios, renderers, render kinds): every entry point is
  imported and what it names goes through the registry's own registration (the decorator the
  built-ins use); the registry needs the object itself (a scenario's ``Config`` is its command
  line, a renderer's factory its ``--renderer`` choice).
* **declared** (:func:`declared`: heads, backbone kinds): the name and ``module:attr`` are read
  from the distribution's metadata without importing anything, as the built-ins' are written
  (``probing.registry``: the CLI's ``--heads`` choices without torch); the target is imported
  when the name is used.

A plugin that fails to import or to register is recorded with a one-line reason, logged once as
a warning and skipped: the built-ins and the other plugins keep working. ``sceneforge plugins``
imports every plugin of every group and lists each with its distribution and state. A plugin may
not take a built-in's name (its registration refuses it).
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from importlib import metadata
from typing import Callable

log = logging.getLogger("sceneforge.plugins")

# group -> what an entry point of it names
GROUPS: dict[str, str] = {
    "sceneforge.scenarios": "a Scenario class (scenarios.contract.Scenario)",
    "sceneforge.heads": "a probe head class (probing.heads: Class(dim, num_classes, dropout))",
    "sceneforge.backbones": "a backbone kind: fn(ident, weights, kwargs) -> probing.backbones.Backbone",
    "sceneforge.renderers": "a renderer factory: fn(mesh_provider, threads, options=None) -> RenderBackend",
    "sceneforge.render_kinds": "a derived render kind (engine.render_kinds.DerivedKind)",
}


@dataclass(frozen=True)
class Plugin:
    """One entry point as found: where it came from and whether it loaded."""

    group: str
    name: str
    value: str  # "module:attr", as the distribution declared it
    dist: str  # "name version" of the distribution that declared it
    error: str | None = None  # one line when it failed to load

    def line(self) -> str:
        state = "ok" if self.error is None else f"FAILED: {self.error}"
        return f"{self.group:<22} {self.name:<12} {self.value}  [{self.dist}]  {state}"


_LOADED: dict[str, list[Plugin]] = {}
_LOCK = threading.RLock()


_ALL: list = []  # every installed entry point, read once per process (~75 ms for ~300 distributions)


def entry_points(group: str) -> list[metadata.EntryPoint]:
    """The installed entry points of ``group``, sorted by name (the first distribution found wins a name)."""
    with _LOCK:
        if not _ALL:
            _ALL.append(metadata.entry_points())
    seen: dict[str, metadata.EntryPoint] = {}
    for ep in _ALL[0].select(group=group):
        seen.setdefault(ep.name, ep)
    return [seen[n] for n in sorted(seen)]


def dist_of(ep: metadata.EntryPoint) -> str:
    d = getattr(ep, "dist", None)
    return f"{d.metadata['Name']} {d.version}" if d is not None else "?"


def one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {text}"[:300]


def declared(group: str) -> list[Plugin]:
    """The entry points of ``group`` as declared (nothing imported)."""
    return [Plugin(group, ep.name, ep.value, dist_of(ep)) for ep in entry_points(group)]


def load_group(group: str, register: Callable[[str, object], None]) -> list[Plugin]:
    """Import every entry point of ``group`` once per process and hand ``(name, object)`` to
    ``register`` (the registry's own); a failure (import or registration) is recorded, logged as
    one warning line and skipped. Returns what was found (also kept for :func:`check_all`)."""
    with _LOCK:
        if group in _LOADED:
            return _LOADED[group]
        found = []
        for ep in entry_points(group):
            error = None
            try:
                register(ep.name, ep.load())
            except Exception as e:  # noqa: BLE001 - a broken plugin must not break the rest
                error = one_line(e)
                log.warning("plugin %s %r (%s) is skipped: %s (`sceneforge plugins` lists them)", group, ep.name, ep.value, error)
            found.append(Plugin(group, ep.name, ep.value, dist_of(ep), error))
        _LOADED[group] = found
        return found


def check_declared(group: str, check: Callable[[str, object], None] | None = None) -> list[Plugin]:
    """Import every entry point of a *declared* group now (what ``sceneforge plugins`` does) and
    run ``check(name, object)`` on it; each failure is one line in its record."""
    found = []
    for ep in entry_points(group):
        error = None
        try:
            obj = ep.load()
            if check is not None:
                check(ep.name, obj)
        except Exception as e:  # noqa: BLE001 - reported, never raised
            error = one_line(e)
        found.append(Plugin(group, ep.name, ep.value, dist_of(ep), error))
    return found


def loaded(group: str) -> list[Plugin] | None:
    """What :func:`load_group` found for ``group`` in this process (None: not loaded yet)."""
    with _LOCK:
        return _LOADED.get(group)
