"""The ``sceneforge`` command-line front end (the library lives in engine/, scenarios/, ...)."""
from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("sceneforge")
except PackageNotFoundError:  # running from a source tree that is not installed
    __version__ = "0.0.0+local"
