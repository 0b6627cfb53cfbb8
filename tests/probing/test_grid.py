"""The lr × dropout grid trained as one stacked module (probing/grid.py) against configs trained
one at a time (probing.train.train_heads), and early stopping on val."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from sceneforge.probing.grid import HeadGrid, train_grids
from sceneforge.probing.selection import run_grids
from sceneforge.probing.train import ProbeSplits, TrainConfig, predict, scores, train_heads

HEADS = ("linear", "abmilp", "efficient")


def cluster_splits(
    signal: float = 0.25, n: int = 1200, p: int = 16, d: int = 32, seed: int = 0, random_labels: bool = False
) -> ProbeSplits:
    """Tokens = noise + a positional vector + the class centre (scaled by ``signal``): learnable
    by every head, fast at lr 1e-2, slower at 1e-3, barely at 1e-4 in 20 epochs."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 4, n)
    x = rng.normal(0, 1, (n, p, d)) + rng.normal(0, 1, (p, d)) + rng.normal(0, signal, (4, d))[y][:, None, :]
    if random_labels:
        y = rng.integers(0, 4, n)
    cut = (int(n * 2 / 3), int(n * 5 / 6))
    idx = {"train": np.arange(cut[0]), "val": np.arange(*cut), "test": np.arange(cut[1], n)}
    return ProbeSplits.from_index(x.astype(np.float16), np.zeros((n, 0, d), np.float16), y, idx)


@pytest.fixture(autouse=True)
def _one_thread():
    torch.set_num_threads(1)


def test_stacked_rows_are_the_heads_trained_alone():
    """Dropout 0 (no RNG): every row of the three fused grids ends with the weights of that head
    trained alone with its own torch AdamW, early stopping included."""
    splits = cluster_splits(signal=0.1)
    cfg = TrainConfig(epochs=8, warmup=1, patience=2, batch_size=64)
    configs = [(1e-2, 0.0), (1e-3, 0.0)]
    fused = train_grids({h: configs for h in HEADS}, splits, cfg, seed=3)
    for head in HEADS:
        for model, config in zip(fused[head], configs):
            alone = train_heads(head, splits, [config], cfg, seed=3)[0]
            for (k, a), (_, b) in zip(model.state_dict().items(), alone.state_dict().items()):
                assert torch.allclose(a, b, atol=1e-5), (head, config, k)


def test_batched_grid_selects_what_the_sequential_grid_selects():
    """SpaRRTa's 3 lr × 3 dropout grid, all three heads: the stacked module (its own dropout
    masks) and nine separate runs per head pick the same config, with the same test accuracy
    and the same val accuracies across the grid, within noise (200 val / 200 test rows)."""
    splits = cluster_splits()
    cfg = TrainConfig(epochs=20, warmup=2, batch_size=64)
    batched = run_grids(HEADS, splits, cfg)
    sequential = run_grids(HEADS, splits, TrainConfig(epochs=20, warmup=2, batch_size=64, batched=False))
    for head in HEADS:
        b, s = (next(r for r in rs[head] if r.selected) for rs in (batched, sequential))
        assert (b.lr, b.dropout) == (s.lr, s.dropout), head
        assert b.lr == 1e-2 and b.test_acc > 0.95 and abs(b.test_acc - s.test_acc) <= 0.02, head
        gaps = [abs(x.val_acc - y.val_acc) for x, y in zip(batched[head], sequential[head])]
        assert np.mean(gaps) <= 0.02 and max(gaps) <= 0.05, (head, gaps)


def test_early_stopping_stops_and_keeps_each_configs_best_val_weights(monkeypatch):
    """Random labels: val accuracy peaks early, so with patience 3 every config leaves the stack
    long before 60 epochs; each returned head is its best val epoch."""
    seen: dict[int, list[float]] = {}
    validate = HeadGrid.validate

    def spy(self, correct, n, epoch, patience):
        for row, cid in enumerate(self.active):
            seen.setdefault(cid, []).append(float(correct[row]) / n)
        validate(self, correct, n, epoch, patience)

    monkeypatch.setattr(HeadGrid, "validate", spy)
    splits = cluster_splits(random_labels=True)
    configs = [(1e-2, 0.2), (1e-3, 0.4), (1e-4, 0.6)]
    cfg = TrainConfig(epochs=60, warmup=2, patience=3, batch_size=64)
    heads = train_grids({"efficient": configs}, splits, cfg, seed=0)["efficient"]
    assert max(map(len, seen.values())) < 30
    for cid, model in enumerate(heads):
        val = scores(splits.val.y.numpy(), predict(model, splits.val))[0]
        assert val == pytest.approx(max(seen[cid])), cid
        best_epoch = int(np.argmax(seen[cid])) + 1  # first best, 1-based
        assert len(seen[cid]) == max(cfg.warmup, best_epoch + cfg.patience), cid


def test_runs_and_determinism_through_run_grids():
    splits = cluster_splits(signal=0.1)
    cfg = TrainConfig(epochs=3, warmup=1, lrs=(1e-2, 1e-3), dropouts=(0.2,), runs=2, patience=1)
    a, b = run_grids(HEADS, splits, cfg), run_grids(HEADS, splits, cfg)
    for head in HEADS:
        assert len(a[head]) == 3 and [r.seed for r in a[head] if r.selected] == [0, 1]
        assert [(r.val_acc, r.test_acc, r.confusion) for r in a[head]] == [(r.val_acc, r.test_acc, r.confusion) for r in b[head]]


def test_patience_is_a_config_key_and_a_flag():
    from sceneforge.cli import build_parser
    from sceneforge.commands.probe import build_job
    from sceneforge.core.errors import ConfigError
    from sceneforge.probing.config import ProbeConfig

    base = {"data": "d", "backbone": "b", "out": "o"}
    assert ProbeConfig.from_dict(base).train.patience == 0
    assert ProbeConfig.from_dict({**base, "patience": 10}, "p.yaml").train.patience == 10
    with pytest.raises(ConfigError, match="patience"):
        ProbeConfig.from_dict({**base, "patience": -1}, "p.yaml")
    args = build_parser().parse_args(["probe", "--data", "d", "--backbone", "b", "--out", "o", "--patience", "7"])
    assert build_job(args).train.patience == 7
