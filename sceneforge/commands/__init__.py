"""One module per CLI subcommand group.

Each module defines ``register(subparsers) -> None``, adding its parser(s) and setting
``func=<callable(args) -> int>`` via ``set_defaults``. Modules are imported by ``cli.py`` only to
build the parser, so they must import heavy libraries (torch, moderngl, ray) *inside* the
functions that run the command, never at module level: ``sceneforge serve`` must start fast.
"""
