"""Issue 13 item 12: labels a viewer would not dispute, and one hard sample must not kill a job.

* The perceptual rule (``scenarios/sampling/consistency.py``) on hand-made masks, then on a real dataset
  with near-top-down cameras (pitch down to about -80 deg, where 2 of 150 audited ego samples had
  a front/back label contradicting the depth order): every written sample agrees with its
  pixels, and the card shows the rule rejected views.
* ``generate --env winter_town --task allo --n 60 --seed 11`` aborted at sample 16 ("no valid
  sample in 6 placements"): that sample now succeeds from its own seed stream.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from PIL import Image

from sceneforge.scenarios.contract import Shard
from sceneforge.scenarios.sampling.consistency import ego_label_disagrees


def _scene(src_cols, tgt_cols, src_depth, tgt_depth):
    mask = np.zeros((8, 16, 3), np.uint8)
    depth = np.full((8, 16), np.inf, np.float32)
    mask[2:5, src_cols[0] : src_cols[1]] = (10, 20, 30)
    depth[2:5, src_cols[0] : src_cols[1]] = src_depth
    mask[2:5, tgt_cols[0] : tgt_cols[1]] = (40, 50, 60)
    depth[2:5, tgt_cols[0] : tgt_cols[1]] = tgt_depth
    return mask, depth


@pytest.mark.parametrize(
    "label, src, tgt, dz, disagrees",
    [
        ("right", (1, 4), (10, 14), (500, 500), False),
        ("right", (10, 14), (1, 4), (500, 500), True),
        ("left", (10, 14), (1, 4), (500, 500), False),
        ("left", (1, 4), (10, 14), (500, 500), True),
        ("front", (1, 4), (10, 14), (400, 900), False),
        ("front", (1, 4), (10, 14), (900, 400), True),
        ("back", (1, 4), (10, 14), (900, 400), False),
        ("back", (1, 4), (10, 14), (400, 900), True),
        ("front", (1, 4), (20, 20), (400, 900), True),  # target has no pixel: cannot be judged
    ],
)
def test_ego_rule_reads_centroids_and_depth_order(label, src, tgt, dz, disagrees):
    mask, depth = _scene(src, tgt, *dz)
    assert ego_label_disagrees(label, mask, depth, (10, 20, 30), (40, 50, 60)) is disagrees


def _independent_check(out: Path, row) -> bool:
    params = json.loads((out / row.params_file).read_text())
    mask = np.asarray(Image.open(out / row.mask_file))
    depth = np.load(out / row.depth_file)
    src = np.all(mask == params["mask_colors"]["source"], axis=2)
    tgt = np.all(mask == params["mask_colors"]["target"], axis=2)
    du = np.nonzero(tgt)[1].mean() - np.nonzero(src)[1].mean()
    dz = np.median(depth[tgt]) - np.median(depth[src])
    return {"right": du > 0, "left": du < 0, "front": dz > 0, "back": dz < 0}[row.label]


@pytest.mark.render
def test_steep_cameras_give_labels_that_agree_with_the_pixels(server, tmp_path):
    from sparrta_helpers import generate

    envs = tmp_path / "envs"
    envs.mkdir()
    (envs / "steep.yaml").write_text(
        textwrap.dedent("""\
        name: steep
        triples:
          - {id: rock_truck, source: rock, target: truck}
        sampling: {cam_height_range_cm: [1400, 1500], cam_xy_range_cm: 900}
        """)
    )
    out = tmp_path / "ds"
    generate(
        {"envs": [str(envs / "steep.yaml")], "tasks": ["ego"], "n": 8, "seed": 3, "size": 64, "masks": True, "depth": True},
        out,
        server=server.address,
        progress=False,
    )
    df = pd.read_parquet(out / "samples.parquet")
    assert df.camera_pitch.min() < -60
    assert all(_independent_check(out, r) for r in df.itertuples())
    # whether the rule had to reject anything depends on the sampler's draws (it did with the old
    # sampler at this seed, not with the label-conditioned one); the pixel check above is the point
    card = json.loads((out / "dataset_card.json").read_text())
    assert card["stats"]["samples"] == 8


@pytest.mark.render
def test_hard_allo_sample_is_retried_from_its_own_seed_stream(server, tmp_path):
    """Was: 'winter_town/allo/tree_truck sample 16 (label front): no valid sample in 6 placements'."""
    from sceneforge.scenarios.sparrta import scenario

    # Since environments are identified by their content (item 1) the sample streams changed and
    # this sample needs 3 placements, not 7: max_scenes 1 recreates "more than max_scenes needed".
    cfg = {"envs": ["winter_town"], "tasks": ["allo"], "n": 60, "seed": 11, "max_scenes": 1}
    result = scenario.run(cfg, Shard(0, (16,)), tmp_path / "ds", server=server.address)
    assert result.done == [16] and result.failed == {}
    assert result.rejections["scene_unusable"] >= 1  # more than max_scenes placements were needed
    assert scenario.scene_budget(scenario.parse_config(cfg)) == 1 * scenario.HARD_SAMPLE_FACTOR


def test_image_space_bearing_reads_the_pixels_along_the_heading():
    """decorrelated's veto (issue 46): each object's visible pixels lifted by their ray depth, the
    target's position relative to the source's read along the camera's heading."""
    from sceneforge.engine.world import Camera, Rotator
    from sceneforge.scenarios.sampling.consistency import ego_bearing_disagrees, image_positions

    cam = Camera((0.0, 0.0, 300.0), Rotator(-20.0, 30.0, 0.0), 60.0, 64, 64)
    mask = np.zeros((64, 64, 3), np.uint8)
    depth = np.full((64, 64), np.inf, np.float32)
    src, tgt = (10, 20, 30), (40, 50, 60)
    mask[31:33, 31:33] = src  # around the image centre
    depth[31:33, 31:33] = 1000.0
    (x, y), _ = image_positions(mask, depth, (src, src), cam)
    fwd = cam.rotation.matrix()[:, 0]
    assert np.allclose((x, y), np.asarray(cam.location)[:2] + 1000.0 * fwd[:2], atol=20.0)  # ~ along the axis
    mask[31:33, 52:54] = tgt  # to the right of the source, same depth
    depth[31:33, 52:54] = 1000.0
    assert not ego_bearing_disagrees("right", mask, depth, src, tgt, cam)
    assert all(ego_bearing_disagrees(lab, mask, depth, src, tgt, cam) for lab in ("left", "front", "back"))
    mask[31:33, 52:54] = 0
    mask[10:12, 31:33] = tgt  # above the source in the image and much deeper: beyond it
    depth[10:12, 31:33] = 2500.0
    assert not ego_bearing_disagrees("front", mask, depth, src, tgt, cam)
    assert ego_bearing_disagrees("back", mask, depth, src, tgt, cam)
    assert ego_bearing_disagrees("front", mask, depth, src, (1, 2, 3), cam)  # an object without pixels
