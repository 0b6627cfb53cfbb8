"""Video files and the rendered dataset: mp4 round trips, the mirror test, layout, determinism,
resume, and the CLI."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import cv2
import numpy as np
import pandas as pd
import pytest

from sceneforge.core.errors import ConfigError
from sceneforge.scenarios.contract import Shard
from sceneforge.scenarios.videos import dsi
from sceneforge.scenarios.videos import scenario as videos
from sceneforge.scenarios.videos import motion as mo
from sceneforge.scenarios.videos.video_io import apply_aug, decode_mp4, encode_mp4, probe_mp4
from video_helpers import mirror_pair

CONFIG = {
    "env": "city",
    "n": 4,
    "seed": 3,
    "motion": {
        "n_frames": 8,
        "fps": 4.0,
        "patterns": ["cam_static-obj_translate", "cam_rotate-obj_static", "cam_translate-obj_static", "cam_rotate-obj_translate"],
    },
}


def _frames(t=6, h=64, w=96, seed=0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    f = np.zeros((t, h, w, 3), np.uint8)
    for i in range(t):  # a moving block on a gradient: compressible, asymmetric
        f[i] = np.linspace(0, 200, w, dtype=np.uint8)[None, :, None]
        f[i, 10:30, 5 + 8 * i : 25 + 8 * i] = rng.integers(0, 255, 3)
    return f


# --- mp4 io and frame transforms (no renderer) ------------------------------------------------
@pytest.mark.parametrize("aug", dsi.AUGS)
def test_frame_transforms_are_involutions(aug):
    f = _frames()
    assert np.array_equal(apply_aug(apply_aug(f, aug), aug), f)
    assert np.array_equal(apply_aug(f, "reverse_hflip"), apply_aug(apply_aug(f, "hflip"), "reverse"))
    assert not np.array_equal(apply_aug(f, "hflip"), f) and not np.array_equal(apply_aug(f, "reverse"), f)


def test_mp4_decodes_with_opencv_and_pyav_to_expected_count_and_size(tmp_path):
    f = _frames()
    path = encode_mp4(f, tmp_path / "a" / "clip.mp4", fps=5)
    assert probe_mp4(path) == {"codec": "h264", "pix_fmt": "yuv420p", "width": 96, "height": 64, "frames": 6, "fps": 5.0}
    dec = decode_mp4(path)
    assert dec.shape == f.shape and np.abs(dec.astype(int) - f).mean() < 4
    cap, n = cv2.VideoCapture(str(path)), 0
    while True:
        ok, img = cap.read()
        if not ok:
            break
        assert img.shape == (64, 96, 3)
        n += 1
    assert n == 6
    assert [p.name for p in path.parent.iterdir()] == ["clip.mp4"]  # no temp file left


def test_mp4_bytes_are_deterministic(tmp_path):
    f = _frames(seed=4)
    a, b = encode_mp4(f, tmp_path / "a.mp4", 8), encode_mp4(f, tmp_path / "b.mp4", 8)
    assert a.read_bytes() == b.read_bytes()
    c = encode_mp4(apply_aug(f, "hflip"), tmp_path / "c.mp4", 8)
    assert c.read_bytes() != a.read_bytes()


def test_bad_frames_are_clear_errors(tmp_path):
    with pytest.raises(ConfigError, match="even"):
        encode_mp4(np.zeros((2, 63, 64, 3), np.uint8), tmp_path / "x.mp4", 8)
    with pytest.raises(ConfigError, match="uint8"):
        encode_mp4(np.zeros((2, 64, 64, 3), np.float32), tmp_path / "x.mp4", 8)
    with pytest.raises(ConfigError, match="variant"):
        apply_aug(_frames(), "vflip")


def test_bad_videos_config_names_the_field():
    with pytest.raises(ConfigError, match="missing field 'n'"):
        videos.plan({"env": "city"})
    with pytest.raises(ConfigError, match="unknown field"):
        videos.plan({"env": "city", "n": 2, "frames": 3})
    with pytest.raises(ConfigError, match="image_size"):
        videos.plan({"env": "city", "n": 2, "image_size": 225})
    with pytest.raises(ConfigError, match="motion.fps"):
        videos.plan({"env": "city", "n": 2, "motion": {"fps": -1}})
    assert videos.plan(CONFIG).fingerprint != videos.plan({**CONFIG, "seed": 4}).fingerprint


# --- rendering ---------------------------------------------------------------------------------


@pytest.mark.render
@pytest.mark.parametrize(
    "pattern, seed",
    [
        ("cam_translate-obj_translate", 0),
        ("cam_rotate-obj_rotate", 1),
        ("cam_static-obj_translate", 2),
        ("cam_rotate-obj_translate", 3),
        ("cam_orbit-obj_rotate", 4),
        ("cam_zoom-obj_translate", 5),
    ],
)
def test_mirror_test_rendered_mirror_world_equals_hflip_variant(render_client, pattern, seed):
    """Tolerance: >= 99% of lit pixels within 8/255 per channel (measured 99.6-99.99%, the rest
    on the horizon line and silhouette edges) and >= 99.9% identical object_mask pixels.
    The unflipped frames fail the same check (measured 71-83%), so the test can fail."""
    ctx = videos.load_context(videos.VideoConfig.from_dict(CONFIG))
    clip, m_clip, std, mir = mirror_pair(render_client, ctx, pattern, seed)
    flipped = apply_aug(std["lit"], "hflip").astype(int)
    close = (np.abs(flipped - mir["lit"]).max(-1) <= 8).mean()
    assert close >= 0.99, close
    assert (np.abs(std["lit"].astype(int) - mir["lit"]).max(-1) <= 8).mean() < 0.95
    mask_same = (apply_aug(std["object_mask"], "hflip") == mir["object_mask"]).all(-1).mean()
    assert mask_same >= 0.999, mask_same
    for kind in ("obj", "cam", "dist", "dir"):  # and the mirrored motion answers as hflip's GT
        ans = dsi.variant_answers(clip, kind)
        if dsi.consistent(ans):
            assert {a: dsi.variant_answers(m_clip, kind)[a] for a in ("std",)}["std"] == ans["hflip"]


def _sha(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def dataset(server, tmp_path_factory):
    out = tmp_path_factory.mktemp("dsi")
    res = videos.run(CONFIG, Shard(0, (0, 1, 2, 3)), out, server=server.address)
    assert res.done == [0, 1, 2, 3] and not res.failed
    stats = videos.finalize(CONFIG, out)
    return out, res, stats


@pytest.mark.render
def test_dataset_layout_and_csvs(dataset):
    out, _, stats = dataset
    assert stats["clips"] == 4 and len(stats["patterns"]) == 4
    frames = {}
    for aug in dsi.AUGS:
        df = pd.read_csv(out / "metadata" / f"{aug}.csv")
        assert list(df.columns) == ["relative_path", "question", "options", "GT", "cate"]
        frames[aug] = df
        for rel in df["relative_path"].unique():
            p = out / "videos" / aug / rel
            assert probe_mp4(p) == {"codec": "h264", "pix_fmt": "yuv420p", "width": 224, "height": 224, "frames": 8, "fps": 4.0}
            cap = cv2.VideoCapture(str(p))
            assert int(cap.get(cv2.CAP_PROP_FRAME_COUNT)) == 8 and int(cap.get(cv2.CAP_PROP_FRAME_WIDTH)) == 224
            cap.release()
    std = frames["std"]
    for aug in dsi.AUGS:  # row i is the same question of the same clip in every variant
        assert frames[aug][["relative_path", "question", "options", "cate"]].equals(
            std[["relative_path", "question", "options", "cate"]]
        )
    assert set(std["GT"]) <= set("ABCD") and set(std["cate"]) <= set(range(6))


@pytest.mark.render
def test_direction_labels_agree_with_the_rendered_masks(dataset):
    """Labels come from trajectories; the per-frame mask bboxes must move the way they say."""
    out, _, _ = dataset
    df = pd.read_parquet(out / "clips.parquet")
    checked = 0
    for _, r in df.iterrows():
        boxes = np.stack(r["bbox"]).astype(float)
        shift = (boxes[-1, 0] + boxes[-1, 2] - boxes[0, 0] - boxes[0, 2]) / 2
        for q in json.loads(r["questions"]):
            for aug, ans in q["answers"].items():
                s = {"hflip": -shift, "reverse": -shift, "reverse_hflip": shift}.get(aug, shift)
                if ans in ("dir_left", "dir_right"):
                    assert (s < -2) if ans == "dir_left" else (s > 2), (r["pattern"], aug, ans, s)
                    checked += 1
    assert checked >= 8


@pytest.mark.render
def test_dataset_card_credits_every_asset_used(dataset):
    out, _, stats = dataset
    card = json.loads((out / videos.CARD_FILE).read_text())
    assert card["stats"] == stats and card["fingerprint"] == videos.plan(CONFIG).fingerprint
    assert card["licenses"] and card["attributions"] and isinstance(card["share_alike"], bool)
    assert card["label_transforms"]["hflip"]["obj_left"] == "obj_right"
    assert not list(out.rglob(".*.tmp*"))
    assert all(x["license"] and x["attribution"] for x in card["textures_and_hdris"])  # ground texture credited


@pytest.mark.render
def test_variant_videos_are_transforms_of_the_std_video(dataset):
    out, _, _ = dataset
    rel = "city/000001.mp4"
    std = decode_mp4(out / "videos" / "std" / rel).astype(int)
    for aug in ("hflip", "reverse", "reverse_hflip"):
        var = decode_mp4(out / "videos" / aug / rel).astype(int)
        assert np.abs(var - apply_aug(std, aug)).mean() < 2.0  # same content, own compression
        assert np.abs(var - std).mean() > np.abs(var - apply_aug(std, aug)).mean()


@pytest.mark.render
def test_parquet_has_trajectories_intrinsics_and_visible_frames(dataset):
    out, _, _ = dataset
    df = pd.read_parquet(out / "clips.parquet")
    assert df["index"].tolist() == [0, 1, 2, 3]
    for _, r in df.iterrows():
        assert len(r["camera_location"]) == 8 and len(r["subject_yaw"]) == 8
        assert r["hfov_deg"] == pytest.approx(53.13) and r["focal_px"] > 0
        ratios = np.asarray(r["visible_px"]) / np.asarray(r["unoccluded_px"])
        assert (ratios >= 0.8).all()
        boxes = np.stack(r["bbox"])
        assert (np.maximum(boxes[:, 2] - boxes[:, 0], boxes[:, 3] - boxes[:, 1]) + 1 >= 12).all()


@pytest.mark.render
def test_same_config_same_bytes_and_resume_skips_complete_clips(dataset, server, tmp_path):
    out, _, _ = dataset
    # a different sharding of the same job: clips 2,3 first, then 0,1
    videos.run(CONFIG, Shard(1, (2, 3)), tmp_path, server=server.address)
    (tmp_path / "records" / "000003.json").unlink()  # as if killed before clip 3 finished
    res = videos.run(CONFIG, Shard(0, (0, 1, 2, 3)), tmp_path, server=server.address)
    assert res.skipped == [2] and res.done == [0, 1, 3]
    videos.finalize(CONFIG, tmp_path)
    assert _sha(tmp_path) == _sha(out)


@pytest.mark.render
def test_cli_oracle_eval_and_clear_errors(dataset, tmp_path):
    out, _, _ = dataset
    for aug in dsi.AUGS:
        gt = pd.read_csv(out / "metadata" / f"{aug}.csv")["GT"]
        (tmp_path / aug).mkdir()
        pd.DataFrame({"final_answer": gt}).to_csv(tmp_path / aug / "oracle.csv", index=False)
    cmd = [sys.executable, "-m", "sceneforge.cli"]
    r = subprocess.run(
        [*cmd, "dsi-eval", "--meta", str(out / "metadata"), "--pred", str(tmp_path)], capture_output=True, text=True
    )
    assert r.returncode == 0 and r.stdout.count("Overall Acc = 100.00%") == 2, r.stdout + r.stderr
    pd.DataFrame({"final_answer": ["A"]}).to_csv(tmp_path / "hflip" / "oracle.csv", index=False)
    r = subprocess.run(
        [*cmd, "dsi-eval", "--meta", str(out / "metadata"), "--pred", str(tmp_path)], capture_output=True, text=True
    )
    assert r.returncode == 2 and "length mismatch in hflip" in r.stderr and len(r.stderr.strip().splitlines()) == 1
    r = subprocess.run([*cmd, "videos", "--env", "city", "--out", str(tmp_path / "v")], capture_output=True, text=True)
    assert r.returncode == 2 and "--n is required" in r.stderr and not (tmp_path / "v").exists()


def test_env_name_that_escapes_the_output_dir_is_refused(tmp_path):
    from sceneforge.core.errors import SceneforgeError
    from sceneforge.scenarios.world.environments import env_path

    text = env_path("city").read_text().replace("name: city", "name: ../evil")
    (tmp_path / "evil.yaml").write_text(text)
    with pytest.raises(SceneforgeError, match="environment name|plain name"):
        videos.load_context(videos.VideoConfig.from_dict({"env": str(tmp_path / "evil.yaml"), "n": 1}))


def test_default_subjects_are_movable_targets_of_the_env():
    ctx = videos.load_context(videos.VideoConfig.from_dict({"env": "forest", "n": 1}))
    classes = {ctx.lib.info(i).cls for i in ctx.subject_ids}
    assert classes == {"bear", "fox"}  # forest targets: rock (not movable), bear, fox


def test_unknown_env_and_subjects_fail_at_plan_time():
    with pytest.raises(ConfigError, match="nowhere"):
        videos.plan({"env": "nowhere", "n": 2})
    with pytest.raises(ConfigError, match=r"subjects \['unicorn'\]"):
        videos.plan({"env": "city", "n": 2, "subjects": ["unicorn"]})


@pytest.mark.render
def test_cli_videos_inline_run_and_refuses_a_different_config_in_the_same_dir(tmp_path):
    cmd = [
        sys.executable,
        "-m",
        "sceneforge.cli",
        "videos",
        "--env",
        "desert",
        "--n",
        "2",
        "--out",
        str(tmp_path),
        "--inline",
        "--frames",
        "6",
        "--fps",
        "3",
        "--size",
        "128",
    ]
    r = subprocess.run(cmd, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip().splitlines()[-1] == f"videos: wrote 2 clips (4 variants each) to {tmp_path}"  # issue 47
    assert json.loads(subprocess.run([*cmd, "--json"], capture_output=True, text=True).stdout)["clips"] == 2
    assert probe_mp4(tmp_path / "videos" / "reverse" / "desert" / "000001.mp4")["width"] == 128
    r = subprocess.run([*cmd, "--seed", "5"], capture_output=True, text=True)
    assert r.returncode == 2 and "different config" in r.stderr


def test_question_kinds_are_configurable_and_validated():
    with pytest.raises(ConfigError, match="questions must be"):
        videos.plan({**CONFIG, "questions": ["obj", "colour"]})
    clip = mo.build_clip(
        mo.sample_spec(
            np.random.default_rng(0), mo.MotionConfig(), "cam_rotate-obj_translate", (0.0, 0.0), (400.0, 200.0, 150.0)
        ),
        lambda x, y: np.zeros_like(x),
    )
    qs, _ = dsi.make_questions(clip, "taxi", np.random.default_rng(0), kinds=("cam",))
    assert [q.cate for q in qs] == [3]


@pytest.mark.slow
@pytest.mark.render
def test_farm_with_two_workers_writes_the_same_bytes_as_one_inline_shard(dataset, tmp_path):
    from sceneforge.renderfarm.job import run_job

    out, _, _ = dataset
    summary = run_job("scenarios.videos", CONFIG, tmp_path, workers=2, progress=False)
    assert summary["finalized"]
    farm = {k: v for k, v in _sha(tmp_path).items() if not k.startswith(".farm")}
    assert farm == _sha(out)
