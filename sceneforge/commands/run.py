"""``sceneforge run SCENARIO [--flags]``: any registered scenario, no command module of its own.

Each registered scenario with a ``Config`` gets a sub-command whose flags are generated from the
config's fields (sceneforge/commands/config_flags.py), beside ``--out``, ``--config`` and the
runner flags. Only the config is imported to build them (the scenario's module, e.g. its
renderer-facing code, is imported when the job runs).

    sceneforge run distance --env desert --n 8 --out data/distance
    sceneforge run distance --help
"""

from __future__ import annotations

import argparse
import importlib
import json

from sceneforge.commands.common import add_runner_flags, run_scenario
from sceneforge.commands.config_flags import add_config_flags, config_from_args
from sceneforge.scenarios.contract import config_class, import_path
from sceneforge.scenarios.registry import module_path, scenario_names


def register(sub: argparse._SubParsersAction) -> None:
    names = ", ".join(scenario_names())
    p = sub.add_parser(
        "run",
        help=f"run any registered scenario ({names}); flags from its config fields",
        description="Run (or resume) a registered scenario in --out. Its flags are its config's "
        "fields: `sceneforge run SCENARIO --help` lists them.",
    )
    kinds = p.add_subparsers(dest="scenario", metavar="SCENARIO", required=True)
    for name in scenario_names():
        cls = light_config(name)
        if cls is not None:
            add_scenario_parser(kinds, name, cls)


def light_config(name: str):
    """The scenario's ``Config`` without the contract check (which would import all of it)."""
    return getattr(importlib.import_module(import_path(module_path(name))), "Config", None)


def add_scenario_parser(kinds: argparse._SubParsersAction, name: str, cls: type) -> None:
    q = kinds.add_parser(
        name,
        help=f"the {name} scenario",
        description=f"Run (or resume) the {name} scenario in --out; flags are its config's fields (docs/scenarios.md).",
    )
    q.add_argument("--out", required=True, help="output directory (rerun the same command to resume)")
    q.add_argument("--config", help="YAML file of config fields (flags override it)")
    add_config_flags(q, cls)
    add_runner_flags(q)
    q.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    _, config = config_from_args(args, config_class(args.scenario), command=f"sceneforge run {args.scenario}")
    summary = run_scenario(args.scenario, config, args.out, args)
    print(json.dumps(summary.get("finalize", {}), sort_keys=True))
    return 0
