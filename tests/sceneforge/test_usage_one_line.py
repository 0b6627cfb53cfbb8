"""Issue 47 item 7: argparse's own usage errors are ONE line on stderr, exit 2, for every command,
with a "did you mean" where one applies (``--workers 0`` printed 26 lines, a mistyped ``--taks``
the top-level usage and no suggestion, an unknown ``weights build`` name usage + error)."""

from __future__ import annotations

import argparse

import pytest

from sceneforge import cli


def usage_error(capsys, argv) -> str:
    with pytest.raises(SystemExit) as e:
        cli.main(argv)
    err = capsys.readouterr().err.strip().splitlines()
    assert e.value.code == 2 and len(err) == 1, (argv, err)
    assert "usage:" not in err[0]
    return err[0]


@pytest.mark.parametrize(
    "argv, expected",
    [
        (
            ["generate", "--out", "o", "--workers", "0"],
            "sceneforge generate: error: argument --workers: expected an integer >= 1",
        ),
        (["generate", "--out", "o", "--taks", "ego"], "unrecognized arguments: --taks ego; did you mean '--task'"),
        (["generate", "--out", "o", "--task", "egoo"], "invalid choice: 'egoo'"),
        (["generate", "--out", "o", "--task", "egoo"], "did you mean 'ego'?"),
        (["weights", "build", "dinov2-s-imgfocs"], "sceneforge weights build: error: argument NAME: invalid choice"),
        (["weights", "build", "dinov2-s-imgfocs"], "did you mean 'dinov2-s-imgfocus'?"),
        (["weights", "build", "--forse", "dinov2-s-imgfocus"], "did you mean '--force'?"),
        (["genrate", "--out", "o"], "sceneforge: error: argument COMMAND: invalid choice: 'genrate'"),
        (["genrate", "--out", "o"], "did you mean 'generate'?"),
        (["farm", "statsu", "x"], "did you mean 'status'?"),
        (["probe", "--data", "d", "--out", "o", "--backbone", "b", "--hedas", "linear"], "did you mean '--heads'"),
    ],
)
def test_usage_errors_are_one_line_with_a_suggestion(capsys, argv, expected):
    line = usage_error(capsys, argv)
    assert expected in line, line
    assert line.endswith("--help)"), line  # where to read more, in the same line


def every_command(parser: argparse.ArgumentParser, path=()):
    """(argv prefix) of every leaf sub-command, e.g. ("weights", "build")."""
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not subs:
        yield path
        return
    for name, child in subs[0].choices.items():
        yield from every_command(child, (*path, name))


def test_every_command_refuses_an_unknown_flag_in_one_line(capsys):
    commands = list(every_command(cli.build_parser()))
    assert ("generate",) in commands and ("weights", "build") in commands and len(commands) > 20
    for path in commands:
        if path == ("bench",):  # passes everything after NAME to the benchmark script
            continue
        line = usage_error(capsys, [*path, "--no-such-flag-xyz"])
        assert line.startswith(f"sceneforge {' '.join(path)}: error: "), line
