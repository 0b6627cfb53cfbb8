"""``sceneforge run SCENARIO [--flags]``: any registered scenario, no command module of its own.

Each registered scenario with a ``Config`` (built-in, or a plugin's ``sceneforge.scenarios``
entry point) gets a sub-command whose flags are generated from the config's fields
(sceneforge/commands/config_flags.py), beside ``--out``, ``--config`` and the runner flags.
They are built only when ``sceneforge run`` is parsed (:class:`LazyScenarioParsers`): listing
them imports every scenario class and plugin, which ``sceneforge --help`` does not pay for.

    sceneforge run distance --env desert --n 8 --out data/distance
    sceneforge run distance --help
"""

from __future__ import annotations

import argparse
import json

from sceneforge.commands.common import add_old_spellings, add_runner_flags, run_scenario
from sceneforge.commands.config_flags import add_config_flags, config_from_args
from sceneforge.scenarios.contract import config_class, get_scenario
from sceneforge.scenarios.registry import scenario_names


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "run",
        help="run any registered scenario (built-in or a plugin's); flags from its config fields",
        description="Run (or resume) a registered scenario in --out. Its flags are its config's "
        "fields: `sceneforge run SCENARIO --help` lists them.",
    )
    p.register("action", "lazy_parsers", LazyScenarioParsers)
    p.add_subparsers(dest="scenario", metavar="SCENARIO", required=True, action="lazy_parsers")


class LazyScenarioParsers(argparse._SubParsersAction):
    """``run``'s sub-commands, one per registered scenario, built the first time argparse looks
    at them (parsing ``sceneforge run ...`` or printing its help): listing them imports every
    scenario class and plugin (~1 s), which ``sceneforge --help`` and the other commands skip."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._name_parser_map = self.choices = _OnFirstLook(self._add_all)

    def _add_all(self) -> None:
        for name in scenario_names():
            cls = get_scenario(name).Config
            if cls is not None:
                add_scenario_parser(self, name, cls)

    def _get_subactions(self):  # the help's list of scenarios
        self.choices.fill()
        return super()._get_subactions()


class _OnFirstLook(dict):
    """A dict that runs ``fill`` once, before it is first read."""

    def __init__(self, fill):
        super().__init__()
        self._fill, self._filled = fill, False

    def fill(self) -> None:
        if not self._filled:
            self._filled = True
            self._fill()

    def __contains__(self, key):
        self.fill()
        return super().__contains__(key)

    def __getitem__(self, key):
        self.fill()
        return super().__getitem__(key)

    def __iter__(self):
        self.fill()
        return super().__iter__()

    def __len__(self):
        self.fill()
        return super().__len__()

    def keys(self):
        self.fill()
        return super().keys()

    def items(self):
        self.fill()
        return super().items()

    def values(self):
        self.fill()
        return super().values()

    def get(self, key, default=None):
        self.fill()
        return super().get(key, default)


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
    add_old_spellings(q)
    q.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    config, _ = config_from_args(args, config_class(args.scenario), command=f"sceneforge run {args.scenario}")
    summary = run_scenario(args.scenario, config, args.out, args)
    print(json.dumps(summary.get("finalize", {}), sort_keys=True))
    return 0
