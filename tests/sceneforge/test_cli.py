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
    for name in ("serve", "demo", "assets", "envs", "generate", "preview", "videos", "dsi-eval",
                 "probe", "probe-report", "farm", "bench"):
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
    code = ("import sys; from sceneforge import cli; cli.build_parser(); "
            "print(sorted(m for m in ('torch', 'timm', 'transformers', 'ray', 'moderngl') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


@pytest.mark.parametrize("argv", [["generate", "--out", "x", "--env", "atlantis"], ["envs", "preview", "atlantis"]])
def test_bad_input_is_one_line_and_exit_2(argv, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert cli.main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "atlantis" in err[0] and err[0].startswith(f"sceneforge {argv[0]}: error:")
    assert not (tmp_path / "x").exists()
