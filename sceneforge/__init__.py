"""The ``sceneforge`` command-line front end (the library lives in core/, engine/, scenarios/, ...)."""

from sceneforge.core.version import __version__  # noqa: F401
