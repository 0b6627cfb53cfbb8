"""Issue 39 item 1: every path read from a dataset table or a scene record stays inside the
dataset root or the command stops with one line (file, row/field, value) and writes nothing.

The reproduction: a ``metadata.csv`` row ``file_name=../../x/victim.jpg`` (or an absolute path,
or ``mask_file=../..``), then ``sceneforge degrade DS --types haze jpeg distortion --levels 1``
exited 0 and wrote PNGs next to the victim; ``render-record`` read ``files.image: /etc/hostname``.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from PIL import Image

from sceneforge.cli import main


def _dataset(tmp_path, **row_changes) -> tuple:
    """``tmp_path/ds`` with one clean sample (image, depth, mask) and a victim in ``tmp_path/x``."""
    ds, victim = tmp_path / "ds", tmp_path / "x"
    ds.mkdir()
    victim.mkdir()
    img = np.random.default_rng(0).integers(0, 255, (32, 32, 3), dtype=np.uint8)
    Image.fromarray(img).save(victim / "victim.jpg")
    Image.fromarray(img).save(ds / "img_0000.jpg")
    Image.fromarray(img).save(ds / "mask_0000.png")
    np.save(ds / "depth_0000.npy", np.full((32, 32), 500.0, np.float32))
    ok = {"file_name": "img_0000.jpg", "depth_file": "depth_0000.npy", "mask_file": "mask_0000.png", "camera_hfov_deg": 60.0}
    bad = {k: (v.replace("VICTIM", str(victim / "victim.jpg")) if isinstance(v, str) else v) for k, v in row_changes.items()}
    pd.DataFrame([ok, {**ok, **bad}]).to_csv(ds / "metadata.csv", index=False)
    return ds, victim


def _one_line(capsys, argv) -> str:
    assert main(argv) == 2
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(err) == 1, err
    return err[0]


@pytest.mark.parametrize(
    "field, value",
    [
        ("file_name", "../x/victim.jpg"),
        ("file_name", "VICTIM"),
        ("mask_file", "../.."),
        ("mask_file", "../x/victim.jpg"),
        ("depth_file", "/etc/hostname"),
    ],
)
def test_degrade_refuses_a_row_that_leaves_the_dataset_and_writes_nothing(tmp_path, capsys, field, value):
    ds, victim = _dataset(tmp_path, **{field: value})
    line = _one_line(capsys, ["degrade", str(ds), "--types", "haze", "jpeg", "distortion", "--levels", "1"])
    shown = value.replace("VICTIM", str(victim / "victim.jpg"))
    assert f"metadata.csv row 2 {field} {shown!r}" in line
    assert sorted(p.name for p in victim.iterdir()) == ["victim.jpg"]
    assert not list(ds.glob("*_1.png")) and not (ds / "degraded.parquet").exists()  # row 1 not written either


def test_degrade_refuses_a_symlinked_directory_that_points_out(tmp_path, capsys):
    ds, victim = _dataset(tmp_path, file_name="link/victim.jpg")
    (ds / "link").symlink_to(victim)
    line = _one_line(capsys, ["degrade", str(ds), "--types", "jpeg", "--levels", "1"])
    assert "row 2 file_name 'link/victim.jpg'" in line and "outside the dataset" in line
    assert sorted(p.name for p in victim.iterdir()) == ["victim.jpg"]


def test_render_record_refuses_an_image_outside_the_dataset(tmp_path, capsys):
    rec = tmp_path / "vqa" / "desert" / "scene_000000.json"
    rec.parent.mkdir(parents=True)
    rec.write_text(
        json.dumps(
            {
                "env": "desert",
                "world": {},
                "actors": [],
                "image": {"format": "png"},
                "camera": {"location": [0, 0, 200], "rotation": [0, 0, 0], "fov_deg": 60, "width": 32, "height": 32},
                "files": {"image": "/etc/hostname"},
            }
        )
    )
    line = _one_line(capsys, ["render-record", str(rec), "--server", "127.0.0.1:1"])  # refused before connecting
    assert f"{rec}: files.image '/etc/hostname': absolute path" in line


def test_export_and_preview_refuse_rows_outside_the_dataset(tmp_path, capsys):
    ds, victim = _dataset(tmp_path, file_name="../x/victim.jpg")
    t = pd.read_csv(ds / "metadata.csv").assign(
        env="desert",
        task="ego",
        triple_id="t",
        source_class="rock",
        target_class="truck",
        unit_index=[0, 1],
        index=[0, 1],
        label="left",
        split="train",
    )
    t.to_csv(ds / "metadata.csv", index=False)
    line = _one_line(capsys, ["export", "--layout", "sparrta", str(ds), str(tmp_path / "out")])
    assert "metadata.csv row 2 file_name '../x/victim.jpg'" in line and not (tmp_path / "out").exists()
    line = _one_line(capsys, ["preview", str(ds), "--n", "2", "--out", str(tmp_path / "sheet.png")])
    assert "row 2 file_name '../x/victim.jpg'" in line and not (tmp_path / "sheet.png").exists()
