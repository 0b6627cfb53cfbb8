"""Attention flow between objects (masks → patch grid → per-layer shares) and report quality:
bootstrap CIs, small-split warnings, layer × head tables, backbone names on plots."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
import torch
from PIL import Image

from sceneforge.probing.attention_flow import SINKS, attention_flow, object_grid
from sceneforge.probing.backbones import create_backbone
from sceneforge.probing.preprocess import Preprocess
from sceneforge.probing.report import layer_head_tables, small_splits, summarize, wilson_ci

COLORS = {"source": [200, 0, 0], "target": [0, 200, 0], "human": [0, 0, 200]}


def _scene(path_img, path_mask, path_params, size=32):
    """Black image/mask with three 8x8 objects at known patches of a 4x4 grid (8 px patches)."""
    mask = np.zeros((size, size, 3), np.uint8)
    mask[0:8, 0:8] = COLORS["source"]  # patch 0
    mask[0:8, 24:32] = COLORS["target"]  # patch 3
    mask[24:32, 8:16] = COLORS["human"]  # patch 13
    mask[16:20, 16:24] = (50, 50, 50)  # clutter, half a patch (10)
    Image.fromarray(mask).save(path_mask)
    Image.fromarray(np.clip(mask.astype(int) + 30, 0, 255).astype(np.uint8)).save(path_img)
    path_params.write_text(json.dumps({"mask_colors": COLORS}))


def test_object_grid_pools_masks_to_patches(tmp_path):
    _scene(tmp_path / "i.png", tmp_path / "m.png", tmp_path / "p.json")
    pre = Preprocess(mean=(0.5,) * 3, std=(0.5,) * 3, interpolation="bilinear", resize_hw=(32, 32))
    lab = object_grid(np.asarray(Image.open(tmp_path / "m.png")), COLORS, pre, (4, 4))
    expected = np.zeros(16, int)
    expected[[0, 3, 13, 10]] = [1, 2, 3, 4]
    assert lab.tolist() == expected.tolist()


def test_attention_flow_shares_sum_to_one_per_layer(tmp_path):
    rows = []
    for i in range(3):
        _scene(tmp_path / f"i{i}.png", tmp_path / f"m{i}.png", tmp_path / f"p{i}.json")
        rows.append(
            {
                "path": str(tmp_path / f"i{i}.png"),
                "mask_path": str(tmp_path / f"m{i}.png"),
                "params_path": str(tmp_path / f"p{i}.json"),
            }
        )
    bb = create_backbone(
        "timm:vit_small_patch16_224",
        weights="random",
        model_kwargs={"img_size": 32, "patch_size": 8, "depth": 3, "embed_dim": 32, "num_heads": 2},
    )
    flow = attention_flow(bb, pd.DataFrame(rows))
    assert flow["layers"] == [1, 2, 3] and flow["sinks"] == list(SINKS) and flow["images"] == 3
    assert flow["patches_per_role"] == {"source": 3, "target": 3, "viewpoint": 3}
    for role, shares in flow["roles"].items():
        s = np.asarray(shares)
        assert s.shape == (3, len(SINKS))
        np.testing.assert_allclose(s.sum(1), 1.0, atol=1e-4)
        assert s[:, SINKS.index(role)].sum() == 0  # "self" is its own column
    # the flow follows the attention: make block 1 attend only to itself (identity) → self share 1
    blk = bb.model.blocks[0].attn
    with torch.no_grad():
        blk.qkv.weight[:64].zero_()  # q = k = bias only → uniform attention over the 17 tokens
        blk.qkv.bias[:64].zero_()
    flat = attention_flow(bb, pd.DataFrame(rows))
    np.testing.assert_allclose(flat["roles"]["source"][0][0], 1 / 17, atol=1e-4)


def test_wilson_ci_is_wide_on_one_image_and_matches_scipy():
    """Issue 33 item 7: with 1 test image the old bootstrap gave [1, 1] ("CI up to 0.00 wide")."""
    from scipy.stats import binomtest

    lo, hi = wilson_ci(1.0, 1)
    assert lo == pytest.approx(0.2065, abs=1e-4) and hi == 1.0
    assert wilson_ci(0.0, 1) == pytest.approx((0.0, 0.7935), abs=1e-4)
    for k, n in ((0, 5), (3, 7), (16, 30), (450, 500)):
        ref = binomtest(k, n).proportion_ci(confidence_level=0.95, method="wilson")
        assert wilson_ci(k / n, n) == pytest.approx((ref.low, ref.high), abs=1e-9)
    widths = [np.subtract(*wilson_ci(0.6, n)[::-1]) for n in (1, 10, 30, 100, 2000)]
    assert widths == sorted(widths, reverse=True) and widths[-1] < 0.05 and widths[0] > 0.5
    assert wilson_ci(0.5, 0) == (0.0, 1.0)


def _one_image_runs(n_test: int = 1) -> pd.DataFrame:
    return pd.DataFrame(
        [
            dict(
                run=".",
                backbone="b",
                layer=1,
                head="linear",
                protocol="within",
                env="desert",
                task="ego",
                selected=True,
                test_acc=acc,
                val_acc=1.0,
                lr=1e-3,
                dropout=0.2,
                n_test=n_test,
            )
            for acc in (1.0, 1.0)
        ]
    )


def test_one_test_image_gives_a_wide_interval_and_says_so_in_one_line():
    s = summarize(_one_image_runs())
    assert s["ci_hi"].iloc[0] - s["ci_lo"].iloc[0] > 0.75  # was [1.000, 1.000]
    (line,) = small_splits(s)
    assert "within desert/ego: only 1 test image:" in line and "0.79 wide ([0.21, 1.00])" in line


def test_small_split_warning_and_layer_head_tables():
    summary = pd.DataFrame(
        [
            dict(
                backbone=bb,
                layer=layer,
                head=h,
                protocol="within",
                env="desert",
                task="ego",
                test_mean=0.5 + 0.01 * layer,
                n_test=n,
                ci_lo=0.4,
                ci_hi=0.7,
            )
            for bb, n in (("a", 16), ("b", 16))
            for layer in (4, 8)
            for h in ("linear", "efficient")
        ]
    )
    warns = small_splits(summary)
    assert len(warns) == 1 and "only 16 test images" in warns[0]
    tables = layer_head_tables(summary)
    assert set(tables) == {"a", "b"} and tables["a"].loc[8, "efficient"] == pytest.approx(0.58)
    assert small_splits(summary.assign(n_test=500)) == []
