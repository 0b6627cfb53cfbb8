"""Invariants of the nine degradations on synthetic images with hand-checkable geometry."""

import math

import numpy as np
import pytest

from sceneforge.core.errors import ConfigError
from sceneforge.scenarios.degrade import LEVELS, TYPES, degrade, focus_distance
from sceneforge.scenarios.degrade import optics, sensor, weather
from sceneforge.scenarios.degrade.color import to_linear

FOV = 90.0  # f_px = W/2: easy hand geometry


def checker(n=64, cell=4):
    y, x = np.mgrid[:n, :n]
    v = ((x // cell + y // cell) % 2 * 200 + 30).astype(np.uint8)
    return np.stack([v, v[::-1], np.full_like(v, 90)], -1)


def row_depth(n=64, near=200.0, far=5000.0):
    return np.repeat(np.linspace(near, far, n, dtype=np.float32)[:, None], n, axis=1)


def test_every_type_every_level_is_deterministic_and_keeps_shape():
    img, depth = checker(48), row_depth(48)
    depth[:4] = np.inf  # a sky band
    for kind in TYPES:
        for level in (1, 5):
            a = degrade(kind, level, img, depth=depth, fov_deg=FOV, seed=3, key="x")
            b = degrade(kind, level, img, depth=depth, fov_deg=FOV, seed=3, key="x")
            assert a.image.shape == img.shape and a.image.dtype == np.uint8, kind
            assert np.array_equal(a.image, b.image), kind
            # (level 1 defocus on a 48 px image is a sub-pixel blur circle: may change nothing)
            assert level == 1 or not np.array_equal(a.image, img), f"{kind} level {level} changed nothing"


def test_bad_inputs_are_config_errors():
    with pytest.raises(ConfigError, match="unknown degradation"):
        degrade("fog", 1, checker())
    with pytest.raises(ConfigError, match="1..5"):
        degrade("jpeg", 6, checker())
    with pytest.raises(ConfigError, match="needs the depth"):
        degrade("haze", 1, checker())


def test_severity_grows_with_level():
    img, depth = checker(48), row_depth(48)
    for kind in TYPES:
        errs = [
            np.abs(degrade(kind, lv, img, depth=depth, fov_deg=FOV, seed=0).image.astype(float) - img).mean() for lv in (1, 3, 5)
        ]
        assert errs[0] < errs[2], (kind, errs)


# --- haze -------------------------------------------------------------------------------------
def test_haze_is_koschmieder_and_monotone_in_depth():
    img = np.full((64, 8, 3), 50, np.uint8)
    depth = row_depth(64, 0.0 + 1e-3, 20000.0)[:, :8]
    air = np.array([0.9, 0.9, 0.9], np.float32)
    out = to_linear(weather.haze(img, depth, 100.0, air))[..., 0][:, 0]
    assert np.all(np.diff(out) >= 0) and out[-1] > out[0]
    # hand check at d = 100 m, V = 100 m: t = exp(-3.912) ~ 0.02
    d = np.full((1, 1), 10000.0)
    t = float(weather.transmission(d, 100.0)[0, 0])
    assert t == pytest.approx(math.exp(-3.912), rel=1e-5)
    j = float(to_linear(np.uint8([50]))[0])
    got = float(to_linear(weather.haze(np.full((1, 1, 3), 50, np.uint8), d, 100.0, air))[0, 0, 0])
    assert got == pytest.approx(j * t + 0.9 * (1 - t), abs=4e-3)


def test_haze_airlight_is_the_scenes_sky():
    img = checker(32)
    img[:8] = (120, 160, 230)
    depth = row_depth(32)
    depth[:8] = np.inf
    air = weather.airlight(img, depth)
    assert np.allclose(air, to_linear(np.uint8([[120, 160, 230]]))[0], atol=1e-6)
    out = degrade("haze", 5, img, depth=depth, fov_deg=FOV)
    assert np.array_equal(out.image[:8], img[:8])  # sky: t = 0 and J = A


# --- defocus ----------------------------------------------------------------------------------
def test_circle_of_confusion_hand_values():
    d = np.array([[100.0, 200.0, np.inf]])
    c = optics.circle_of_confusion_px(d, focus_cm=100.0, aperture_cm=1.0, f_px=100.0)
    assert c[0].tolist() == pytest.approx([0.0, 0.5, 1.0], abs=1e-4)  # inf → 1/s (FAR_CM ~ inf)


def test_defocus_is_zero_at_the_focus_distance_and_grows_away_from_it():
    img = checker(64, 2)
    depth = row_depth(64, 300.0, 3000.0)
    s = float(depth[20, 0])
    depth[16:24] = s
    out = optics.defocus(img, depth, FOV, s, aperture_cm=300.0)
    assert np.array_equal(out[16:24], img[16:24])
    contrast = lambda a: float(a.astype(float).std())
    assert contrast(out[56:64]) < 0.5 * contrast(img[56:64])  # far from focus: blurred
    assert contrast(out[28:34]) > contrast(out[56:64])  # nearer focus: sharper


def test_focus_distance_is_centre_median():
    depth = row_depth(50, 100.0, 5000.0)
    assert focus_distance(depth) == pytest.approx(float(np.median(depth[20:30, 20:30])))


# --- motion blur ------------------------------------------------------------------------------
def test_motion_flow_rotation_is_uniform_and_translation_is_parallax():
    depth = np.full((32, 32), 1000.0)
    mx, my = optics.motion_flow(depth, FOV, (0, 0, 0), yaw_deg=10.0, pitch_deg=0.0, tau=1.0)
    u0 = np.arange(32) + 0.5 - 16  # pixel centre relative to the principal point
    # a camera yawed right by 10 deg sees the centre point shifted left by f * tan(10 deg)
    assert mx[16, 16] + 0.5 - 16 == pytest.approx(
        (16 * (u0[16] / 16) - 16 * math.tan(math.radians(10))) / (1 + u0[16] / 16 * math.tan(math.radians(10))), abs=1e-3
    )
    near, far = np.full((8, 8), 500.0), np.full((8, 8), 2000.0)
    a = optics.motion_flow(near, FOV, (0, 100.0, 0), 0, 0, 1.0)[0] - (np.arange(8))
    b = optics.motion_flow(far, FOV, (0, 100.0, 0), 0, 0, 1.0)[0] - (np.arange(8))
    # moving right by 100 cm: points shift left by f*100/z with planar z = ray depth / |ray|
    # (pixel centre (4.5, 4.5) is 0.5 px off-axis in x and y with f = 4): 0.81 px vs 0.20 px
    norm = math.sqrt(1 + 2 * (0.5 / 4) ** 2)
    assert a[4, 4] == pytest.approx(-400 * norm / 500, abs=1e-4) and b[4, 4] == pytest.approx(-400 * norm / 2000, abs=1e-4)


def test_motion_blur_without_motion_is_identity():
    img, depth = checker(32), row_depth(32)
    assert np.array_equal(optics.motion_blur(img, depth, FOV, (0, 0, 0), 0.0), img)


# --- distortion --------------------------------------------------------------------------------
def test_distortion_round_trip_and_barrel_direction():
    x = np.linspace(-0.6, 0.6, 11)
    xd, yd = optics.distort_normalized(x, x * 0.5, -0.3, -0.02, 0.001, -0.001)
    xu, yu = optics.undistort_normalized(xd, yd, -0.3, -0.02, 0.001, -0.001)
    assert np.allclose(xu, x, atol=1e-7) and np.allclose(yu, x * 0.5, atol=1e-7)
    lens = optics.LensDistortion(64, 64, -0.3)
    p = lens.points([[32, 32], [64, 32], [0, 0], [64, 64], [48, 32]])
    assert p[0].tolist() == pytest.approx([32, 32])
    assert p[2].tolist() == pytest.approx([0, 0]) and p[3].tolist() == pytest.approx([64, 64])  # corners fixed
    assert p[1, 0] > 64 and p[4, 0] > 48  # barrel + fill-the-frame zoom: edge midpoints leave the frame
    # the inverse maps agree with the forward map at pixel centres
    q = lens.points([[lens.map_x[10, 20] + 0.5, lens.map_y[10, 20] + 0.5]])[0]
    assert q.tolist() == pytest.approx([20.5, 10.5], abs=1e-4)  # maps are float32


def test_distorted_masks_still_match_distorted_images():
    n = 96
    mask = np.zeros((n, n, 3), np.uint8)
    mask[20:50, 10:40] = (255, 0, 0)
    mask[55:90, 50:92] = (0, 255, 0)
    img = mask.copy()
    out = degrade("distortion", 5, img, mask=mask, fov_deg=FOV)
    wm, wi = out.mask, out.image
    assert set(map(tuple, wm.reshape(-1, 3))) <= {(0, 0, 0), (255, 0, 0), (0, 255, 0)}
    # interior pixels (uniform 5x5 neighbourhood in the warped mask: bilinear image samples
    # and nearest mask samples then read the same source region) have the mask's colour
    same = np.ones((n - 4, n - 4), bool)
    for dy in range(5):
        for dx in range(5):
            same &= (wm[dy : dy + n - 4, dx : dx + n - 4] == wm[2:-2, 2:-2]).all(-1)
    diff = np.abs(wi[2:-2, 2:-2].astype(int) - wm[2:-2, 2:-2].astype(int)).max(-1)
    assert same.sum() > 0.75 * (n - 4) ** 2 and diff[same].max() <= 1
    for colour, box in (((255, 0, 0), [10, 20, 40, 50]), ((0, 255, 0), [50, 55, 92, 90])):
        ys, xs = np.nonzero((wm == colour).all(-1))
        mbox = [xs.min(), ys.min(), xs.max() + 1, ys.max() + 1]
        assert np.allclose(out.box(box), mbox, atol=1.01), (out.box(box), mbox)


# --- sensor ---------------------------------------------------------------------------------------
def test_low_light_noise_is_shot_noise():
    img = np.full((128, 128, 3), 128, np.uint8)
    rng = lambda: np.random.default_rng(0)
    a, b = sensor.low_light(img, rng(), 1 / 8), sensor.low_light(img, rng(), 1 / 128)
    la, lb = to_linear(a), to_linear(b)
    lin = float(to_linear(np.uint8([128]))[0])
    assert abs(float(la.mean()) - lin) < 0.01  # gain restores the exposure on average
    # noise in linear light = sqrt(shot + read^2) / electrons; 16x less light -> ~4x (shot) and more (read)
    rel = lambda frac: math.sqrt(lin * frac * 4000 + 3.0**2) / (lin * frac * 4000)
    ratio = float(lb.std() / la.std())
    assert ratio == pytest.approx(rel(1 / 128) / rel(1 / 8), rel=0.1), ratio


def test_over_exposure_clips_in_linear_light():
    img = np.uint8([[[0, 100, 255]]])
    out = sensor.over_exposure(img, 1.0)
    assert out[0, 0, 0] == 0 and out[0, 0, 2] == 255
    assert float(to_linear(out)[0, 0, 1]) == pytest.approx(2 * float(to_linear(img)[0, 0, 1]), abs=4e-3)


def test_jpeg_and_low_resolution_keep_flat_images():
    flat = np.full((32, 32, 3), 77, np.uint8)
    j = sensor.jpeg(flat, 3)
    assert j.min() == j.max() and abs(int(j[0, 0, 0]) - 77) <= 16  # one DC step at quality 3
    assert np.array_equal(sensor.jpeg(flat, 95), flat)
    assert np.array_equal(sensor.low_resolution(flat, 8), flat)


def test_water_drops_change_only_pixels_inside_drops():
    img = checker(64)
    out, drops = weather.droplets(img, np.random.default_rng(1), 4, (0.05, 0.08))
    yy, xx = np.mgrid[:64, :64] + 0.5
    inside = np.zeros((64, 64), bool)
    for d in drops:
        (cx, cy), r = d["centre_px"], d["radius_px"]
        inside |= ((xx - cx) / r) ** 2 + ((yy - cy) / (r * d["aspect"])) ** 2 < 1.0
    changed = (out != img).any(-1)
    assert changed.any() and not (changed & ~inside).any()


def test_levels_are_monotone_tables():
    for kind, vals in LEVELS.items():
        assert len(vals) == 5, kind


# --- a dataset on disk ------------------------------------------------------------------------------
def _tiny_dataset(root):
    """A two-sample dataset in sceneforge's layout with depth, masks and params."""
    import json

    import pandas as pd
    from PIL import Image

    rows = []
    for i in range(2):
        d = root / "desert" / "ego" / "t"
        d.mkdir(parents=True, exist_ok=True)
        img, depth = checker(64), row_depth(64)
        mask = np.zeros((64, 64, 3), np.uint8)
        mask[10:30, 12 + i : 40] = (200, 10, 10)
        Image.fromarray(img).save(d / f"img_{i:04d}.jpg", quality=95)
        Image.fromarray(mask).save(d / f"mask_{i:04d}.png")
        np.save(d / f"depth_{i:04d}.npy", depth)
        (d / f"params_{i:04d}.json").write_text(json.dumps({"mask_colors": {"source": [200, 10, 10]}}))
        rows.append(
            {
                "file_name": f"desert/ego/t/img_{i:04d}.jpg",
                "label": "left",
                "split": "train",
                "env": "desert",
                "task": "ego",
                "triple_id": "t",
                "camera_hfov_deg": FOV,
                "mask_file": f"desert/ego/t/mask_{i:04d}.png",
                "depth_file": f"desert/ego/t/depth_{i:04d}.npy",
                "params_file": f"desert/ego/t/params_{i:04d}.json",
                "source_bbox_x0": 12 + i,
                "source_bbox_y0": 10,
                "source_bbox_x1": 39,
                "source_bbox_y1": 29,
            }
        )
    pd.DataFrame(rows).to_parquet(root / "samples.parquet")
    return rows


def test_degrade_command_writes_variants_table_and_warped_boxes(tmp_path, capsys):
    import pandas as pd

    from sceneforge.cli import main

    _tiny_dataset(tmp_path)
    assert main(["degrade", str(tmp_path), "--types", "haze", "distortion", "--levels", "2", "5"]) == 0
    t = pd.read_parquet(tmp_path / "degraded.parquet")
    assert len(t) == 8 and set(t["degradation"]) == {"haze", "distortion"} and (t["label"] == "left").all()
    assert all((tmp_path / f).is_file() for f in t["file_name"])
    d = t[(t["degradation"] == "distortion") & (t["level"] == 5)].iloc[0]
    from PIL import Image

    wm = np.asarray(Image.open(tmp_path / d["mask_file"]))
    ys, xs = np.nonzero((wm == (200, 10, 10)).all(-1))
    assert [d["source_bbox_x0"], d["source_bbox_y0"], d["source_bbox_x1"], d["source_bbox_y1"]] == [
        xs.min(),
        ys.min(),
        xs.max(),
        ys.max(),
    ] and d["source_bbox_x0"] != 12  # inclusive, like the clean rows
    before = {f: (tmp_path / f).stat().st_mtime_ns for f in t["file_name"]}
    assert main(["degrade", str(tmp_path), "--types", "haze", "distortion", "--levels", "2", "5"]) == 0
    assert "0 written" in capsys.readouterr().out
    assert before == {f: (tmp_path / f).stat().st_mtime_ns for f in t["file_name"]}


def test_degrade_command_errors_are_one_line(tmp_path, capsys):
    import pandas as pd

    from sceneforge.cli import main

    rows = _tiny_dataset(tmp_path)
    pd.DataFrame([{k: v for k, v in r.items() if k != "depth_file"} for r in rows]).to_parquet(tmp_path / "samples.parquet")
    assert main(["degrade", str(tmp_path), "--types", "defocus"]) == 2
    assert "make the dataset with --depth" in capsys.readouterr().err
    assert main(["degrade", str(tmp_path / "nope"), "--types", "jpeg"]) == 2


def test_distortion_boxes_without_masks_follow_the_lens(tmp_path):
    import pandas as pd
    from PIL import Image

    from sceneforge.cli import main

    rows = _tiny_dataset(tmp_path)
    pd.DataFrame([{k: v for k, v in r.items() if k != "mask_file"} for r in rows]).to_parquet(tmp_path / "samples.parquet")
    assert main(["degrade", str(tmp_path), "--types", "distortion", "--levels", "5"]) == 0
    d = pd.read_parquet(tmp_path / "degraded.parquet").iloc[0]
    # the warped mask of the same object (made here) bounds the same pixels within a pixel
    lens_mask = Image.open(tmp_path / "desert/ego/t/mask_0000.png")
    from sceneforge.scenarios.degrade import degrade

    wm = degrade("distortion", 5, np.asarray(lens_mask), mask=np.asarray(lens_mask), fov_deg=FOV).mask
    ys, xs = np.nonzero((wm == (200, 10, 10)).all(-1))
    got = [d[f"source_bbox_{k}"] for k in ("x0", "y0", "x1", "y1")]
    assert np.allclose(got, [xs.min(), ys.min(), xs.max(), ys.max()], atol=1.0), got
