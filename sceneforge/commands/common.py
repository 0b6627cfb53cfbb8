"""What every scenario command shares: the runner flags and the one path flags → runner.

Each scenario command (``generate``, ``videos``, ...) is: its own flags → a validated config (via
:func:`scenarios.config_loader.load_config`) → :func:`run_scenario`. Nothing here knows a
scenario; adding one adds a command module, not a branch here.
"""

from __future__ import annotations

import argparse
import logging
import os
import re
import sys
from pathlib import Path

from sceneforge.core.config_names import RENAMED_FLAGS, deprecation_line
from sceneforge.core.errors import EXIT_USAGE, ConfigError, JobIncomplete
from sceneforge.core.suggest import did_you_mean


class OneLineParser(argparse.ArgumentParser):
    """An argparse parser whose usage errors are ONE line on stderr, exit 2 (issue 47 item 7):
    ``sceneforge generate: error: argument --workers: expected an integer >= 1 or 'auto', got '0'
    (sceneforge generate --help)``; an unknown choice gets a ``did you mean``. argparse's own
    error printed the whole usage first (26 lines for ``--workers 0``). Sub-parsers inherit the
    class (``add_subparsers`` makes them with ``type(self)``)."""

    def error(self, message: str):  # noqa: D401  (argparse's hook)
        self.exit(EXIT_USAGE, f"{self.prog}: error: {_with_suggestion(message)} ({self.prog} --help)\n")


_CHOICE = re.compile(r"invalid choice: '(?P<value>[^']*)' \(choose from (?P<choices>.*)\)")


def _with_suggestion(message: str) -> str:
    """argparse's ``invalid choice: 'x' (choose from 'a', 'b')`` + the closest choices."""
    m = _CHOICE.search(message)
    if m is None:
        return message
    choices = re.findall(r"'([^']*)'", m.group("choices"))
    hint = did_you_mean(m.group("value"), choices)
    return f"{message}; {hint}" if hint else message


def unknown_flags_error(parser: argparse.ArgumentParser, args: argparse.Namespace, extras: list[str]) -> None:
    """Flags no (sub)command knows → one line from the sub-command they were given to, with the
    closest of its own flags (``--taks`` → ``did you mean '--task'?``); exits 2."""
    target = parser
    while True:  # descend to the sub-command that parsed them (sceneforge weights build ...)
        sub = next((a for a in target._actions if isinstance(a, argparse._SubParsersAction)), None)
        chosen = getattr(args, sub.dest, None) if sub is not None else None
        if sub is None or chosen not in sub.choices:
            break
        target = sub.choices[chosen]
    flags = [o for a in target._actions for o in a.option_strings if a.help != argparse.SUPPRESS]
    hints = [h for h in (did_you_mean(e.split("=", 1)[0], flags) for e in extras if e.startswith("-")) if h]
    target.error(f"unrecognized arguments: {' '.join(extras)}" + (f"; {' '.join(hints)}" if hints else ""))


def add_runner_flags(p: argparse.ArgumentParser) -> None:
    """Flags every scenario command shares: where to render and how to parallelise."""
    p.add_argument("--server", help="use this running render server (host:port) instead of starting one")
    p.add_argument(
        "--workers",
        type=_workers,
        help="parallel workers, each with its own server (render farm); "
        "'auto' = the free CPU cores (1 = inline on a small or busy machine)",
    )
    p.add_argument(
        "--backend",
        choices=["inline", "local", "ray"],
        default=None,
        help="inline (default with one worker), local worker processes, or a Ray cluster",
    )
    p.add_argument("--servers", help="comma-separated external UnrealCV servers, one worker each")
    p.add_argument("--ray-address", help="Ray cluster address (with --backend ray)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.add_argument(
        "--no-fetch",
        action="store_true",
        help="do not fetch the real assets on first use (also: SCENEFORGE_NO_FETCH=1); the procedural pack stands in",
    )


def add_old_spellings(parser: argparse.ArgumentParser) -> None:
    """Give every flag of :data:`core.config_names.RENAMED_FLAGS` that ``parser`` or its
    subcommands have its old spelling: hidden from ``--help``, the same values, one deprecation
    line when used (``--no-progress`` → ``--quiet``)."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction) and type(action.choices) is dict:
            # (a lazy one, `run`'s scenarios, adds them to each parser as it builds it)
            for child in action.choices.values():
                add_old_spellings(child)
    for old, new in RENAMED_FLAGS.items():
        target = parser._option_string_actions.get(new)
        if target is not None and old not in parser._option_string_actions:
            parser.add_argument(
                old,
                dest=target.dest,
                action=_OldSpelling,
                new=new,
                nargs=target.nargs,
                const=target.const,
                type=target.type,
                choices=target.choices,
                metavar=target.metavar,
                default=argparse.SUPPRESS,
                help=argparse.SUPPRESS,
            )


class _OldSpelling(argparse.Action):
    """An old flag name: stores what the new one would (a flag's const, or the value), with one
    deprecation line naming both."""

    def __init__(self, option_strings, dest, new: str, **kwargs):
        super().__init__(option_strings, dest, **kwargs)
        self.new = new

    def __call__(self, parser, namespace, values, option_string=None):
        logging.getLogger("sceneforge").warning(deprecation_line(parser.prog, option_string, self.new))
        setattr(namespace, self.dest, self.const if self.nargs == 0 else values)


def fetch_defaults_once(args: argparse.Namespace) -> None:
    """Build the default real assets (Sweet Home 3D pack, textures, HDRIs) on first use.

    Why here: every scenario command renders the default environments with them, and a new user's
    first ``generate`` must not silently fall back to primitives. A no-op when they are built;
    offline it says so in one line and the procedural pack stands in (assets_manifest/build.py).
    """
    if getattr(args, "no_fetch", False) or os.environ.get("SCENEFORGE_NO_FETCH"):
        return
    from sceneforge.assets_manifest.build import ensure_defaults  # trimesh, pydantic: not at parser build

    ensure_defaults(progress=not getattr(args, "quiet", False))


def preflight(name: str, config) -> None:
    """The scenario's checks that need no fetched asset (:meth:`Scenario.preflight`: subjects,
    the character pack): run before :func:`fetch_defaults_once`, so a bad config is refused in one
    line with nothing downloaded or written (it used to fetch ~180 MB into an empty cache first)."""
    scenario(name, config).preflight()


def scenario(name: str, config):
    """The scenario ``name`` (registered name or import path) built on ``config``."""
    from sceneforge.scenarios.contract import get_scenario  # not at `import sceneforge.cli` (cli.py imports this module)

    return get_scenario(name)(config)


def out_flag(value, flag: str = "--out") -> Path | str:
    """``--out`` as a Path, or as the string itself for a URL (``s3://bucket/prefix``: a Path
    would fold its ``//``); an empty value is refused (``Path("")`` is ``.``: ``--out ""`` used to
    write a dataset into the current directory). Commands take ``--out`` as a string for this."""
    from sceneforge.renderfarm.objstore import is_remote  # the renderfarm package: not at parser build

    if value is None or not str(value).strip():
        raise ConfigError(f"{flag} {str(value)!r}: empty; name a directory (write {flag} . to mean the current one)")
    return str(value) if is_remote(value) else Path(value)


def _workers(text: str):
    """``--workers``: an integer >= 1, or ``auto`` (resolved per job by :func:`resolve_auto_workers`)."""
    if text.strip().lower() == "auto":
        return "auto"
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer >= 1 or 'auto', got {text!r}") from None
    if n < 1:
        raise argparse.ArgumentTypeError(f"expected an integer >= 1 or 'auto', got {text!r}")
    return n


def resolve_auto_workers(name: str, config, args: argparse.Namespace) -> None:
    """Replace ``--workers auto`` by the count :mod:`renderfarm.auto` picks for this job (said on
    stderr); external servers or Ray decide the count themselves, so ``auto`` leaves it unset."""
    if args.workers != "auto":
        return
    from sceneforge.renderfarm.auto import auto_workers, usable_cpus  # the renderfarm package: not at parser build

    if args.servers or args.ray_address or args.backend == "ray":
        args.workers = None
        return
    n = scenario(name, config).plan().n_samples
    args.workers = auto_workers(n)
    print(
        f"--workers auto: {args.workers} ({usable_cpus():g} usable CPUs, load average {os.getloadavg()[0]:.1f})", file=sys.stderr
    )


def backend_of(args: argparse.Namespace) -> str:
    """Inline (one server, this process) unless more workers, external servers or Ray are asked for."""
    if args.backend:
        return args.backend
    if args.ray_address:
        return "ray"
    if (args.workers or 1) > 1 or args.servers:
        return "local"
    return "inline"


def wds_shard_size(args: argparse.Namespace) -> int | None:
    """``--format wds [--wds-shard-size N]`` → samples per shard; None without ``--format wds``."""
    from sceneforge.renderfarm.wds import DEFAULT_SHARD_SIZE  # the renderfarm package: not at parser build

    size = getattr(args, "wds_shard_size", None)
    if getattr(args, "format", None) != "wds":
        if size is not None:
            raise ConfigError("--wds-shard-size needs --format wds")
        return None
    return DEFAULT_SHARD_SIZE if size is None else size


def run_scenario(name: str, config, out: Path, args: argparse.Namespace) -> dict:
    """The CLI's one path to the runner: flags → :func:`renderfarm.run_job`; failed or pending
    samples → one line and exit 1 (:class:`core.errors.JobIncomplete`). ``config`` is the parsed
    config (the runner builds the scenario on it: parsed once per process) or a plain dict."""
    from sceneforge.renderfarm import run_job  # the renderfarm package: not at parser build

    out = out_flag(out)
    preflight(name, config)
    fetch_defaults_once(args)
    resolve_auto_workers(name, config, args)
    backend = backend_of(args)
    if args.server and backend != "inline":
        raise ConfigError("--server runs inline on one server; use --servers a:1,b:2 for several workers")
    summary = run_job(
        name,
        config,
        out,
        workers=args.workers,
        backend=backend,
        servers=args.servers,
        ray_address=args.ray_address,
        progress=not args.quiet,
        server=args.server,
        wds_shard_size=wds_shard_size(args),
    )
    check_complete(summary)
    return summary


def check_complete(summary: dict) -> None:
    """A job summary with failed or pending samples → :class:`JobIncomplete` (one line, exit 1):
    the runner reports failures instead of raising."""
    from sceneforge.renderfarm import exit_code  # the renderfarm package: not at parser build

    if not exit_code(summary):
        return
    failed = summary.get("failed") or {}
    if not failed:
        raise JobIncomplete(f"{summary.get('pending')} of {summary.get('samples')} samples pending (rerun resumes)")
    causes = [m for m in failed.values() if not m.startswith("not attempted")] or list(failed.values())
    raise JobIncomplete(f"{len(failed)} of {summary.get('samples')} samples failed (rerun resumes); {causes[0]}")
