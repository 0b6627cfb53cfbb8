"""``sceneforge plugins``: what installed packages add to sceneforge, where it came from, and whether it loads.

Example::

    pip install ./examples/sceneforge-height
    sceneforge plugins
    sceneforge.scenarios   height       sceneforge_height.scenario:Height  [sceneforge-height 0.1.0]  ok
    sceneforge.heads       mlp          sceneforge_height.heads:MLPHead  [sceneforge-height 0.1.0]  ok

Every entry point of the groups in docs/plugins.md is imported (as its registry would) and listed
on one line: group, name, target, distribution, ``ok`` or ``FAILED: <reason>``. A plugin that fails
is skipped by its registry, so the built-ins and the other plugins keep working; this command
exits 1 when any failed, so a CI step can check an installation.
"""

from __future__ import annotations

import argparse

from sceneforge.core.errors import EXIT_INCOMPLETE, EXIT_OK
from sceneforge.core.plugins import GROUPS, check_declared, loaded
from sceneforge.engine import render_kinds
from sceneforge.engine.server.renderers import renderer_names
from sceneforge.probing.registry import BACKBONE_KINDS, HEADS
from sceneforge.scenarios.registry import scenario_names


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "plugins",
        help="list installed plugins (scenarios, heads, backbones, renderers, render kinds) and whether each loads",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.set_defaults(func=run)


def _head_class(name: str, obj: object) -> None:
    if not isinstance(obj, type):
        raise TypeError(f"{obj!r} is not a head class")
    if HEADS.get(name) is not None and HEADS[name].source == "sceneforge":
        raise ValueError(f"head {name!r} is built in; a plugin cannot replace it")


def _callable(name: str, obj: object) -> None:
    if not callable(obj):
        raise TypeError(f"{obj!r} is not callable")
    if BACKBONE_KINDS.get(name) is not None and BACKBONE_KINDS[name].source == "sceneforge":
        raise ValueError(f"backbone kind {name!r} is built in; a plugin cannot replace it")


def collect() -> list:
    """Every plugin of every group, imported now (the registries' own loading for the loaded groups)."""
    scenario_names()  # the scenario registry reads its entry points
    renderer_names()  # and so does the renderer registry
    render_kinds.served()  # and the render-kind table
    found = []
    for group in GROUPS:
        if group == "sceneforge.heads":
            found += check_declared(group, _head_class)
        elif group == "sceneforge.backbones":
            found += check_declared(group, _callable)
        else:
            found += loaded(group) if loaded(group) is not None else check_declared(group)
    return found


def run(args: argparse.Namespace) -> int:
    found = collect()
    for plugin in found:
        print(plugin.line())
    if not found:
        print(f"no plugins installed (entry point groups: {', '.join(GROUPS)}; docs/plugins.md)")
    return EXIT_INCOMPLETE if any(p.error for p in found) else EXIT_OK
