"""The installed distribution's version, for dataset cards and the server's status text.

Lives here, not in the CLI package, so library code (scenarios, engine) can record which
sceneforge made a file without importing the command line.
"""

from __future__ import annotations

try:
    from importlib.metadata import PackageNotFoundError, version

    __version__ = version("sceneforge")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0.0.0+local"

GENERATOR = f"sceneforge {__version__}"
