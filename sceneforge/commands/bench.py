"""``sceneforge bench NAME``: run a benchmark script from ``benchmarks/``.

Benchmarks are scripts (``benchmarks/<name>.py`` with a ``main(argv)``), not tests: they print
throughput and ratios against a baseline measured in the same run. They live in the source
checkout, so this command works from an editable install or from the repository root.
"""

from __future__ import annotations

import argparse
import re
import runpy
import sys
from pathlib import Path

from sceneforge.core.errors import ConfigError
from sceneforge.core.extras import EXTRAS, require_extra


def _benchmarks_dir() -> Path:
    here = Path(__file__).resolve().parents[2] / "benchmarks"
    candidates = [here, Path.cwd() / "benchmarks"]
    for c in candidates:
        if c.is_dir():
            return c
    raise ConfigError("benchmarks/ not found: run from the sceneforge source checkout")


def available() -> list[str]:
    try:
        return sorted(p.stem for p in _benchmarks_dir().glob("*.py") if not p.stem.startswith("_"))
    except ConfigError:
        return []


def run(args: argparse.Namespace) -> int:
    path = _benchmarks_dir() / f"{args.name}.py"
    if not path.is_file():
        raise ConfigError(f"unknown benchmark {args.name!r}; available: {', '.join(available()) or 'none'}")
    needs = probe_modules(path)
    if needs and "-h" not in args.bench_args and "--help" not in args.bench_args:
        require_extra("probe", needs)  # before a benchmark's minutes of setup, not at its first torch import
    sys.argv = [str(path), *args.bench_args]
    runpy.run_path(str(path), run_name="__main__")
    return 0


def probe_modules(path: Path) -> tuple[str, ...] | None:
    """The probe extra's modules a benchmark script imports (``bench probe``, ``bench recognition``:
    torch, timm), or None when it imports none of them. Read from its import lines, so a new
    benchmark needs no list kept here."""
    text = path.read_text(encoding="utf-8")
    found = tuple(m for m in EXTRAS["probe"] if re.search(rf"^\s*(?:import|from) {m}\b", text, re.M))
    return found or None


def register(sub: argparse._SubParsersAction) -> None:
    names = ", ".join(available()) or "none found (run from the source checkout)"
    p = sub.add_parser(
        "bench",
        help="run a benchmark from benchmarks/ (render, generate, videos, probe, farm, ...)",
        description="Run benchmarks/NAME.py (throughput measurements, not tests) with the arguments after NAME.",
        epilog="e.g. sceneforge bench render --help   (each benchmark's own options)",
    )
    p.add_argument("name", metavar="NAME", help=f"one of: {names}")
    p.add_argument("bench_args", nargs=argparse.REMAINDER, help="arguments passed to the benchmark")
    p.set_defaults(func=run)
