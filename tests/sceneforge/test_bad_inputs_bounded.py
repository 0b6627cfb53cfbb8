"""Issue 39 items 8 and 9: the outside attack's remaining bad inputs each give one line naming the
file/field/value and exit 2 (they were tracebacks, silent acceptance, or hangs); ``--out ""`` is
refused instead of writing into the current directory. In-process CLI, nothing rendered."""

from __future__ import annotations

import json
import time

import numpy as np
import pandas as pd
import pytest
from PIL import Image

from sceneforge import cli


def _one_line_error(capsys, argv: list[str]) -> str:
    assert cli.main(argv) == 2
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(err) == 1, err
    return err[0]


@pytest.fixture(autouse=True)
def _no_fetch(monkeypatch):
    monkeypatch.setenv("SCENEFORGE_NO_FETCH", "1")


@pytest.mark.parametrize("command", [["generate", "--task", "ego"], ["videos"], ["vqa"]])
def test_absurd_n_is_one_line_not_a_memory_error(capsys, tmp_path, command):
    line = _one_line_error(capsys, command + ["--env", "desert", "--n", "99999999999999", "--out", str(tmp_path / "o")])
    assert "--n: the job would have 99999999999999 samples" in line and "at most 10000000" in line


@pytest.mark.parametrize("command", [["videos"], ["vqa"]])
def test_out_name_too_long_is_one_line(capsys, tmp_path, command):
    out = str(tmp_path / ("a" * 300))
    line = _one_line_error(capsys, command + ["--env", "desert", "--n", "1", "--out", out])
    assert "cannot create the directory (File name too long)" in line


@pytest.mark.parametrize("command", [["generate", "--task", "ego"], ["videos"], ["vqa"]])
def test_empty_out_is_refused(capsys, tmp_path, monkeypatch, command):
    monkeypatch.chdir(tmp_path)
    line = _one_line_error(capsys, command + ["--env", "desert", "--n", "1", "--out", ""])
    assert "--out '': empty" in line and not list(tmp_path.iterdir())  # wrote job.json etc. into . before


def test_motion_that_is_not_a_mapping(capsys, tmp_path):
    cfg = tmp_path / "v.yaml"
    cfg.write_text("env: desert\nmotion: [1, 2]\n")
    line = _one_line_error(capsys, ["videos", "--config", str(cfg), "--n", "1", "--out", str(tmp_path / "v")])
    assert "motion must be a mapping" in line and "[1, 2]" in line


@pytest.mark.parametrize("value", ["nan", "inf", "-1"])
def test_vqa_min_bbox_px_must_be_a_real_size(capsys, tmp_path, value):
    line = _one_line_error(capsys, ["vqa", "--env", "desert", "--n", "1", "--min-bbox-px", value, "--out", str(tmp_path / "q")])
    assert "min_bbox_px" in line and value in line


def test_unreachable_ray_address_fails_fast(capsys, tmp_path):
    pytest.importorskip("ray")
    t0 = time.perf_counter()
    line = _one_line_error(
        capsys,
        [
            "generate",
            "--env",
            "desert",
            "--task",
            "ego",
            "--n",
            "2",
            "--quiet",
            "--out",
            str(tmp_path / "r"),
            "--backend",
            "ray",
            "--ray-address",
            "127.0.0.1:1",
        ],
    )
    assert "--ray-address 127.0.0.1:1: nothing accepts connections" in line
    assert time.perf_counter() - t0 < 30  # hung > 165 s with 12 warning lines before


# --- degrade ---------------------------------------------------------------------------------------
def _degrade_dataset(root, *, image=None, depth=None, **row):
    root.mkdir(parents=True, exist_ok=True)
    img = image if image is not None else np.random.default_rng(0).integers(0, 255, (32, 32, 3), dtype=np.uint8)
    Image.fromarray(img).save(root / "img_0000.png")
    np.save(root / "depth_0000.npy", depth if depth is not None else np.full(img.shape[:2], 500.0, np.float32))
    base = {
        "file_name": "img_0000.png",
        "depth_file": "depth_0000.npy",
        "camera_hfov_deg": 60.0,
        "source_bbox_x0": 1,
        "source_bbox_y0": 2,
        "source_bbox_x1": 10,
        "source_bbox_y1": 12,
    }
    pd.DataFrame([{**base, **row}]).to_csv(root / "metadata.csv", index=False)
    return root


def _nan_depth():
    d = np.full((32, 32), 500.0, np.float32)
    d[3:5] = np.nan
    return d


@pytest.mark.parametrize(
    "case, says",
    [
        (dict(camera_hfov_deg=0), "row 1 camera_hfov_deg 0: expected a horizontal field of view in (0, 180)"),
        (dict(source_bbox_x0="abc"), "row 1 source_bbox_x0 'abc': expected a pixel coordinate"),
        (dict(depth=np.array(["a", "b"])), "depth_0000.npy: depth must be a 2-D array of numbers"),
        (dict(depth=_nan_depth()), "depth_0000.npy: depth has 64 NaN and 0 negative"),
        (dict(depth=np.full((32, 32), -5.0, np.float32)), "depth has 0 NaN and 1024 negative"),
        (dict(image=np.zeros((4100, 4100, 3), np.uint8)), "img_0000.png: 4100x4100; degrade handles at most"),
    ],
)
def test_degrade_bad_rows_and_files_are_one_line(capsys, tmp_path, case, says):
    ds = _degrade_dataset(tmp_path / "ds", **case)
    line = _one_line_error(capsys, ["degrade", str(ds), "--types", "haze", "jpeg", "distortion", "--levels", "1"])
    assert says in line
    assert not list(ds.glob("*_1.png"))


# --- render-record -----------------------------------------------------------------------------------
RECORD = {
    "env": "desert",
    "world": {},
    "image": {"format": "png", "jpeg_quality": 95},
    "actors": [
        {
            "name": "a",
            "asset": "primitive_cube",
            "location": [500, 0, 0],
            "rotation": [0, 0, 0],
            "scale": [1, 1, 1],
            "tint": None,
            "color": [255, 0, 0],
        }
    ],
    "camera": {"location": [0, 0, 200], "rotation": [0, 0, 0], "fov_deg": 60, "width": 32, "height": 32},
    "files": {"image": "desert/img_000000.png"},
}


def _edit(rec, path, value):
    *head, last = path
    for k in head:
        rec = rec[k]
    if value is KeyError:
        del rec[last]
    else:
        rec[last] = value


@pytest.mark.parametrize(
    "path, value, says",
    [
        ((), [1, 2], "the record is list [1, 2]; expected a JSON object"),
        ((), None, "the record is missing; expected a JSON object"),
        (("camera",), KeyError, "camera is missing"),
        (("image",), KeyError, "image is missing"),
        (("actors", 0, "name"), KeyError, "actors[0].name None: expected a non-empty string"),
        (("image", "jpeg_quality"), "high", "image.jpeg_quality 'high': expected an integer in [1, 100]"),
        (("actors", 0, "rotation"), [1, 2], "actors[0].rotation [1, 2]: expected 3 numbers"),
        (("camera", "rotation"), [1, 2], "camera.rotation [1, 2]: expected 3 numbers"),
        (("camera", "fov_deg"), float("nan"), "camera.fov_deg nan"),
        (("camera", "width"), -5, "camera.width -5"),
        (("env",), "../../etc/x.yaml", "env '../../etc/x.yaml'"),
    ],
)
def test_render_record_checks_every_field_before_starting_a_server(capsys, tmp_path, path, value, says):
    import copy

    rec = copy.deepcopy(RECORD)
    if path:
        _edit(rec, path, value)
    else:
        rec = value
    f = tmp_path / "vqa" / "desert" / "scene_000000.json"
    f.parent.mkdir(parents=True)
    f.write_text(json.dumps(rec))
    line = _one_line_error(capsys, ["render-record", str(f), "--server", "127.0.0.1:1"])
    assert f"{f}: " in line and says in line
