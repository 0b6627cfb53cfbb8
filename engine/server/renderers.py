"""The renderer registry: ``--renderer NAME`` → a backend factory (the single source for CLI choices).

A renderer is a :class:`~engine.server.backend.RenderBackend` built from the server's mesh
provider and thread count. Register a new one with :func:`register_renderer`; the server
(``python -m engine.server --renderer NAME``), ``sceneforge serve`` and every scenario that
starts servers list their choices from :func:`renderer_names`.
"""
from __future__ import annotations

from typing import Callable

from core.errors import ConfigError, RenderError
from engine.server.backend import MeshProvider, RenderBackend

BackendFactory = Callable[[MeshProvider, int], RenderBackend]
DEFAULT_RENDERER = "gl"

_RENDERERS: dict[str, tuple[BackendFactory, str]] = {}


def register_renderer(name: str, description: str) -> Callable[[BackendFactory], BackendFactory]:
    """Decorator: make ``factory(mesh_provider, threads)`` available as ``--renderer name``."""
    def deco(factory: BackendFactory) -> BackendFactory:
        _RENDERERS[name] = (factory, description)
        return factory
    return deco


def renderer_names() -> list[str]:
    return sorted(_RENDERERS)


def renderer_descriptions() -> dict[str, str]:
    return {k: v[1] for k, v in sorted(_RENDERERS.items())}


def backend_factory(name: str) -> BackendFactory:
    """The factory registered as ``name``; a ConfigError listing the choices otherwise."""
    try:
        return _RENDERERS[name][0]
    except KeyError:
        raise ConfigError(f"renderer: unknown renderer {name!r}; choose one of {', '.join(renderer_names())}") from None


@register_renderer("gl", "embedded rasteriser: moderngl on EGL/llvmpipe (CPU), lit + depth + ids in one pass")
def gl_backend(mesh_provider: MeshProvider, threads: int) -> RenderBackend:
    """The embedded moderngl renderer, imported only when the first image is asked for."""
    try:
        from engine.server.gl.backend import GLBackend
    except ImportError as e:
        raise RenderError(f"the embedded renderer is not available: {e}") from e
    return GLBackend(mesh_provider, threads=threads)
