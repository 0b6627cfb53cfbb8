"""Running a command line: the whole command table, loaded (the server's entry to it).

The handler modules register their routes in :mod:`.table` when imported; this module imports
them all (the order is the table's: a catch-all such as unrealcv's ``vrun``/``vexec``/``vbp`` is
matched after every specific route), so the table only holds the registry and the handlers
import it, never the other way round.

:func:`dispatch` never raises: a :class:`~core.errors.SceneforgeError` becomes ``error <msg>``,
anything else ``error internal ...`` (logged with its traceback), so no command can take the
server down.
"""

from __future__ import annotations

import logging

from sceneforge.core.errors import SceneforgeError
from sceneforge.engine.server.commands import ext, image, stock  # noqa: F401 - register their routes
from sceneforge.engine.server.commands import characters  # noqa: F401 - after ext (uses its JSON helpers)
from sceneforge.engine.server.commands import camera_settings, unrealcv  # noqa: F401 - (imports unrealcv first)
from sceneforge.engine.server.commands.table import READ, RENDER, WRITE, Route, _short, match, routes, templates
from sceneforge.engine.server.state import ServerState

log = logging.getLogger(__name__)

__all__ = ["READ", "RENDER", "WRITE", "Route", "access_of", "dispatch", "routes", "templates"]


def access_of(command_line: str) -> str:
    """:data:`READ`, :data:`WRITE` or :data:`RENDER` for a command line (:data:`WRITE` when it
    matches no route: such a line goes to the render worker)."""
    try:
        return match(command_line)[0].access
    except SceneforgeError:
        return WRITE


def dispatch(state: ServerState, command_line: str) -> "str | bytes":
    """Run one command against ``state``; always returns a reply (``error ...`` on failure)."""
    try:
        route, params, args = match(command_line)
        return route.handler(state, args, **params)
    except SceneforgeError as e:
        return f"error {e}"
    except Exception as e:  # a handler bug must not kill the connection or the server
        log.exception("command %r failed", _short(command_line))
        return f"error internal {type(e).__name__}: {_short(str(e), 200)}"
