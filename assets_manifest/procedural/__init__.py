"""Procedural asset generators: every SpaRRTa class from trimesh primitives, always available.

Each generator is a small function ``(**params) -> RenderMesh`` registered by name; a manifest
entry ``procedural: {generator: truck, params: {length_cm: 650}}`` calls it. They need no files or
network, cost hundreds to a few thousand triangles, and are deterministic (fixed seeds), so tests
and the demo run anywhere and produce byte-identical images.

    >>> from assets_manifest.procedural import generate
    >>> generate("cone", {}).bounds()[1][2]   # height in cm
    70.0
"""
from __future__ import annotations

import inspect
from typing import Any, Callable

from sceneforge.core.errors import ConfigError
from sceneforge.core.meshes import RenderMesh

GENERATORS: dict[str, Callable[..., RenderMesh]] = {}


def register(name: str) -> Callable:
    def deco(fn: Callable[..., RenderMesh]) -> Callable[..., RenderMesh]:
        GENERATORS[name] = fn
        return fn
    return deco


def generate(name: str, params: dict[str, Any] | None = None) -> RenderMesh:
    """Run generator ``name`` with ``params``; unknown names/params raise ConfigError."""
    _load()
    if name not in GENERATORS:
        raise ConfigError(f"unknown procedural generator {name!r}; known: {', '.join(sorted(GENERATORS))}")
    fn = GENERATORS[name]
    params = dict(params or {})
    accepted = inspect.signature(fn).parameters
    bad = sorted(set(params) - set(accepted))
    if bad:
        raise ConfigError(f"generator {name!r}: unknown params {bad}; accepted: {sorted(accepted)}")
    return fn(**params)


def names() -> list[str]:
    _load()
    return sorted(GENERATORS)


def _load() -> None:
    """Import the generator modules (registration happens at import)."""
    from sceneforge.assets_manifest.procedural import animals, figures, ground, nature, props, vehicles  # noqa: F401
