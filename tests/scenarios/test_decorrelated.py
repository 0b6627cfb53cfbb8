"""``camera_policy: decorrelated``, the default since 0.6.0 (issue 46): no single object's box
says the label, ego margins in both frames (camera→source line and camera heading) audited from
the written records, readable allo (every labelled object >= 16 px, facing recorded), the dataset
card's layout baselines and margins; and ``--camera-policy jitter`` unchanged, byte for byte."""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from sceneforge.core.errors import PlacementError
from sceneforge.scenarios.sampling.rejection import sample_rng
from sceneforge.scenarios.sampling.relations import LABELS, heading_relation, relation
from sceneforge.scenarios.sparrta import camera_policy
from sceneforge.scenarios.sparrta.config import Unit, parse_config
from sceneforge.scenarios.sparrta.scene import ShapeCache, build_group, sample_view
from sceneforge.scenarios.sparrta.setting import attempt_setting, sample_setting, setting_for
from sceneforge.scenarios.world.environments import load_env
from sparrta_helpers import generate

CFG = {"envs": ["desert"], "tasks": ["ego", "allo"], "n": 16, "seed": 5, "masks": True}  # the default policy


@pytest.fixture(scope="module")
def dataset(server, tmp_path_factory):
    out = tmp_path_factory.mktemp("decorrelated") / "ds"
    generate(CFG, out, server=server.address)
    return out, pd.read_parquet(out / "samples.parquet")


def _params(out: Path, row) -> dict:
    return json.loads((out / row.params_file).read_text())


@pytest.mark.render
def test_audit_no_ego_sample_inside_the_heading_band(dataset):
    """The audit of issue 46's goal: from each sample's written params (camera yaw, the source's
    and target's locations) the relation read along the camera's heading is the label, outside
    the margin band; and so is SpaRRTa's own (camera→source line)."""
    out, table = dataset
    ego = table[table.task == "ego"]
    assert len(ego) == 16
    inside = []
    for row in ego.itertuples():
        p = _params(out, row)
        yaw = p["camera"]["rotation"]["yaw"]
        src, tgt = (p["actors"][f"/sceneforge/actors/{n}"]["location"] for n in ("source", "target"))
        s, t = (src["x"], src["y"]), (tgt["x"], tgt["y"])
        cam = (p["camera"]["location"]["x"], p["camera"]["location"]["y"])
        margin = p["margin_heading_deg"]
        assert margin == p["margin_deg"] == 15.0
        if heading_relation(yaw, s, t, margin) != row.label:
            inside.append((row.file_name, p["heading_angle_deg"]))
        assert relation(cam, s, t, p["margin_deg"]) == row.label
    assert inside == []


@pytest.mark.render
def test_allo_objects_are_readable_and_the_figure_facing_is_recorded(dataset):
    out, table = dataset
    allo = table[table.task == "allo"]
    assert len(allo) == 16
    for obj in ("source", "target", "human"):
        w = allo[f"{obj}_bbox_x1"] - allo[f"{obj}_bbox_x0"] + 1
        h = allo[f"{obj}_bbox_y1"] - allo[f"{obj}_bbox_y0"] + 1
        assert (np.maximum(w, h) >= camera_policy.ALLO_MIN_BOX_PX).all(), obj
    for row in allo.itertuples():
        p = _params(out, row)
        assert p["figure_facing_deg"] == pytest.approx(row.human_yaw)
        to_source = np.degrees(np.arctan2(row.source_y - row.human_y, row.source_x - row.human_x))
        assert (to_source - row.human_yaw - row.figure_facing_to_source_deg) % 360 == pytest.approx(0, abs=1e-6)


@pytest.mark.render
def test_the_card_states_margins_and_layout_baselines(dataset):
    out, table = dataset
    card = json.loads((out / "dataset_card.json").read_text())
    assert card["camera_policy"] == "decorrelated"
    assert card["margins"]["desert/ego"] == {
        "observer_source_line_deg": 15.0,
        "camera_heading_deg": 15.0,
        "perceptual_veto": "image-space bearing",
    }
    assert card["margins"]["desert/allo"]["camera_heading_deg"] is None
    ego, allo = card["layout_baselines"]["desert/ego"], card["layout_baselines"]["desert/allo"]
    assert set(ego) == {"source", "target", "all_boxes"} and ego["all_boxes"]["boxes"] == ["source", "target"]
    assert set(allo) == {"source", "target", "figure", "all_boxes"} and allo["figure"]["boxes"] == ["human"]
    n_test = int(((table.task == "ego") & (table.split == "test")).sum())
    assert n_test > 0 and all(v["n_test"] == n_test and 0.0 <= v["acc"] <= 1.0 for v in ego.values())


# Made by sceneforge 0.5.0 (commit a3891a8, before this policy existed) under the test suite's
# server fixture (its asset cache, the embedded renderer):
# the sha256 of "<path> <sha256>\n" over every params_*.json and records/*.json of the config below.
# Remake it from that commit (tests/scenarios/test_decorrelated.py::_digest) if the renderer's
# pixels change, which changes visibility counts and so the params.
JITTER_CFG = {"envs": ["desert"], "tasks": ["ego"], "n": 8, "seed": 3, "camera_policy": "jitter"}
JITTER_DIGEST_050 = "11b07b711f265aecf04e7f0653afa4004d36f99178337cd9b2ddc61c5bf72199"


def _digest(out: Path) -> str:
    h = hashlib.sha256()
    for p in sorted(out.rglob("*.json")):
        rel = p.relative_to(out)
        if rel.parts[0] == "records" or p.name.startswith("params_"):
            h.update(f"{rel.as_posix()} {hashlib.sha256(p.read_bytes()).hexdigest()}\n".encode())
    return h.hexdigest()


@pytest.mark.render
def test_explicit_jitter_is_byte_identical_to_050(server, tmp_path):
    generate(JITTER_CFG, tmp_path / "j", server=server.address)
    assert _digest(tmp_path / "j") == JITTER_DIGEST_050
    job = json.loads((tmp_path / "j" / "job.json").read_text())
    assert "camera_policy" not in job["config"]  # jitter jobs keep their 0.5.0 fingerprint


# --- the policy's geometry (no render) -------------------------------------------------------------
@pytest.fixture(scope="module")
def desert():
    env = load_env("desert")
    shapes = ShapeCache(env.library)
    return env, shapes, shapes.pick(np.random.default_rng(0), "human")


def _views(desert, policy: str, task: str, groups: int):
    env, shapes, human = desert
    cfg = parse_config({"tasks": [task], "camera_policy": policy})
    base = setting_for(cfg, env, task)
    unit = Unit("desert", task, "cactus_camel", "cactus", "camel", "human", 10**6, 0, 0)
    out = []
    for g in range(groups):
        group = build_group(
            sample_rng(5, "desert", task, "cactus_camel", g, 1),
            ("k", g),
            "cactus",
            "camel",
            shapes,
            base,
            env.ground,
            env.clutter,
        )
        group.viewpoint = human if task == "allo" else None
        rng = np.random.default_rng(g)
        for j, want in enumerate(LABELS):
            st = sample_setting(cfg, base, unit, 4 * g + j)
            try:
                out.append((sample_view(rng, group, task, want, st, env.ground, human, Counter()), group, want, st))
            except PlacementError:
                continue
    return out


def test_the_anchor_point_is_drawn_without_the_label():
    """Four samples of one scene (one of each label) differ in their screen points only through
    their own seed streams: the point is a function of (seed, unit, index), never of the label."""
    env = load_env("desert")
    cfg = parse_config({"tasks": ["ego"]})
    base = setting_for(cfg, env, "ego")
    assert base.heading_margin and base.anchor == "pair"
    a = Unit("desert", "ego", "rock_truck", "rock", "truck", "human", 100, 0, 0)
    b = Unit("desert", "ego", "rock_truck", "rock", "truck", "human", 100, 0, 1)  # labels shifted by one
    for i in range(12):
        pa, pb = sample_setting(cfg, base, a, i).anchor_screen, sample_setting(cfg, base, b, i).anchor_screen
        assert pa == pb and a.label(i) != b.label(i)
        lo, hi = camera_policy.DECORRELATED_WINDOW
        assert all(lo <= v <= hi for v in pa)
    assert attempt_setting(sample_setting(cfg, base, a, 0), camera_policy.RELAX_AFTER).anchor_screen == (0.5, 0.5)
    assert setting_for(parse_config({"tasks": ["allo"]}), env, "allo").min_bbox_px == camera_policy.ALLO_MIN_BOX_PX
    assert setting_for(parse_config({"tasks": ["allo"], "camera_policy": "jitter"}), env, "allo").min_bbox_px == 12.0


@pytest.mark.parametrize("task", ["ego", "allo"])
def test_decorrelated_views_keep_the_label_and_put_the_anchor_where_drawn(desert, task):
    views = _views(desert, "decorrelated", task, groups=4)
    assert len(views) >= 12
    for view, group, want, st in views:
        observer = view.camera.location if task == "ego" else view.human.location
        assert relation(observer, group.source.location, group.target.location, st.margin_deg) == want
        objs = [group.source, group.target] + ([view.human] if task == "allo" else [])
        anchor = np.mean([o.centre() for o in objs], axis=0)  # ego: the pair's midpoint; allo: all three
        uv, _ = view.camera.project(anchor[None])
        assert np.allclose(uv[0] / st.size, st.anchor_screen, atol=1e-6)
        if task == "ego":
            assert heading_relation(view.camera.rotation.yaw, group.source.location, group.target.location, st.margin_deg) == want
