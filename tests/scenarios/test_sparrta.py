"""SpaRRTa datasets end to end on the embedded server: labels, masks, visibility, balance,
determinism, resume; plus the config/unit logic and the pure scene sampler."""

import json
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from PIL import Image

from sceneforge.core.errors import ConfigError, PlacementError
from sceneforge.scenarios.contract import Shard
from sceneforge.scenarios.sparrta import scenario as sparrta
from sceneforge.scenarios.world.environments import list_envs, load_env
from sceneforge.scenarios.sampling.relations import LABELS, relation
from sceneforge.scenarios.sampling.rejection import sample_rng
from sceneforge.scenarios.sparrta.config import locate, parse_config, resolve_units
from sceneforge.renderfarm.manifest import claim_output
from sparrta_helpers import generate, mask_of as _mask_of, tree_hashes
from sceneforge.scenarios.sampling.shapes import ShapeCache
from sceneforge.scenarios.sparrta.scene import build_group, sample_view

CFG = {"envs": ["desert"], "tasks": ["ego", "allo"], "n": 20, "seed": 7, "masks": True, "depth": True}


def claim(config: dict, out: Path) -> None:
    """What the runner does before handing shards to workers."""
    out.mkdir(parents=True, exist_ok=True)
    claim_output(out, "scenarios.sparrta", sparrta.plan(config))


@pytest.fixture(scope="module")
def dataset(server, tmp_path_factory):
    out = tmp_path_factory.mktemp("sparrta") / "ds"
    summary = generate(CFG, out, server=server.address, progress=False)
    return out, summary, pd.read_parquet(out / "samples.parquet")


# --- config and units (pure) ------------------------------------------------------------------------
def test_units_split_n_over_triples_and_rotate_labels():
    units = resolve_units(parse_config({"envs": ["desert"], "tasks": ["ego", "allo"], "n": 10}), load_env, list_envs)
    assert [(u.task, u.triple_id, u.n) for u in units][:3] == [
        ("ego", "rock_truck", 4),
        ("ego", "cactus_camel", 3),
        ("ego", "barrel_camel", 3),
    ]
    ego = [u.label(i) for u in units if u.task == "ego" for i in range(u.n)]
    assert ego == [LABELS[k % 4] for k in range(10)]  # balanced ±1 over the group
    assert locate(units, 4) == (units[1], 0) and locate(units, 19) == (units[-1], 2)
    with pytest.raises(ConfigError, match="outside"):
        locate(units, 20)


@pytest.mark.parametrize(
    "raw,match",
    [
        ({"tasks": ["ego", "sideways"]}, "tasks"),
        ({"n": 0}, "n"),
        ({"size": 8}, "size"),
        ({"min_bbox_px": 300}, "larger than the image"),
        ({"margin_ego_deg": 45}, "margin_ego_deg"),
        ({"colour": 1}, "unknown field"),
        ({"image_format": "gif"}, "image_format"),
        ({"seed": -1}, "seed"),
        ({"licenses": []}, "licenses"),
    ],
)
def test_bad_config_is_one_clear_error(raw, match):
    with pytest.raises(ConfigError, match=match):
        parse_config(raw)


@pytest.mark.render
def test_licenses_restrict_the_assets_and_are_recorded(server, tmp_path):
    from sceneforge.scenarios.world.environments import load_env as load

    lib = load("desert", licenses=["cc0"]).library
    assert lib.licenses(lib.active_ids()) and all(x.upper().startswith("CC0") for x in lib.licenses(lib.active_ids()))
    cfg = {"envs": ["desert"], "tasks": ["ego"], "n": 4, "seed": 3, "licenses": ["cc0"]}
    with pytest.raises(ConfigError, match="licences cc0"):  # a shared server serving everything is refused
        generate(cfg, tmp_path / "cc0", server=server.address, progress=False)
    generate(cfg, tmp_path / "cc0", progress=False)  # its own server, started with --licenses cc0
    card = json.loads((tmp_path / "cc0" / "dataset_card.json").read_text())
    assert card["config"]["licenses"] == ["cc0"] and card["fingerprint"] != parse_config({**cfg, "licenses": None}).fingerprint()
    assert card["licenses"] and all(x.upper().startswith("CC0") for x in card["licenses"])


def test_unknown_env_and_triple():
    with pytest.raises(ConfigError, match="unknown environment"):
        sparrta.plan({"envs": ["mars"]})
    with pytest.raises(ConfigError, match="not in environment"):
        sparrta.plan({"envs": ["desert"], "triples": ["rock_truck", "tent_bear"]})
    plan = sparrta.plan({"envs": ["all"], "triples": ["tent_bear"], "n": 5})
    same = sparrta.plan({"envs": ["all"], "triples": ["tent_bear"], "n": 5})
    assert plan.n_samples == 5 and plan.fingerprint == same.fingerprint


@pytest.mark.parametrize("task", ["ego", "allo"])
def test_scene_sampler_meets_geometric_rules(task):
    env = load_env("desert")
    cfg = parse_config({"tasks": [task]})
    st = sparrta.setting_for(cfg, env, task)
    shapes = ShapeCache(env.library)
    human = shapes.pick(np.random.default_rng(0), "human")
    made = Counter()
    for g in range(4):
        group = build_group(
            sample_rng(1, "desert", task, "rock_truck", g, 1), ("k", g), "rock", "truck", shapes, st, env.ground, env.clutter
        )
        assert not group.source.polygon().intersects(group.target.polygon())
        assert np.hypot(group.source.x - group.target.x, group.source.y - group.target.y) <= st.max_pair_dist_cm
        for want in LABELS:
            try:  # an allo placement may make a label impossible: the session then draws a fresh scene
                view = sample_view(sample_rng(1, "desert", task, "t", g), group, task, want, st, env.ground, human, Counter())
            except PlacementError as e:
                assert task == "allo" and e.rule in ("proposal", "label", "ambiguity", "overlap", "distance")
                continue
            made[want] += 1
            observer = view.camera.location if task == "ego" else view.human.location
            assert relation(observer, group.source.location, group.target.location, st.margin_deg) == want
            objs = [group.source, group.target] + ([view.human] if view.human else [])
            uv, depth = view.camera.project(np.vstack([o.corners() for o in objs]))
            assert (depth > 0).all() and (uv >= 0).all() and (uv <= 224).all()
    assert set(made) == set(LABELS) and (task == "allo" or min(made.values()) == 4)


# --- end to end ------------------------------------------------------------------------------------
@pytest.mark.render
def test_labels_equal_the_rule_on_stored_poses(dataset):
    out, _, df = dataset
    assert len(df) == 40
    for _, r in df.iterrows():
        obs = (r.camera_x, r.camera_y) if r.task == "ego" else (r.human_x, r.human_y)
        assert relation(obs, (r.source_x, r.source_y), (r.target_x, r.target_y), r.margin_deg) == r.label
        p = json.loads((out / r.params_file).read_text())  # SpaRRTa's own form says the same
        a = p["actors"]
        cam = p["camera"]["location"] if r.task == "ego" else a["/sceneforge/actors/human"]["location"]
        src, tgt = a["/sceneforge/actors/source"]["location"], a["/sceneforge/actors/target"]["location"]
        assert relation((cam["x"], cam["y"]), (src["x"], src["y"]), (tgt["x"], tgt["y"]), p["margin_deg"]) == p["label"]
    assert set(df.margin_deg[df.task == "ego"]) == {15.0} and set(df.margin_deg[df.task == "allo"]) == {10.0}


@pytest.mark.render
def test_ego_labels_match_mask_centroids_and_depth(dataset):
    out, _, df = dataset
    for _, r in df[df.task == "ego"].iterrows():
        src, tgt = _mask_of(out, r, "source"), _mask_of(out, r, "target")
        du = np.nonzero(tgt)[1].mean() - np.nonzero(src)[1].mean()
        depth = np.load(out / r.depth_file)
        dz = np.median(depth[tgt]) - np.median(depth[src])
        expect = {"right": du > 0, "left": du < 0, "front": dz > 0, "back": dz < 0}[r.label]
        assert expect, (r.index, r.label, du, dz)


@pytest.mark.render
def test_allo_labels_match_the_figures_own_view(dataset):
    """Independent of relations.py: a camera at the figure's eye looking at the source (the
    engine's UE projection) sees the target right of the source for "right", farther for "front"."""
    from sceneforge.engine.world import Camera, look_at_rotation

    _, _, df = dataset
    for _, r in df[df.task == "allo"].iterrows():
        eye, src, tgt = (r.human_x, r.human_y, 160.0), (r.source_x, r.source_y, 160.0), (r.target_x, r.target_y, 160.0)
        cam = Camera(eye, look_at_rotation(eye, src), 170.0, 1000, 1000)
        d = cam.to_camera(np.array([src, tgt]))  # (forward, right, up) in the figure's frame
        right, ahead = d[1, 1] - d[0, 1], d[1, 0] - d[0, 0]
        expect = {"right": right > 0, "left": right < 0, "front": ahead > 0, "back": ahead < 0}[r.label]
        assert expect, (r.index, r.label, right, ahead)


@pytest.mark.render
def test_visibility_thresholds_hold_on_stored_masks(dataset):
    out, _, df = dataset
    for _, r in df.iterrows():
        for name in ("source", "target") + (("human",) if r.task == "allo" else ()):
            sel = _mask_of(out, r, name)
            ys, xs = np.nonzero(sel)
            assert abs(sel.sum() - r[f"{name}_visible"]) <= max(2, 0.005 * sel.sum())  # same view, other pass
            assert r[f"{name}_visible_ratio"] >= 0.8
            assert max(xs.max() - xs.min(), ys.max() - ys.min()) + 1 >= 12
            assert abs(xs.min() - r[f"{name}_bbox_x0"]) <= 1 and abs(ys.max() - r[f"{name}_bbox_y1"]) <= 1


@pytest.mark.render
def test_params_clutter_colours_are_the_masks_own(dataset):
    """Every instance colour in a mask is one the params record (labelled objects in
    ``mask_colors``, background objects in ``clutter[].color``), and no two records share one:
    the clutter colours were once one spawn index off, so clutter_0 went unrecorded and the last
    clutter entry held the human's colour (issue 33, item 5)."""
    out, _, df = dataset
    seen_clutter = 0
    for _, r in df.iterrows():
        params = json.loads((out / r.params_file).read_text())
        labelled = {n: tuple(c) for n, c in params["mask_colors"].items()}
        clutter = {c["name"]: tuple(c["color"]) for c in params["clutter"]}
        recorded = list(labelled.values()) + list(clutter.values())
        assert len(set(recorded)) == len(recorded), (r.params_file, labelled, clutter)
        mask = np.asarray(Image.open(out / r.mask_file))[..., :3].reshape(-1, 3)
        drawn = {tuple(int(v) for v in c) for c in np.unique(mask, axis=0)} - {(0, 0, 0)}
        assert drawn <= set(recorded), (r.params_file, drawn - set(recorded))
        seen_clutter += len(drawn & set(clutter.values()))
    assert seen_clutter > 0  # the desert's clutter is in view somewhere: the check bit


@pytest.mark.render
def test_balance_splits_and_card(dataset):
    out, summary, df = dataset
    for (env, task), g in df.groupby(["env", "task"]):
        counts = g.label.value_counts()
        assert set(counts.index) == set(LABELS) and counts.max() - counts.min() <= 1
        for split, s in g.groupby("split"):
            c = [int((s.label == lab).sum()) for lab in LABELS]
            assert max(c) - min(c) <= 1, (task, split, c)
        # a scene (same triple, unit_index // samples_per_scene) is never split apart
        assert g.groupby([g.triple_id, g.unit_index // 4]).split.nunique().max() == 1
    # per task 3 triples of 7/7/6 samples = scenes of 4,3 | 4,3 | 4,2 samples, in that order ->
    # train, train, val, test, train, train
    assert df.split.value_counts().to_dict() == {"train": 26, "val": 8, "test": 6}
    card = json.loads((out / "dataset_card.json").read_text())
    assert card["stats"]["samples"] == 40 and card["config"]["seed"] == 7
    assert card["stats"]["rejections"] == summary["finalize"]["rejections"] and card["attributions"]
    rej = card["stats"]["rejections"]
    assert "proposal" in rej and rej.get("label", 0) + rej.get("ambiguity", 0) <= 0.01 * sum(rej.values()), rej
    img = Image.open(out / df.file_name.iloc[0])
    assert img.size == (224, 224) and img.format == "JPEG"
    p = json.loads((out / df.params_file.iloc[0]).read_text())
    assert {"environment", "triple_id", "camera", "actors", "task", "label", "source_label", "target_label", "margin_deg"} <= set(
        p
    ) and set(p["camera"]) == {"label", "location", "rotation", "intrinsics"}


@pytest.mark.render
def test_loads_with_hf_datasets(dataset, tmp_path):
    from datasets import load_dataset

    out, _, df = dataset
    ds = load_dataset("imagefolder", data_dir=str(out), split="train", cache_dir=str(tmp_path))
    assert len(ds) == 40 and ds[5]["label"] == df.label.iloc[5] and ds[5]["image"].size == (224, 224)


@pytest.mark.render
def test_deterministic_with_a_fresh_server(dataset, tmp_path):
    out, _, _ = dataset
    generate(CFG, tmp_path / "again", progress=False)  # starts its own server
    assert tree_hashes(tmp_path / "again") == tree_hashes(out)


@pytest.mark.render
def test_resume_after_interrupted_shards(dataset, server, tmp_path):
    out, _, df = dataset
    part = tmp_path / "part"
    claim(CFG, part)
    sparrta.run(CFG, Shard(1, tuple(range(21, 40, 2))), part, server=server.address)  # a worker, then killed
    with pytest.raises(ConfigError, match="missing"):
        sparrta.finalize(CFG, part)
    (part / df.file_name.iloc[23]).unlink()  # a file lost after its record: redo it
    res = sparrta.run(CFG, Shard(0, tuple(range(40))), part, server=server.address)
    assert len(res.skipped) == 9 and 23 in res.done and len(res.done) == 31
    sparrta.finalize(CFG, part)
    assert tree_hashes(part) == tree_hashes(out)


@pytest.mark.render
def test_other_config_in_same_out_is_refused(dataset):
    out, _, _ = dataset
    before = tree_hashes(out)
    with pytest.raises(ConfigError, match="different config"):
        generate({**CFG, "seed": 8}, out, progress=False)
    assert tree_hashes(out) == before


@pytest.mark.render
def test_impossible_constraint_names_the_rule(server, tmp_path):
    cfg = {"n": 1, "min_bbox_px": 224, "max_scenes": 1, "max_render_tries": 3, "clutter": False}
    # the camera is only drawn where the objects could reach 224 px, i.e. so close that they no
    # longer fit the frame: the error names the geometric rule that binds, before any render
    with pytest.raises(PlacementError, match="rule '(too_far|small_projection|in_frame)' rejected most") as e:
        generate(cfg, tmp_path / "x", server=server.address, progress=False)
    assert sum(e.value.rejections.get(k, 0) for k in ("too_far", "small_projection", "in_frame")) >= 100
    assert not list((tmp_path / "x").glob("desert/**/img_*"))


# --- the CLI -------------------------------------------------------------------------------------------
@pytest.mark.render
def test_cli_generate_preview_and_bad_input(server, tmp_path, capsys):
    from sceneforge.cli import main

    out = tmp_path / "cli"
    (out / "desert/ego/rock_truck").mkdir(parents=True)
    (out / "desert/ego/rock_truck/.img_0000.jpg.tmp999").write_bytes(b"half")  # a killed worker's leftover
    argv = [
        "generate",
        "--env",
        "desert",
        "--task",
        "ego",
        "--n",
        "4",
        "--out",
        str(out),
        "--seed",
        "3",
        "--size",
        "96",
        "--format",
        "png",
        "--server",
        server.address,
        "--quiet",
    ]
    assert main(argv) == 0
    assert "labelled images/s" in capsys.readouterr().out
    df = pd.read_parquet(out / "samples.parquet")
    assert len(df) == 4 and Image.open(out / df.file_name.iloc[0]).size == (96, 96)
    assert not list(out.rglob(".*.tmp*"))
    assert main(["preview", str(out), "--n", "4", "--out", str(tmp_path / "sheet.png")]) == 0
    assert Image.open(tmp_path / "sheet.png").size[0] == 2 * 224
    before = tree_hashes(out)
    for bad, msg in [
        (["--env", "mars"], "unknown environment"),
        (["--triples", "tent_bear"], "triples"),
        (["--min-bbox-px", "500"], "min_bbox_px"),
        (["--seed", "4"], "different config"),
        (["--server", "127.0.0.1:1"], "cannot connect"),
    ]:
        assert main(argv + bad) == 2
        err = capsys.readouterr().err.strip()
        assert msg in err and len(err.splitlines()) == 1, err
    assert tree_hashes(out) == before
    assert main(["preview", str(tmp_path), "--out", str(tmp_path / "x.png")]) == 2
    (tmp_path / "bad.yaml").write_text("nn: 3\n")
    capsys.readouterr()
    assert main(["generate", "--config", str(tmp_path / "bad.yaml"), "--out", str(tmp_path / "y")]) == 2
    assert "bad.yaml: unknown field(s) nn" in capsys.readouterr().err and not (tmp_path / "y").exists()


@pytest.mark.render
def test_demo_makes_a_labelled_set_and_a_sheet(tmp_path, capsys):
    from sceneforge.cli import main

    assert main(["demo", "--out", str(tmp_path / "demo"), "--n", "4", "--quiet"]) == 0
    text = capsys.readouterr().out
    assert "contact sheet" in text and str(tmp_path / "demo") in text
    df = pd.read_parquet(tmp_path / "demo" / "samples.parquet")
    assert sorted(Counter(zip(df.task, df.label)).values()) == [1] * 8  # 4 ego + 4 allo, one per label
    assert Image.open(tmp_path / "demo" / "contact_sheet.png").size[0] == 3 * 224
    card = json.loads((tmp_path / "demo" / "dataset_card.json").read_text())
    looks = card["textures_and_hdris"]  # every texture/HDRI the env shows, with its licence
    assert "sand" in {x["id"] for x in looks} and all(x["license"] in card["licenses"] for x in looks)
    assert main(["demo", "--out", str(tmp_path / "demo"), "--n", "4", "--quiet"]) == 0  # rerun: resumes


@pytest.mark.slow
@pytest.mark.render
def test_scale_two_workers_all_rules(tmp_path):
    """400 samples, 2 envs x 2 tasks, through the render farm: complete, balanced, labels = rule."""
    from sceneforge.renderfarm import run_job

    cfg = {"envs": ["desert", "city"], "tasks": ["ego", "allo"], "n": 100, "seed": 11}
    summary = run_job("scenarios.sparrta", cfg, tmp_path / "big", workers=2, progress=False)
    assert summary["complete"] == 400 and summary["finalized"]
    df = pd.read_parquet(tmp_path / "big" / "samples.parquet")
    for (_, _, split), g in df.groupby(["env", "task", "split"]):
        c = [int((g.label == lab).sum()) for lab in LABELS]
        assert max(c) - min(c) <= 3  # scenes hold one sample per label; partial last scenes differ
    for _, r in df.iterrows():
        obs = (r.camera_x, r.camera_y) if r.task == "ego" else (r.human_x, r.human_y)
        assert relation(obs, (r.source_x, r.source_y), (r.target_x, r.target_y), r.margin_deg) == r.label


def test_preview_picks_every_label_of_every_task():
    from sceneforge.scenarios.sparrta.preview import pick_rows

    df = pd.DataFrame(
        {
            "index": range(32),
            "env": "desert",
            "task": ["ego"] * 16 + ["allo"] * 16,
            "label": [LABELS[i % 4] for i in range(32)],
            "split": "train",
        }
    )
    rows = pick_rows(df, 8)
    assert Counter(zip(rows.task, rows.label)) == Counter({(t, lab): 1 for t in ("ego", "allo") for lab in LABELS})
    assert list(rows["index"]) == sorted(rows["index"])
    with pytest.raises(ConfigError, match="no samples"):
        pick_rows(df, 4, split="test")


def test_each_sample_records_its_drawn_look(dataset):
    """Issue 14 item 5: the look is drawn per sample from its own seed stream, recorded in the params
    and reproducible from (seed, env, task, triple, index) alone."""
    from sceneforge.scenarios.world.environments import load_env
    from sceneforge.scenarios.world.look import LOOK_STREAM, draw_look
    from sceneforge.scenarios.sampling.rejection import sample_rng

    out, _, df = dataset
    env = load_env("desert")
    rnd = env.spec.randomize
    worlds = []
    for _, row in df.head(6).iterrows():
        p = json.loads((out / row.params_file).read_text())
        w = p["world"]
        again = draw_look(env, sample_rng(7, "desert", row.task, row.triple_id, int(p["index"]), stream=LOOK_STREAM))
        assert json.loads(json.dumps(again)) == w
        assert rnd.sun_pitch[0] <= w["sun"]["pitch"] <= rnd.sun_pitch[1] and w["sky"]["hdri"] in rnd.hdri
        assert rnd.exposure_ev[0] <= w["look"]["exposure_ev"] <= rnd.exposure_ev[1]
        worlds.append(w)
    assert len({json.dumps(w, sort_keys=True) for w in worlds}) == len(worlds)  # a new look per sample
