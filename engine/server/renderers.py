"""The renderer registry: ``--renderer NAME`` → a backend factory (the single source for CLI choices).

A renderer is a :class:`~engine.server.backend.RenderBackend` built from the server's mesh
provider and thread count. Register a new one with :func:`register_renderer` (a decorator on its
factory); the server (``python -m sceneforge.engine.server --renderer NAME``), ``sceneforge serve``
and every scenario that starts servers list their choices from :func:`renderer_names`.

Installed packages add renderers through the ``sceneforge.renderers`` entry point group
(:mod:`core.plugins`): the entry point names the factory ``fn(mesh_provider, threads,
options=None)``; its docstring's first line is its description, an ``OPTIONS`` attribute (a tuple
of keys) its spec options. They are read on the registry's first lookup; a plugin that fails to
load is skipped (one warning line; ``sceneforge plugins`` lists it) and cannot take a built-in name.
"""

from __future__ import annotations

import functools
from typing import Callable

from sceneforge.core.errors import ConfigError, RenderError
from sceneforge.core.plugins import load_group
from sceneforge.engine.server.backend import MeshProvider, RenderBackend
from sceneforge.engine.server.cycles import install  # light: paths and a version check

BackendFactory = Callable[[MeshProvider, int], RenderBackend]
DEFAULT_RENDERER = "gl"

_RENDERERS: dict[str, tuple[BackendFactory, str]] = {}
_CHECKS: dict[str, Callable[[], None]] = {}
_OPTIONS: dict[str, tuple[str, ...]] = {}
# name -> validate(options): raises ConfigError for a bad option value; run by check_renderer,
# so `--renderer cycles:samples=abc` is one line and exit 2 at start, not a failure per render
_VALIDATORS: dict[str, Callable[[dict], None]] = {}


def register_renderer(
    name: str, description: str, check: Callable[[], None] | None = None, options: tuple[str, ...] = ()
) -> Callable[[BackendFactory], BackendFactory]:
    """Decorator: make ``factory(mesh_provider, threads)`` available as ``--renderer name``.

    ``check()`` (optional, cheap) raises a one-line error when the renderer cannot work here
    (e.g. not installed); servers call it before listening (:func:`check_renderer`).
    ``options``: keys accepted in a spec ``name:key=value,...``; the factory then gets
    ``options={key: value}`` (strings; the factory validates them).
    """

    def deco(factory: BackendFactory) -> BackendFactory:
        _RENDERERS[name] = (factory, description)
        if check is not None:
            _CHECKS[name] = check
        _OPTIONS[name] = tuple(options)
        return factory

    return deco


def _register_plugin(name: str, factory: object) -> None:
    if name in _RENDERERS:
        raise ConfigError(f"renderer {name!r} is built in; a plugin cannot replace it")
    if not callable(factory):
        raise ConfigError(f"entry point {name!r} names {factory!r}, not a renderer factory")
    doc = (getattr(factory, "__doc__", None) or "").strip().splitlines()
    register_renderer(name, doc[0] if doc else f"plugin renderer {name}", options=tuple(getattr(factory, "OPTIONS", ())))(factory)


def _plugins() -> None:
    """The ``sceneforge.renderers`` entry points, beside the built-ins (once per process)."""
    load_group("sceneforge.renderers", _register_plugin)


def parse_spec(spec: str) -> tuple[str, dict[str, str]]:
    """``"cycles:samples=32,seed=1"`` → ``("cycles", {"samples": "32", "seed": "1"})``; validated."""
    _plugins()
    name, _, rest = str(spec).strip().partition(":")
    if name not in _RENDERERS:
        raise ConfigError(f"renderer: unknown renderer {name!r}; choose one of {', '.join(renderer_names())}")
    options: dict[str, str] = {}
    for item in filter(None, (x.strip() for x in rest.split(","))):
        key, eq, value = item.partition("=")
        if not eq or key.strip() not in _OPTIONS[name]:
            allowed = ", ".join(_OPTIONS[name]) or "none"
            raise ConfigError(f"renderer {spec!r}: bad option {item!r} (options of {name}: {allowed})")
        options[key.strip()] = value.strip()
    return name, options


def check_renderer(spec: str) -> None:
    """Raise the renderer's own one-line error if it is unknown, an option value is bad, or it
    cannot run on this machine."""
    name, options = parse_spec(spec)
    if name in _VALIDATORS:
        _VALIDATORS[name](options)
    if name in _CHECKS:
        _CHECKS[name]()


def renderer_names() -> list[str]:
    _plugins()
    return sorted(_RENDERERS)


def renderer_descriptions() -> dict[str, str]:
    _plugins()
    return {k: v[1] for k, v in sorted(_RENDERERS.items())}


def backend_factory(spec: str) -> BackendFactory:
    """The factory of ``spec`` (a name, or ``name:key=value,...``); a ConfigError listing the
    choices otherwise."""
    name, options = parse_spec(spec)
    factory = _RENDERERS[name][0]
    return functools.partial(factory, options=options) if options else factory


@register_renderer(
    "gl",
    "embedded rasteriser: moderngl on EGL/llvmpipe (CPU), lit + depth + ids in one pass; "
    "option gl:lod=0 draws every mesh at full detail (no levels of detail)",
    options=("lod",),
)
def gl_backend(mesh_provider: MeshProvider, threads: int, options: dict | None = None) -> RenderBackend:
    """The embedded moderngl renderer, imported only when the first image is asked for."""
    lod = _gl_options(options or {})
    try:
        from sceneforge.engine.server.gl.backend import GLBackend
    except ImportError as e:
        raise RenderError(f"the embedded renderer is not available: {e}") from e
    return GLBackend(mesh_provider, threads=threads, lod=lod)


def _gl_options(options: dict) -> bool:
    """``gl:lod=0|1`` → whether levels of detail are drawn; ConfigError otherwise."""
    lod = options.get("lod", "1")
    if lod not in ("0", "1"):
        raise ConfigError(f"renderer gl: lod must be 0 or 1, got {lod!r}")
    return lod == "1"


_VALIDATORS["gl"] = _gl_options


def _cycles_installed() -> None:
    install.require()


@register_renderer(
    "cycles",
    "Blender Cycles path tracer (CPU, OpenImageDenoise) for lit; GL for masks, depth, "
    "visibility; options cycles:samples=16,seed=0,denoise=1,prefilter=fast|accurate; "
    "needs `sceneforge renderers install cycles`",
    check=_cycles_installed,
    options=("samples", "seed", "denoise", "prefilter"),
)
def cycles_backend(mesh_provider: MeshProvider, threads: int, options: dict | None = None) -> RenderBackend:
    """Path-traced ``lit`` from a persistent Blender worker process (its own venv)."""
    # lazy, as every renderer's module: it loads when the renderer is chosen, not for the list
    from sceneforge.engine.server.cycles.backend import CyclesBackend, CyclesSettings

    return CyclesBackend(mesh_provider, threads=threads, settings=CyclesSettings.from_options(options or {}, threads))


def _cycles_options(options: dict) -> None:
    # lazy: the Cycles backend's modules load only when `--renderer cycles:...` is given
    from sceneforge.engine.server.cycles.backend import CyclesSettings

    CyclesSettings.from_options(options, 1)


_VALIDATORS["cycles"] = _cycles_options
