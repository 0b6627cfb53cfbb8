"""One error hierarchy for the whole project.

Every error a user can cause (bad config, unreachable server, malformed protocol frame, a
sampler that cannot satisfy its rules) is a :class:`SceneforgeError`. The CLI turns any of them
into a single line on stderr and an exit code (:func:`exit_code_of`), so messages must name the
file/field/command.

Exit codes, the one convention of every command (``sceneforge ...``, ``python -m
sceneforge.engine.server``, the farm's runners):

==== =====================================================================================
0    done: everything asked for was made (:data:`EXIT_OK`)
1    the command ran to its end but the result is incomplete or differs: failed or pending
     samples (rerun resumes), a farm job with unfinished shards, a re-render whose bytes differ
     (:class:`JobIncomplete`, :data:`EXIT_INCOMPLETE`)
2    usage or config error, or a run that stopped on an error: one line naming the
     file/field/value (any other :class:`SceneforgeError`; argparse's own usage errors are 2 too)
     (:data:`EXIT_USAGE`)
130  interrupted (Ctrl-C / SIGINT) (:data:`EXIT_INTERRUPTED`)
==== =====================================================================================

This module is deliberately dependency-free: every package (probing included) may import it
without pulling in the renderer.
"""

from __future__ import annotations

EXIT_OK = 0
EXIT_INCOMPLETE = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130


class SceneforgeError(Exception):
    """Base class: an error the user can act on; its message is shown as one line."""


class ConfigError(SceneforgeError):
    """A config/manifest/CLI value is invalid. Message names the file and the field."""


class ProtocolError(SceneforgeError):
    """A malformed UnrealCV frame or reply (bad magic, oversized, truncated, not UTF-8)."""


class ConnectionFailed(SceneforgeError):
    """The render server could not be reached or went away."""


class CommandError(SceneforgeError):
    """The server answered a command with ``error ...``."""


class RenderError(SceneforgeError):
    """The renderer could not produce an image (no GL context, bad camera, ...)."""


class AssetError(SceneforgeError):
    """An asset is missing, unreadable, or not what its manifest declares."""


class PathSecurityError(SceneforgeError):
    """A path would read or write outside the configured output directory."""


class PlacementError(SceneforgeError):
    """Rejection sampling gave up. Carries the rule that rejected most and the try count."""

    def __init__(self, message: str, rule: str | None = None, tries: int = 0, rejections: dict[str, int] | None = None):
        super().__init__(message)
        self.rule = rule
        self.tries = tries
        self.rejections = dict(rejections or {})


class JobIncomplete(SceneforgeError):
    """The command ran to its end but did not make everything: failed or pending samples, an
    unfinished farm job, a re-render that differs. Shown as one line like any error, exit 1."""


def exit_code_of(error: BaseException) -> int:
    """The exit code of a command that ended with ``error`` (the table in this module's docstring).

    >>> exit_code_of(JobIncomplete("3 of 40 samples failed")), exit_code_of(ConfigError("--n 0"))
    (1, 2)
    """
    if isinstance(error, KeyboardInterrupt):
        return EXIT_INTERRUPTED
    if isinstance(error, JobIncomplete):
        return EXIT_INCOMPLETE
    return EXIT_USAGE
