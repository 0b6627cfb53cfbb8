"""`sceneforge assets ...` and `sceneforge envs ...` through the real CLI entry point."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

from sceneforge.cli import main


def test_assets_list_procedural(capsys):
    assert main(["assets", "list", "--procedural"]) == 0
    out = capsys.readouterr().out
    assert "proc_truck" in out and "truck" in out and "cc0-1.0" in out
    row = next(line for line in out.splitlines() if line.startswith("proc_truck "))
    assert row.split()[-5:] == ["7.00", "x", "2.48", "x", "4.20"]  # metres


def test_assets_list_license_filter_can_exclude_everything(capsys):
    assert main(["assets", "list", "--procedural", "--licenses", "cc-by-sa"]) == 0
    assert "proc_" not in capsys.readouterr().out


def test_assets_validate_ok_and_error_exit_2(tmp_path, capsys):
    good = tmp_path / "ok.yaml"
    good.write_text("pack: p\nassets:\n  - {id: c, class: cone, license: cc0-1.0, procedural: {generator: traffic_cone}}\n")
    assert main(["assets", "validate", str(good)]) == 0
    assert "ok (1 assets" in capsys.readouterr().out
    bad = tmp_path / "bad.yaml"
    bad.write_text("pack: p\nassets:\n  - {id: m, class: cone, license: cc0-1.0, mesh: missing.glb}\n")
    assert main(["assets", "validate", str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "bad.yaml" in err and "'m'" in err and "file not found" in err


@pytest.mark.render
def test_assets_preview_writes_sheet(tmp_path):
    out = tmp_path / "sheet.png"
    assert (
        main(["assets", "preview", "--procedural", "--class", "truck", "--class", "cone", "--tile", "64", "--out", str(out)]) == 0
    )
    img = np.asarray(Image.open(out))
    assert img.shape == (64, 3 * 64, 3) and img.std() > 10  # 2 trucks + 1 cone


def test_assets_preview_unknown_class(tmp_path, capsys):
    assert main(["assets", "preview", "--procedural", "--class", "unicorn", "--out", str(tmp_path / "x.png")]) == 2
    assert "unicorn" in capsys.readouterr().err and not (tmp_path / "x.png").exists()


def test_envs_list(capsys):
    assert main(["envs", "list"]) == 0
    out = capsys.readouterr().out
    assert all(n in out for n in ("desert", "forest", "winter_town", "bridge", "city"))
    assert "fire_hydrant/taxi" in out


@pytest.mark.render
def test_envs_preview(tmp_path):
    assert main(["envs", "preview", "city", "--procedural", "--views", "2", "--size", "48", "--out", str(tmp_path)]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["city_0.png", "city_1.png"]


def test_envs_preview_unknown_env(tmp_path, capsys):
    assert main(["envs", "preview", "moon", "--out", str(tmp_path)]) == 2
    assert "unknown environment 'moon'" in capsys.readouterr().err
