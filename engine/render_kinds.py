"""The render kinds: one table that the server, the renderers, the client and the dataset writers
read (issue 35).

A *render kind* is one image a server can give of a camera's view: ``lit``, ``object_mask``,
``depth``... Each row of :data:`TABLE` says everything the rest of the engine needs about it (as
kubric's one ``post_processors`` table does for its passes):

* the array: ``dtype`` and ``channels`` (0: (H, W); else (H, W, channels); row 0 = top);
* ``role``: ``color`` (an 8-bit image to look at) or ``data`` (measurements: cm, ids, vectors);
* ``formats``: what ``vget /camera/[id]/<name> [format]`` encodes it as (the default first; none:
  no camera command, only ``vget /sceneforge/render``), and ``aliases``, the plugin's other
  spellings (``seg``); ``as_image``: how a png/bmp shows it (``rgb`` as it is, ``unit_vector``
  [-1, 1] -> [0, 255], ``flow`` colour-coded, ``depth16`` 16-bit cm);
* ``renderers``: the ``--renderer`` names that render it (any other renderer is refused with a
  one-line error naming the kind and the renderer); ``derived_from``: the server computes it from
  these kinds instead (so it is served by every renderer that renders them);
* ``ue_format``: the format the client asks a stock UnrealCV (UE) server for; None: UE has none.

Adding a kind is one row here plus the renderer's code that draws it (or the server's, for a
derived kind: :mod:`engine.server.derived`): the camera commands, ``/sceneforge/render`` (derived
kinds included: their sources are rendered in the same pass), the server's refusals, the client's
decoding, its stock fallback and the dataset writers (scenarios/output/writers.py ``kind_bytes``)
all read the row (tests/engine/test_render_kinds.py serves every row). A renderer plugin
registers its kinds with :func:`register_kind` before the server's command table is imported
(the camera commands are made from the rows then). A derived kind from an installed package is
a :class:`DerivedKind` (its row + the server's function) behind a ``sceneforge.render_kinds``
entry point (docs/plugins.md), read the first time the table is looked at.

This module imports nothing of ours but core (errors, the plugin reader), so the client and
the server can both read it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from sceneforge.core.errors import ConfigError
from sceneforge.core.plugins import load_group

COLOR, DATA = "color", "data"
AS_IMAGE = ("rgb", "unit_vector", "flow", "depth16")
BUILTIN_RENDERERS = ("gl", "cycles")


@dataclass(frozen=True)
class RenderKind:
    """One row of the table (see the module docstring for the columns)."""

    name: str
    dtype: str
    channels: int
    role: str
    meaning: str
    formats: tuple[str, ...] = ()
    aliases: tuple[str, ...] = ()
    as_image: str = "rgb"
    renderers: tuple[str, ...] = BUILTIN_RENDERERS
    derived_from: tuple[str, ...] = ()
    ue_format: str | None = None

    def __post_init__(self) -> None:
        if self.role not in (COLOR, DATA):
            raise ConfigError(f"render kind {self.name}: role must be {COLOR} or {DATA}, got {self.role!r}")
        if self.as_image not in AS_IMAGE:
            raise ConfigError(f"render kind {self.name}: as_image must be one of {', '.join(AS_IMAGE)}, got {self.as_image!r}")

    @property
    def shape(self) -> str:
        """``(H, W)`` or ``(H, W, C)``, for messages and docs."""
        return "(H, W)" if self.channels == 0 else f"(H, W, {self.channels})"


_IMAGE = ("png", "bmp", "npy")
_DEPTH = ("npy", "exr", "png")

TABLE: dict[str, RenderKind] = {
    k.name: k
    for k in (
        RenderKind("lit", "uint8", 3, COLOR, "shaded RGB with sun, sky and shadows", formats=_IMAGE, ue_format="png"),
        RenderKind(
            "object_mask",
            "uint8",
            3,
            COLOR,
            "each actor's instance colour (Actor.color); sky and ground are (0, 0, 0)",
            formats=_IMAGE,
            aliases=("seg",),
            ue_format="png",
        ),
        RenderKind(
            "depth",
            "float32",
            0,
            DATA,
            "ray depth: distance camera centre -> surface in cm (UnrealCV's point depth); inf where nothing is hit",
            formats=_DEPTH,
            as_image="depth16",
            ue_format="npy",
        ),
        RenderKind(
            "plane_depth",
            "float32",
            0,
            DATA,
            "planar depth along the optical axis, cm; inf = sky",
            formats=_DEPTH,
            as_image="depth16",
            ue_format="npy",
        ),
        RenderKind(
            "normal",
            "float32",
            3,
            DATA,
            "world-frame unit normals (UE axes), 0 for sky",
            formats=_IMAGE,
            as_image="unit_vector",
            ue_format="png",
        ),
        RenderKind(
            "instance_id",
            "int32",
            0,
            DATA,
            "1 + index of the actor in scene.actors order; 0 = background (used for pixel counting)",
        ),
        RenderKind(
            "optical_flow",
            "float32",
            2,
            DATA,
            "pixels moved since this camera's previous image request (x right, y down; engine/server/optical_flow.py)",
            formats=_IMAGE,
            as_image="flow",
            derived_from=("plane_depth", "instance_id"),
        ),
        RenderKind(
            "class_mask",
            "uint8",
            3,
            COLOR,
            "each actor's class colour (engine.world.class_color of its asset's class); sky and ground are (0, 0, 0)",
            formats=_IMAGE,
            derived_from=("instance_id",),
        ),
    )
}

# derived kind -> the server's code: f(state, cam_id, camera, {source kind: array}) -> array
# (the built-ins' are engine/server/derived.py's; a plugin's comes with its DerivedKind)
DERIVE: dict[str, Callable] = {}


@dataclass(frozen=True)
class DerivedKind:
    """A kind the server computes from rendered ones: its row (``derived_from`` = the sources,
    rendered in the same pass) and ``derive(state, cam_id, camera, arrays) -> array`` with the
    row's dtype and shape. What a ``sceneforge.render_kinds`` entry point names."""

    row: RenderKind
    derive: Callable


def register_derived(kind: DerivedKind) -> DerivedKind:
    """Add a derived kind (its row, unless the table has it, and its code); its sources must be
    rendered kinds of the table."""
    row = kind.row
    if not row.derived_from or not callable(kind.derive):
        raise ConfigError(f"render kind {row.name}: a derived kind needs derived_from and a derive function")
    bad = [s for s in row.derived_from if s not in TABLE or TABLE[s].derived_from]
    if bad:
        raise ConfigError(f"render kind {row.name}: derived_from {bad} are not rendered kinds of the table")
    if TABLE.get(row.name) != row:
        register_kind(row)
    DERIVE[row.name] = kind.derive
    return kind


def _register_plugin(name: str, obj: object) -> None:
    if not isinstance(obj, DerivedKind) or obj.row.name != name:
        raise ConfigError(f"entry point {name!r} names {obj!r}, not a DerivedKind whose row is named {name!r}")
    register_derived(obj)


def _plugins() -> None:
    """The ``sceneforge.render_kinds`` entry points, beside the built-in rows (once per process)."""
    load_group("sceneforge.render_kinds", _register_plugin)


def register_kind(kind: RenderKind) -> RenderKind:
    """Add a row (a renderer plugin's own kind); a name or alias already taken is a ConfigError."""
    taken = {n for k in TABLE.values() for n in (k.name, *k.aliases)}
    clash = [n for n in (kind.name, *kind.aliases) if n in taken]
    if clash:
        raise ConfigError(f"render kind {kind.name}: {', '.join(clash)} already in the table")
    TABLE[kind.name] = kind
    return kind


def get(name: str) -> RenderKind:
    """The row of ``name``; a ConfigError listing the kinds otherwise."""
    if name not in TABLE:
        _plugins()
    try:
        return TABLE[name]
    except KeyError:
        raise ConfigError(f"unknown render kind {name!r}; expected one of {', '.join(TABLE)}") from None


def rendered() -> tuple[str, ...]:
    """Kinds a renderer draws, in table order."""
    _plugins()
    return tuple(k.name for k in TABLE.values() if not k.derived_from)


def served() -> tuple[str, ...]:
    """Kinds ``/sceneforge/render`` serves: the rendered ones and the derived ones, in table order."""
    _plugins()
    return tuple(TABLE)


def camera_kinds() -> tuple[RenderKind, ...]:
    """Rows served by ``vget /camera/[id]/<name>`` (those with formats), in table order."""
    _plugins()
    return tuple(k for k in TABLE.values() if k.formats)


def renderers_of(name: str) -> tuple[str, ...]:
    """Renderers that serve ``name`` (a derived kind: those that render all its sources)."""
    kind = get(name)
    if not kind.derived_from:
        return kind.renderers
    sources = [set(renderers_of(s)) for s in kind.derived_from]
    return tuple(r for r in renderers_of(kind.derived_from[0]) if all(r in s for s in sources))


def require(renderer: str, kinds, error: type[Exception] = ConfigError) -> tuple[str, ...]:
    """``kinds`` as a tuple when ``renderer`` renders every one of them; else ``error`` naming the
    first unknown kind (with the known ones) or the first kind this renderer lacks (with the
    renderers that have it)."""
    kinds = tuple(kinds)
    for k in kinds:
        if k not in TABLE or TABLE[k].derived_from:
            raise error(f"unknown render kind {k!r}; expected one of {', '.join(rendered())}")
        if renderer not in TABLE[k].renderers:
            raise error(
                f"render kind {k!r} is not implemented by renderer {renderer!r} "
                f"(renderers of {k}: {', '.join(TABLE[k].renderers) or 'none'})"
            )
    return kinds
