"""Procedural asset generators: every SpaRRTa class from trimesh primitives, always available.

Each generator is a small function ``(**params) -> RenderMesh`` registered by name; a manifest
entry ``procedural: {generator: truck, params: {length_cm: 650}}`` calls it. They need no files or
network, cost hundreds to a few thousand triangles, and are deterministic (fixed seeds), so tests
and the demo run anywhere and produce byte-identical images. The table they register in is
``procedural/registry.py``; this package imports every generator module, so it is complete.

    >>> from sceneforge.assets_manifest.procedural import generate
    >>> generate("traffic_cone", {}).bounds()[1][2]   # height in cm
    70.0
"""

from __future__ import annotations

import inspect
from typing import Any

from sceneforge.assets_manifest.procedural import animals, figures, ground, nature, props, vehicles  # noqa: F401  (register at import)
from sceneforge.assets_manifest.procedural.registry import GENERATORS
from sceneforge.core.errors import ConfigError
from sceneforge.core.meshes import RenderMesh


def generate(name: str, params: dict[str, Any] | None = None) -> RenderMesh:
    """Run generator ``name`` with ``params``; unknown names/params raise ConfigError."""
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
    return sorted(GENERATORS)
