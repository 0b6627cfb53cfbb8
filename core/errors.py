"""One error hierarchy for the whole project.

Every error a user can cause (bad config, unreachable server, malformed protocol frame, a
sampler that cannot satisfy its rules) is a :class:`SceneforgeError`. The CLI turns any of them
into a single line on stderr and exit code 2, so messages must name the file/field/command.

This module is deliberately dependency-free: every package (probing included) may import it
without pulling in the renderer.
"""
from __future__ import annotations


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

    def __init__(self, message: str, rule: str | None = None, tries: int = 0,
                 rejections: dict[str, int] | None = None):
        super().__init__(message)
        self.rule = rule
        self.tries = tries
        self.rejections = dict(rejections or {})
