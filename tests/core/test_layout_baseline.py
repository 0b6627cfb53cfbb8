"""core/layout_baseline.py: the dataset card's box-only MLP (numpy, no torch) finds a one-box
shortcut, stays at chance without one, is deterministic, and agrees with probing/layout.py."""

from __future__ import annotations

import numpy as np
import pytest

from sceneforge.core.layout_baseline import box_features, layout_baselines

LABELS = ("front", "back", "left", "right")


def _rows(n: int, seed: int, shortcut: bool) -> list[dict]:
    """Rows with a source and a target box; with ``shortcut`` the target's x says the label."""
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(n):
        k = i % 4
        sx, sy = rng.uniform(20, 180, 2)
        tx = 30 + 45 * k + rng.uniform(0, 10) if shortcut else rng.uniform(20, 180)
        ty = rng.uniform(20, 180)
        rows.append(
            {
                "label": LABELS[k],
                "split": ("train", "train", "train", "val", "test")[(i // 4) % 5],
                "camera_width": 224,
                "camera_height": 224,
                **{f"source_bbox_{c}": v for c, v in zip(("x0", "y0", "x1", "y1"), (sx, sy, sx + 12, sy + 15))},
                **{f"target_bbox_{c}": v for c, v in zip(("x0", "y0", "x1", "y1"), (tx, ty, tx + 20, ty + 18))},
                "human_bbox_x0": None,
            }
        )
    return rows


SETS = {"source": ("source",), "target": ("target",), "figure": ("human",), "all_boxes": ("source", "target", "human")}


def test_a_one_box_shortcut_is_found_and_an_uninformative_box_is_at_chance():
    out = layout_baselines(_rows(800, 0, shortcut=True), SETS, LABELS)
    assert "figure" not in out  # no figure box in any row: left out, not reported as chance
    assert out["target"]["acc"] > 0.95 and out["all_boxes"]["acc"] > 0.9
    assert out["source"]["acc"] < 0.38 and out["source"]["n_test"] == 160
    assert out["all_boxes"]["boxes"] == ["source", "target"]


def test_deterministic():
    rows = _rows(400, 1, shortcut=True)
    assert layout_baselines(rows, SETS, LABELS) == layout_baselines(rows, SETS, LABELS)


def test_features_match_probing_layout_and_so_does_the_accuracy():
    pd = pytest.importorskip("pandas")
    pytest.importorskip("torch")
    from sceneforge.probing import layout as torch_layout

    rows = _rows(600, 2, shortcut=True)
    table = pd.DataFrame(rows)
    mine, _ = box_features(rows, ("source", "target"))
    theirs, _ = torch_layout.box_features(table, ("source", "target"))
    assert np.allclose(mine, theirs)
    idx = {s: np.flatnonzero(table["split"].to_numpy() == s) for s in ("train", "val", "test")}
    torch_acc = torch_layout.layout_baselines(table, idx)["target"].acc
    assert abs(layout_baselines(rows, SETS, LABELS)["target"]["acc"] - torch_acc) < 0.05
