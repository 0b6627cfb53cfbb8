"""The command table: UnrealCV command strings → handler functions.

Each handler is registered with one or more *templates* in the official client's syntax
(``vset /object/[name]/location [x] [y] [z]``). The same templates are what ``vget
/unrealcv/commands`` lists, so the table and the capability report cannot drift apart. The path
part of a template becomes a regex (``[name]`` → one path segment); the arguments after it are
counted, so a handler is called only with one of its templates' argument counts. Handlers marked
``raw`` get their last argument as the whole rest of the line (JSON may contain spaces).

Each route also says what it touches (``access``), which is how the server schedules it
(``app.py``): ``render`` (draws, or loads meshes and GL resources: the render worker), ``write``
(changes the scene or the server's settings: the render worker, between renders) and ``read``
(looks at the scene and answers at once: the connection thread may run it under
``ServerState.lock`` while a render is in progress). The default is ``write``: a handler is
answered concurrently only when it is marked ``read`` on purpose.

This module is the registry only: the handler modules import it to register their routes, and
:mod:`.dispatch` imports them all and runs command lines against the table.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable

from sceneforge.core.errors import CommandError


Handler = Callable[..., "str | bytes"]
_PLACEHOLDER = re.compile(r"\[([A-Za-z_][A-Za-z0-9_]*)\]")
READ, WRITE, RENDER = "read", "write", "render"
ACCESS = (READ, WRITE, RENDER)


@dataclass(frozen=True)
class Route:
    verb: str
    path_re: re.Pattern
    arg_counts: frozenset[int]
    raw: bool
    handler: Handler
    templates: tuple[str, ...]
    access: str = WRITE


_ROUTES: list[Route] = []


def _path_regex(path: str) -> re.Pattern:
    out, pos = [], 0
    for m in _PLACEHOLDER.finditer(path):
        out.append(re.escape(path[pos : m.start()]))
        out.append(f"(?P<{m.group(1)}>[^/\\s]*)")  # may be empty, as the plugin's [str]
        pos = m.end()
    out.append(re.escape(path[pos:]))
    return re.compile("".join(out))


def command(*templates: str, raw: bool = False, access: str = WRITE) -> Callable[[Handler], Handler]:
    """Register a handler ``fn(state, args, **path_params)`` for the given templates.

    All templates of one handler share the verb and path; they differ in arguments. ``access``:
    :data:`READ` only for a handler that changes nothing (not even a cache) and uses neither the
    renderer nor the asset catalogue.
    """
    if access not in ACCESS:
        raise ValueError(f"access {access!r}: expected one of {ACCESS}")

    def decorate(fn: Handler) -> Handler:
        verb, path = templates[0].split()[:2]
        counts = frozenset(len(t.split()) - 2 for t in templates)
        _ROUTES.append(Route(verb, _path_regex(path), counts, raw, fn, templates, access))
        return fn

    return decorate


def templates() -> list[str]:
    """Every supported command template, one per line of ``vget /unrealcv/commands``.

    Extensions come first: the official client checks every request against this list in
    order (~5 µs per template), and the batched extensions are what a generator sends per frame.
    """
    listed = [t for r in _ROUTES for t in r.templates]
    return [t for t in listed if "/sceneforge/" in t] + [t for t in listed if "/sceneforge/" not in t]


def help_line(template: str) -> str:
    """The first line of the handler's docstring (``vget /unrealcv/help`` prints it under the
    template, as the plugin prints its help strings)."""
    for route in _ROUTES:
        if template in route.templates:
            doc = (route.handler.__doc__ or "").strip()
            return " ".join(doc.split("\n\n")[0].split()) if doc else route.handler.__name__.replace("_", " ")
    return ""


def _short(text: str, n: int = 80) -> str:
    return text if len(text) <= n else text[:n] + "..."


def _match(command_line: str) -> tuple[Route, dict[str, str], list[str]]:
    head = command_line.strip().split(maxsplit=2)
    if len(head) < 2:
        raise CommandError(unknown_command(command_line))
    verb, path, rest = head[0], head[1], (head[2] if len(head) > 2 else "")
    for route in _ROUTES:
        m = route.path_re.fullmatch(path) if route.verb == verb else None
        if m is None:
            continue
        # raw routes: the last argument is the rest of the line (JSON may contain spaces)
        args = rest.split(maxsplit=max(route.arg_counts) - 1) if route.raw and rest else rest.split()
        if len(args) not in route.arg_counts:
            raise CommandError(
                f"No handler found for URI {_short(command_line.strip())!r}: wrong arguments; "
                "usage: " + " | ".join(route.templates)
            )
        return route, m.groupdict(), args
    raise CommandError(unknown_command(command_line))


def unknown_command(command_line: str) -> str:
    """The plugin's wording (``No handler found for URI``) plus the older plugins' (``Can not find
    a handler``), so client code that looks for either recognises an unsupported command."""
    return (
        f"No handler found for URI {_short(command_line.strip())!r} "
        "(Can not find a handler for this command; see vget /unrealcv/help)"
    )


def match(command_line: str) -> tuple[Route, dict[str, str], list[str]]:
    """The route of ``command_line``, its path parameters and arguments; CommandError (the
    plugin's wording) when none matches."""
    return _match(command_line)


def routes() -> list[Route]:
    """Every registered route, in registration order."""
    return list(_ROUTES)


# --- argument helpers shared by the handler modules ------------------------------------------
def parse_floats(args: list[str], what: str) -> tuple[float, ...]:
    try:
        return tuple(float(a) for a in args)
    except ValueError:
        raise CommandError(f"{what}: expected numbers, got {' '.join(args)!r}") from None


def parse_int(text: str, what: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise CommandError(f"{what}: expected an integer, got {_short(text)!r}") from None


def fmt_vec(values) -> str:
    """UnrealCV's text format for vectors/rotators: space-separated, 3 decimals."""
    return " ".join(f"{float(v):.3f}" for v in values)
