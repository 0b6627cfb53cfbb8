"""The `sceneforge` front end: subcommand discovery, one-line errors, exit codes."""

from __future__ import annotations

import subprocess
import sys

import pytest

from sceneforge import cli
from sceneforge.commands import bench


def test_every_subcommand_module_registers():
    parser = cli.build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    for name in (
        "serve",
        "demo",
        "assets",
        "envs",
        "generate",
        "preview",
        "videos",
        "dsi-eval",
        "probe",
        "probe-report",
        "farm",
        "bench",
    ):
        assert name in sub.choices, name


def test_no_command_prints_help_and_exits_2(capsys):
    assert cli.main([]) == 2
    assert "usage: sceneforge" in capsys.readouterr().out


def test_unknown_benchmark_is_one_line_listing_the_available_ones(capsys):
    assert cli.main(["bench", "no_such_benchmark"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "unknown benchmark 'no_such_benchmark'" in err[0]
    for name in ("render", "generate", "videos", "probe", "farm"):
        assert name in bench.available() and name in err[0]


def test_help_does_not_import_heavy_libraries():
    """Building the parser must stay light: heavy imports live inside the command functions."""
    code = (
        "import sys; from sceneforge import cli; cli.build_parser(); "
        "print(sorted(m for m in ('torch', 'timm', 'transformers', 'ray', 'moderngl') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_importing_the_cli_loads_no_library_package():
    """`import sceneforge.cli` (every command's first step) loads the CLI and core only: the
    library packages come with the commands (build_parser) or inside them."""
    code = (
        "import sys, sceneforge.cli; print(sorted({m.split('.')[1] for m in sys.modules if m.startswith('sceneforge.')}"
        " | ({'numpy'} & set(sys.modules))))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "['cli', 'commands', 'core']", out


def test_demo_does_not_import_the_ml_stack(tmp_path):
    """`sceneforge demo` (README command 1) renders and labels without torch, timm, transformers,
    ray or matplotlib: the base install has none of them (.ci/run, tests/test_install.py), and the
    imports of our modules that would pull them in stay inside the commands that need them."""
    code = (
        "import atexit, sys; from sceneforge import cli; atexit.register(lambda: print(sorted(m for m in "
        "('torch', 'timm', 'transformers', 'ray', 'matplotlib') if m in sys.modules)))\n"
        "sys.exit(cli.main(['demo', '--n', '2', '--out', 'demo', '--quiet', '--no-fetch']))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert (tmp_path / "demo" / "samples.parquet").is_file()
    assert out.stdout.strip().splitlines()[-1] == "[]", out.stdout[-500:]


@pytest.mark.parametrize("argv", [["generate", "--out", "x", "--env", "atlantis"], ["envs", "preview", "atlantis"]])
def test_bad_input_is_one_line_and_exit_2(argv, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert cli.main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "atlantis" in err[0] and err[0].startswith(f"sceneforge {argv[0]}: error:")
    assert not (tmp_path / "x").exists()


def test_generate_fetches_real_assets_on_first_use_and_falls_back_in_one_line(tmp_path, monkeypatch, capsys):
    """A new user's first `generate` (not only `demo`) tries to build the real assets; offline
    (apt-get and npm fail as they do without a network) it says so in one line and the job
    still completes with the procedural pack."""
    import json
    import os
    import stat

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool, message in (
        ("apt-get", "E: Failed to fetch http://deb.debian.org/x  Temporary failure resolving"),
        ("npm", "npm ERR! network request failed"),
    ):
        path = bin_dir / tool
        path.write_text(f"#!/bin/sh\necho '{message}' >&2\nexit 100\n")
        path.chmod(path.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("SCENEFORGE_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("SCENEFORGE_NO_FETCH", raising=False)
    out = tmp_path / "data"
    assert cli.main(["generate", "--env", "desert", "--task", "ego", "--n", "2", "--out", str(out), "--quiet"]) == 0
    err = capsys.readouterr().err
    tried = [ln for ln in err.splitlines() if "first use: fetching real assets" in ln]
    failed = [ln for ln in err.splitlines() if "real assets unavailable" in ln]
    assert len(tried) == 1 and len(failed) == 1 and "procedural" in failed[0]
    records = sorted(out.glob("records/**/*.json"))
    assert records and all(a.startswith("proc_") for a in json.loads(records[0].read_text())["assets"])

    # --no-fetch: not even tried
    assert (
        cli.main(
            ["generate", "--env", "desert", "--task", "ego", "--n", "2", "--out", str(tmp_path / "b"), "--quiet", "--no-fetch"]
        )
        == 0
    )
    assert "fetching" not in capsys.readouterr().err


def _help(capsys, argv: list[str]) -> str:
    with pytest.raises(SystemExit) as e:
        cli.main([*argv, "--help"])
    assert e.value.code == 0
    return " ".join(capsys.readouterr().out.split())  # argparse's line wrapping undone


def test_probe_help_describes_the_command(capsys):
    text = _help(capsys, ["probe"])
    assert "frozen vision backbone" in text and "report.html" in text and "--min-test N" in text
    assert "Wilson" in text and "example: sceneforge probe" in text
    assert "runs.jsonl below ROOT" in _help(capsys, ["probe-report"])


def test_bench_help_lists_every_benchmark(capsys):
    text = _help(capsys, ["bench"])
    assert bench.available() and all(name in text for name in bench.available())
    assert "one of: " + ", ".join(bench.available()) in text


@pytest.mark.render
def test_assets_preview_prints_what_it_wrote(tmp_path, capsys):
    out = tmp_path / "sheet.png"
    assert cli.main(["assets", "preview", "--procedural", "--class", "cone", "--tile", "32", "--out", str(out)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines == [f"assets preview: wrote {out} (1 asset: cone)"] and out.is_file()


def test_every_subcommand_help_has_a_description():
    """``sceneforge X [Y] --help`` opens with a description for every command and action."""
    import argparse

    from sceneforge.cli import build_parser

    missing = []

    def walk(parser: argparse.ArgumentParser, path: str) -> None:
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, child in action.choices.items():
                    if not (child.description or "").strip():
                        missing.append(f"{path} {name}".strip())
                    walk(child, f"{path} {name}")

    walk(build_parser(), "")
    assert not missing, missing
