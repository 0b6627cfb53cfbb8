"""``sceneforge renderers list|install|uninstall``: the render backends and their environments.

Example::

    sceneforge renderers list                 # every --renderer choice and whether it is ready
    sceneforge renderers install cycles       # isolated Blender (PyPI bpy) environment, ~1 GB
    sceneforge generate ... --renderer cycles # path-traced lit images from then on

The Cycles environment lives in ``$SCENEFORGE_CYCLES_HOME`` if set, else in sceneforge's cache:
``$SCENEFORGE_CACHE/renderers/cycles``, else ``~/.cache/sceneforge/renderers/cycles``.
"""

from __future__ import annotations

import argparse

from sceneforge.engine.server.cycles.install import home, install, status, uninstall
from sceneforge.engine.server.renderers import renderer_descriptions

INSTALLABLE = ("cycles",)


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "renderers",
        help="list render backends; install the Cycles path tracer",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = p.add_subparsers(dest="renderers_command", metavar="ACTION")
    ls = sub.add_parser("list", help="render backends and whether each is ready")
    ls.set_defaults(func=run_list)
    ins = sub.add_parser(
        "install",
        help="create a renderer's isolated environment (from PyPI) in "
        "$SCENEFORGE_CYCLES_HOME, else $SCENEFORGE_CACHE/renderers/cycles, else "
        "~/.cache/sceneforge/renderers/cycles",
    )
    ins.add_argument("name", choices=INSTALLABLE)
    ins.add_argument("--force", action="store_true", help="reinstall even if already installed")
    ins.set_defaults(func=run_install)
    rm = sub.add_parser("uninstall", help="delete a renderer's isolated environment")
    rm.add_argument("name", choices=INSTALLABLE)
    rm.set_defaults(func=run_uninstall)
    p.set_defaults(func=run_list)


def run_list(args) -> int:
    for name, desc in renderer_descriptions().items():
        if name == "cycles":
            inst = status()
            state = (
                f"installed: Blender {inst.blender} at {inst.root}"
                if inst
                else f"not installed (sceneforge renderers install cycles → {home()})"
            )
        else:
            state = "built in"
        print(f"{name:8s} {state}\n         {desc}")
    return 0


def run_install(args) -> int:
    install(force=args.force, echo=lambda line: print(line, flush=True))
    return 0


def run_uninstall(args) -> int:
    print(f"cycles: removed {home()}" if uninstall() else f"cycles: nothing installed at {home()}")
    return 0
