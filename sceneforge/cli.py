"""The ``sceneforge`` command: parses arguments and delegates to the packages.

Any :class:`core.errors.SceneforgeError` becomes one line on stderr. Exit codes, the same for
every command (``sceneforge.core.errors``, README): 0 done; 1 ran but incomplete
(failed/pending samples, a check that differs); 2 usage or config error; 130 interrupted.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import sys

from sceneforge.commands.common import OneLineParser, add_old_spellings, unknown_flags_error
from sceneforge.core.errors import EXIT_USAGE, SceneforgeError, exit_code_of
from sceneforge.core.extras import missing_extra_line
from sceneforge import __version__

# Subcommand modules under sceneforge.commands; each has register(subparsers).
COMMAND_MODULES = (
    "serve",  # sceneforge serve                      (engine)
    "renderers",  # sceneforge renderers list|install      (engine.server.cycles)
    "demo",  # sceneforge demo                       (scenarios, README's first command)
    "assets",  # sceneforge assets list|validate|preview|build
    "envs",  # sceneforge envs list|preview
    "generate",  # sceneforge generate / preview         (SpaRRTa-style images)
    "videos",  # sceneforge videos / dsi-eval          (DSI-style videos)
    "degrade",  # sceneforge degrade                    (SpaceDG-style degraded variants)
    "export",  # sceneforge export --layout sparrta    (other projects' layouts)
    "browse",  # sceneforge browse OUT                 (explorer: static dataset browser)
    "vqa",  # sceneforge vqa-eval                   (template VQA scoring)
    "run",  # sceneforge run SCENARIO               (any registered scenario, flags from its Config)
    "probe",  # sceneforge probe / probe-report       (probing)
    "study",  # sceneforge study CONFIG / merge / report  (study: generate + probe into a leaderboard)
    "farm",  # sceneforge farm status                (renderfarm)
    "bench",  # sceneforge bench <name>               (benchmarks/)
    "plugins",  # sceneforge plugins                    (entry points of installed packages)
)

log = logging.getLogger("sceneforge")


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(
        prog="sceneforge",
        description="Synthetic scenes for probing the spatial intelligence of vision models.",
    )
    parser.add_argument("--version", action="version", version=f"sceneforge {__version__}")
    parser.add_argument("-v", "--verbose", action="count", default=0, help="more logging (-vv for debug)")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMAND_MODULES:
        try:
            module = importlib.import_module(f"sceneforge.commands.{name}")
        except ModuleNotFoundError as e:
            if e.name == f"sceneforge.commands.{name}":
                continue  # subcommand not built yet
            raise
        module.register(sub)
    _describe_from_help(parser)
    add_old_spellings(parser)  # --no-progress etc. keep working (core/config_names.py)
    return parser


def _describe_from_help(parser: argparse.ArgumentParser) -> None:
    """Every (sub)command's ``--help`` opens with a description: the one its module gave, else
    the one-line help it is listed with (issue 33 item 9: ``probe --help`` said nothing)."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction) and type(action.choices) is dict:
            # (a lazy one, `run`'s scenarios, describes its parsers as it builds them)
            listed = {a.dest: a.help for a in action._choices_actions}
            for name, child in action.choices.items():
                if not child.description and listed.get(name):
                    text = listed[name].rstrip(". ")
                    child.description = text[:1].upper() + text[1:] + "."
                _describe_from_help(child)


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args, extras = parser.parse_known_args(argv)
    if extras:  # one line from the sub-command they were given to, with its closest flag
        unknown_flags_error(parser, args, extras)
    level = (logging.WARNING, logging.INFO, logging.DEBUG)[min(args.verbose, 2)]
    logging.basicConfig(level=level, format="%(levelname)s %(name)s: %(message)s")
    if not getattr(args, "func", None):
        parser.print_help()
        return EXIT_USAGE
    try:
        return int(args.func(args) or 0)
    except SceneforgeError as e:
        print(f"sceneforge {args.command}: error: {e}", file=sys.stderr)
        return exit_code_of(e)
    except ModuleNotFoundError as e:
        line = missing_extra_line(e)  # an optional extra's module (torch, ray, s3fs): name the install command
        if line is None:
            raise
        print(f"sceneforge {args.command}: error: {line}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt as e:
        print(f"sceneforge {args.command}: interrupted", file=sys.stderr)
        return exit_code_of(e)


if __name__ == "__main__":
    sys.exit(main())
