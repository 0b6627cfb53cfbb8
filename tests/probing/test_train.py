"""Training loop pieces: schedule, metrics, model selection on val only, seeds and repeats."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from sceneforge.probing.selection import run_grid
from sceneforge.probing.train import ProbeSplits, TrainConfig, lr_at, scores


def test_warmup_then_cosine_to_zero():
    lrs = [lr_at(s, 100, 10, 1e-2) for s in range(100)]
    assert lrs[0] == pytest.approx(1e-3) and lrs[9] == pytest.approx(1e-2)
    assert all(a >= b for a, b in zip(lrs[9:], lrs[10:]))
    assert lrs[55] == pytest.approx(5e-3, rel=0.05) and lrs[-1] < 1e-5


def test_scores_confusion_and_per_class():
    acc, per_class, conf = scores(np.array([0, 0, 1, 2, 2, 2]), np.array([0, 1, 1, 2, 2, 0]))
    assert acc == pytest.approx(4 / 6)
    assert conf[0] == [1, 1, 0, 0] and conf[2] == [1, 0, 2, 0]
    assert per_class[:3] == pytest.approx([0.5, 1.0, 2 / 3]) and np.isnan(per_class[3])


def _gaussian_splits(seed=0, val_flip=False):
    """Linearly separable pooled features; optionally a val set whose labels are shuffled."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 4, 360)
    centers = rng.normal(0, 3, (4, 16))
    x = (centers[y][:, None, :] + rng.normal(0, 1, (360, 4, 16))).astype(np.float16)
    idx = {"train": np.arange(200), "val": np.arange(200, 280), "test": np.arange(280, 360)}
    return ProbeSplits.from_index(x, np.zeros((360, 1, 16), np.float16), y, idx)


def test_grid_selects_on_val_and_reports_every_run():
    torch.set_num_threads(1)
    splits = _gaussian_splits()
    cfg = TrainConfig(epochs=30, warmup=3, lrs=(1e-2, 1e-6), dropouts=(0.2, 0.4), runs=3)
    results = run_grid("linear", splits, cfg)
    assert len(results) == 4 + 2
    selected = [r for r in results if r.selected]
    best = selected[0]
    assert best in results[:4] and best.val_acc == max(r.val_acc for r in results[:4])
    assert [r.seed for r in selected] == [0, 1, 2]
    assert all((r.lr, r.dropout) == (best.lr, best.dropout) for r in selected)
    assert best.lr == 1e-2 and best.test_acc > 0.9
    assert all(r.test_acc is not None and len(r.confusion) == 4 for r in results)
    assert sum(map(sum, best.confusion)) == 80


def test_training_is_deterministic():
    splits = _gaussian_splits()
    cfg = TrainConfig(epochs=5, warmup=1, lrs=(1e-3,), dropouts=(0.4,))
    a = run_grid("efficient", splits, cfg)[0]
    b = run_grid("efficient", splits, cfg)[0]
    assert a.val_acc == b.val_acc and a.confusion == b.confusion
    for (ka, va), (kb, vb) in zip(a.model.state_dict().items(), b.model.state_dict().items()):
        assert torch.equal(va, vb), ka


@pytest.mark.parametrize("head", ["abmilp", "efficient"])
def test_grid_heads_trained_together_match_heads_trained_alone(head):
    """The shared-pass grid training changes speed, not results (dropout 0: no RNG order)."""
    from sceneforge.probing.train import train_heads

    splits = _gaussian_splits()
    cfg = TrainConfig(epochs=3, warmup=1)
    configs = [(1e-2, 0.0), (1e-3, 0.0)]
    together = train_heads(head, splits, configs, cfg, seed=5)
    for model, config in zip(together, configs):
        alone = train_heads(head, splits, [config], cfg, seed=5)[0]
        for (k, a), (_, b) in zip(model.state_dict().items(), alone.state_dict().items()):
            assert torch.allclose(a, b, atol=1e-4), (config, k)


def test_splits_too_big_for_memory_are_read_per_batch_with_same_results():
    from sceneforge.probing.train import LazyRows

    rng = np.random.default_rng(1)
    x = rng.normal(0, 1, (120, 4, 16)).astype(np.float16)
    pre, y = np.zeros((120, 1, 16), np.float16), rng.integers(0, 4, 120)
    idx = {"train": rng.permutation(80), "val": np.arange(80, 100), "test": np.arange(100, 120)}
    in_memory = ProbeSplits.from_index(x, pre, y, idx, fp32_budget_bytes=0)
    lazy = ProbeSplits.from_index(x, pre, y, idx, fp32_budget_bytes=0, memory_budget_bytes=0)
    assert isinstance(lazy.train.patches, LazyRows) and in_memory.train.patches.dtype == torch.float16
    rows = torch.tensor([5, 0, 7])
    assert torch.equal(lazy.train.patches[rows], in_memory.train.patches[rows])
    cfg = TrainConfig(epochs=2, warmup=1, lrs=(1e-2,), dropouts=(0.2, 0.4))
    for head in ("linear", "efficient"):
        a, b = run_grid(head, in_memory, cfg), run_grid(head, lazy, cfg)
        assert [(r.val_acc, r.confusion) for r in a] == [(r.val_acc, r.confusion) for r in b]
