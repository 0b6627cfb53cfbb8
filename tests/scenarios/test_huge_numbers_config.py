"""Issue 48 item 6: a 400-digit integer in an environment file (``sun.pitch``,
``ground.extent_cm``) or in ``--config`` (``n:``) was a 31-53-line traceback (OverflowError in
``world_dict._coerce_field``, ``limits.check_range``, ``config_base.is_number``). Now one line naming
the file, field and value, exit 2, before any server starts."""

from __future__ import annotations

from pathlib import Path

import pytest

from sceneforge.cli import main

BIG = "9" * 400
DESERT = Path(__file__).resolve().parents[2] / "scenarios" / "envs" / "desert.yaml"


def _one_line_exit_2(capsys, argv: list[str], *words: str) -> str:
    capsys.readouterr()
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    assert len(err) < 600, "the 400-digit value is quoted in full"
    for w in words:
        assert w in err, (w, err)
    return err


@pytest.mark.parametrize(
    "old, new, field",
    [
        ("pitch: 62", f"pitch: {BIG}", "world.sun.pitch"),
        ("tile_cm: 300", f"extent_cm: {BIG}, tile_cm: 300", "world.ground.extent"),
        ("tile_cm: 300", f"tile_cm: -{BIG}", "world.ground.tile_cm"),
        ("intensity: 1.1", f"intensity: {BIG}", "world.sun.intensity"),
    ],
)
def test_huge_integer_in_an_env_file_is_one_line(tmp_path, capsys, old, new, field):
    text = DESERT.read_text()
    assert old in text
    env = tmp_path / "huge.yaml"
    env.write_text(text.replace(old, new, 1))
    argv = ["generate", "--env", str(env), "--n", "1", "--out", str(tmp_path / "out")]
    _one_line_exit_2(capsys, argv, str(env), field, "too large")
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("field", ["n", "seed"])
def test_huge_integer_in_config_is_one_line(tmp_path, capsys, field):
    cfg = tmp_path / "c.yaml"
    cfg.write_text(f"envs: [desert]\nn: 2\n{field}: {BIG}\n" if field != "n" else f"envs: [desert]\nn: {BIG}\n")
    _one_line_exit_2(capsys, ["generate", "--config", str(cfg), "--out", str(tmp_path / "out")], field)
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("field", ["margin_ego_deg", "margin_allo_deg"])
def test_huge_margin_in_config_is_one_line(tmp_path, capsys, field):
    """``relations.check_margin`` called ``float()`` on the config's value (OverflowError)."""
    cfg = tmp_path / "c.yaml"
    cfg.write_text(f"envs: [desert]\nn: 2\n{field}: {BIG}\n")
    _one_line_exit_2(capsys, ["generate", "--config", str(cfg), "--out", str(tmp_path / "out")], field, "[0, 45)")


def test_huge_min_bbox_in_a_videos_config_is_one_line(tmp_path, capsys):
    """``videos`` passed ``min_bbox_px`` to ``float()`` in its context (OverflowError)."""
    cfg = tmp_path / "v.yaml"
    cfg.write_text(f"env: desert\nmin_bbox_px: {BIG}\n")
    argv = ["videos", "--config", str(cfg), "--n", "1", "--out", str(tmp_path / "out")]
    _one_line_exit_2(capsys, argv, "min_bbox_px must be a number in [0, 1e6]")
    assert not (tmp_path / "out").exists()
