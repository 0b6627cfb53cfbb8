"""Issue 35 item 5: one exit-code convention for every command (core/errors.py).

0 done; 1 ran to its end but incomplete or different (failed/pending samples, unfinished farm
job, a re-render that differs); 2 usage or config error (one line); 130 interrupted. Each class of
command is exercised for real: a scenario command, the demo, a status command, an eval command,
the server's own entry point, and argparse's usage errors.
"""

from __future__ import annotations

import argparse
import subprocess
import sys

import pytest

from sceneforge import cli
from sceneforge.commands.common import check_complete
from sceneforge.core.errors import (
    EXIT_INCOMPLETE,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_USAGE,
    ConfigError,
    JobIncomplete,
    PlacementError,
    SceneforgeError,
    exit_code_of,
)
from sceneforge.renderfarm import exit_code, run_job


def test_the_table():
    assert (EXIT_OK, EXIT_INCOMPLETE, EXIT_USAGE, EXIT_INTERRUPTED) == (0, 1, 2, 130)
    assert exit_code_of(JobIncomplete("3 of 40 samples failed")) == 1
    for error in (ConfigError("x"), PlacementError("x"), SceneforgeError("x")):
        assert exit_code_of(error) == 2
    assert exit_code_of(KeyboardInterrupt()) == 130


def test_usage_errors_are_2_for_argparse_and_for_config_errors(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for argv in (["generate"], ["videos", "--out", "v", "--n", "many"], ["no-such-command"]):
        with pytest.raises(SystemExit) as e:
            cli.main(argv)
        assert e.value.code == EXIT_USAGE, argv
    assert cli.main([]) == EXIT_USAGE
    capsys.readouterr()
    assert cli.main(["vqa", "--env", "desert", "--n", "1", "--out", "q", "--size", "8", "--no-fetch"]) == EXIT_USAGE
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("sceneforge vqa: error:") and not (tmp_path / "q").exists()


def _run(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "sceneforge.cli", *argv], capture_output=True, text=True, timeout=120)


def test_a_status_command_1_while_unfinished_0_when_done_2_on_a_bad_dir(tmp_path):
    sys.path.insert(0, str(__import__("pathlib").Path(__file__).parents[1] / "renderfarm"))
    try:
        summary = run_job(
            "farm_toy_cpu",
            {"n": 4, "seed": 1, "size": 16, "fail_on": [2]},
            tmp_path / "a",
            workers=1,
            shard_size=2,
            progress=False,
        )
        done = run_job("farm_toy_cpu", {"n": 4, "seed": 1, "size": 16}, tmp_path / "b", workers=1, progress=False)
    finally:
        sys.path.pop(0)
    assert exit_code(summary) == EXIT_INCOMPLETE and exit_code(done) == EXIT_OK
    assert _run("farm", "status", str(tmp_path / "a")).returncode == EXIT_INCOMPLETE
    assert _run("farm", "status", str(tmp_path / "b")).returncode == EXIT_OK
    assert _run("farm", "status", str(tmp_path / "nothing")).returncode == EXIT_USAGE


def test_failed_or_pending_samples_are_one_line_and_exit_1():
    """What every scenario command (generate, videos, vqa, demo) calls after the runner."""
    base = {"samples": 4, "complete": 4, "failed": {}, "pending": 0}
    check_complete(base)
    with pytest.raises(JobIncomplete, match=r"^1 of 4 samples failed \(rerun resumes\); boom$") as e:
        check_complete({**base, "complete": 3, "failed": {"2": "boom"}})
    assert exit_code_of(e.value) == EXIT_INCOMPLETE
    with pytest.raises(JobIncomplete, match=r"^2 of 4 samples pending"):
        check_complete({**base, "complete": 2, "pending": 2})


def test_an_eval_command_is_0_and_its_bad_input_2(tmp_path, capsys):
    import json

    q = tmp_path / "questions.jsonl"
    q.write_text(json.dumps({"id": "a", "category": "count", "answer": 3, "kind": "numerical"}) + "\n")
    p = tmp_path / "pred.jsonl"
    p.write_text(json.dumps({"id": "a", "prediction": "3"}) + "\n")
    assert cli.main(["vqa-eval", "--questions", str(q), "--pred", str(p), "--json"]) == EXIT_OK
    assert json.loads(capsys.readouterr().out)["overall"] == 1.0
    assert cli.main(["vqa-eval", "--questions", str(tmp_path / "none.jsonl"), "--pred", str(p)]) == EXIT_USAGE
    assert len(capsys.readouterr().err.strip().splitlines()) == 1


def test_interrupted_is_130(monkeypatch, capsys):
    def interrupted(args: argparse.Namespace) -> int:
        raise KeyboardInterrupt

    parser = cli.build_parser()
    monkeypatch.setattr(cli, "build_parser", lambda: parser)
    parser.set_defaults(func=interrupted)
    assert cli.main([]) == EXIT_INTERRUPTED
    assert capsys.readouterr().err.strip().endswith("interrupted")


def test_the_server_entry_point_follows_the_convention():
    bad = subprocess.run(
        [sys.executable, "-m", "sceneforge.engine.server", "--port", "0", "--threads", "0"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert bad.returncode == EXIT_USAGE and len(bad.stderr.strip().splitlines()) == 1, bad.stderr


@pytest.mark.render
def test_a_scenario_command_whose_samples_fail_exits_1(server, tmp_path, capsys):
    """`generate` on an impossible rule: the job runs to its end, the sample fails, one line, 1."""
    cfg = tmp_path / "impossible.yaml"
    cfg.write_text("min_bbox_px: 224\nmax_scenes: 1\nmax_render_tries: 3\nclutter: false\n")
    argv = [
        "generate",
        "--config",
        str(cfg),
        "--n",
        "1",
        "--out",
        str(tmp_path / "x"),
        "--server",
        server.address,
        "--quiet",
        "--no-fetch",
    ]
    assert cli.main(argv) == EXIT_INCOMPLETE
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "1 of 1 samples failed (rerun resumes)" in err[0], err
    assert err[0].startswith("sceneforge generate: error:")


@pytest.mark.render
def test_a_check_that_differs_exits_1(server, tmp_path, capsys):
    """`render-record` re-renders a scene record: identical bytes 0; a stored image that differs 1."""
    out = tmp_path / "v"
    assert (
        cli.main(
            [
                "vqa",
                "--env",
                "desert",
                "--n",
                "1",
                "--size",
                "96",
                "--out",
                str(out),
                "--server",
                server.address,
                "--quiet",
                "--per-category",
                "1",
                "--min-bbox-px",
                "8",
                "--no-fetch",
            ]
        )
        == EXIT_OK
    )
    record = out / "desert" / "scene_000000.json"
    assert cli.main(["render-record", str(record), "--server", server.address]) == EXIT_OK
    image = next((out / "desert").glob("img_000000.*"))
    image.write_bytes(image.read_bytes()[:-1] + b"\0")
    capsys.readouterr()
    assert cli.main(["render-record", str(record), "--server", server.address]) == EXIT_INCOMPLETE
    captured = capsys.readouterr()
    assert captured.out.startswith("DIFFERENT")
    err = captured.err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("sceneforge render-record: error:") and "differs" in err[0]
