"""Issue 13 item 11: each bad input gives one line naming the file/field/value, a non-zero exit,
and nothing partial left behind (CLI in-process, so each case costs well under a second)."""

from __future__ import annotations

import pytest

from sceneforge import cli


def _one_line_error(capsys, argv: list[str]) -> str:
    assert cli.main(argv) == 2
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(err) == 1, err
    return err[0]


@pytest.mark.parametrize("out, expect", [("FILE", "not a directory"), ("/dev/null/x", "/dev/null/x"), ("/proc/x", "/proc/x")])
def test_out_that_cannot_be_a_directory(capsys, tmp_path, out, expect):
    if out == "FILE":
        out = str(tmp_path / "a_file")
        (tmp_path / "a_file").write_text("x")
    line = _one_line_error(capsys, ["generate", "--env", "desert", "--task", "ego", "--n", "2", "--out", out])
    assert out in line and expect in line


def test_unknown_licence_is_named_and_nothing_is_written(capsys, tmp_path, monkeypatch):
    monkeypatch.delenv("SCENEFORGE_LICENSES", raising=False)
    out = tmp_path / "ds"
    line = _one_line_error(
        capsys, ["generate", "--env", "desert", "--task", "ego", "--n", "2", "--licenses", "cc0,gpl", "--out", str(out)]
    )
    assert "unknown licence 'gpl'" in line and "cc-by" in line
    assert not out.exists()


def test_motion_field_that_is_not_a_number(capsys, tmp_path):
    cfg = tmp_path / "v.yaml"
    cfg.write_text("env: desert\nmotion: {n_frames: ten}\n")
    out = tmp_path / "v"
    line = _one_line_error(capsys, ["videos", "--config", str(cfg), "--n", "1", "--out", str(out)])
    assert "motion.n_frames" in line and "'ten'" in line
    assert not out.exists()


def test_env_name_typo_suggests_the_closest(capsys, tmp_path):
    line = _one_line_error(capsys, ["generate", "--env", "desrt", "--task", "ego", "--n", "2", "--out", str(tmp_path / "d")])
    assert "unknown environment 'desrt'; did you mean 'desert'?" in line


@pytest.mark.parametrize(
    "value, expect",
    [
        ("1.0e30", "expected a finite number"),  # a string in YAML 1.1
        ("1.0e+30", "outside the allowed range"),
    ],
)
def test_env_file_with_a_huge_extent(capsys, tmp_path, value, expect):
    env = tmp_path / "big.yaml"
    env.write_text(f"name: big\nground: {{extent_cm: {value}}}\ntriples:\n  - {{id: a, source: rock, target: truck}}\n")
    line = _one_line_error(capsys, ["generate", "--env", str(env), "--task", "ego", "--n", "2", "--out", str(tmp_path / "d")])
    assert "big.yaml:2" in line and "ground.extent" in line and expect in line
    assert not (tmp_path / "d").exists()
