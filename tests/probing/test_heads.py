"""Heads: shapes, attention maps, and a real check of spatial selectivity.

The marker task: every token carries a fixed positional vector plus noise; one token per sample
also carries a marker. The label is the quadrant of the marker's patch. GAP averages the marker
away from its position (the mean of the positional vectors is the same for every sample), so a
linear-GAP probe stays near chance, while a head that *selects* the marker token reads its
position: AbMILP and Efficient probing must do far better.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from sceneforge.probing.heads import AbMILPHead, EfficientHead, LinearHead, make_head
from sceneforge.probing.selection import run_grid
from sceneforge.probing.train import ProbeSplits, TrainConfig


def marker_task(n=1600, grid=4, dim=64, seed=0):
    rng = np.random.default_rng(seed)
    p = grid * grid
    pos = rng.normal(0, 1, (p, dim))
    marker = rng.normal(0, 1, dim)
    marker *= 3 * np.sqrt(dim) / np.linalg.norm(marker)
    x = rng.normal(0, 1, (n, p, dim)) + pos
    where = rng.integers(0, p, n)
    x[np.arange(n), where] += marker
    row, col = where // grid, where % grid
    y = (row >= grid // 2) * 2 + (col >= grid // 2)
    return x.astype(np.float16), np.zeros((n, 0, dim), np.float16), y.astype(np.int64)


@pytest.fixture(scope="module")
def marker_splits():
    x, pre, y = marker_task()
    idx = {"train": np.arange(0, 1000), "val": np.arange(1000, 1300), "test": np.arange(1300, 1600)}
    return ProbeSplits.from_index(x, pre, y, idx)


@pytest.fixture(scope="module")
def marker_results(marker_splits):
    cfg = TrainConfig(epochs=40, warmup=4, lrs=(1e-2,), dropouts=(0.2,))
    return {h: next(r for r in run_grid(h, marker_splits, cfg) if r.selected) for h in ("linear", "abmilp", "efficient")}


def test_linear_gap_cannot_locate_the_marker(marker_results):
    assert marker_results["linear"].test_acc < 0.40


@pytest.mark.parametrize("head", ["abmilp", "efficient"])
def test_attentive_heads_locate_the_marker(marker_results, head):
    acc = marker_results[head].test_acc
    assert acc > 0.85
    assert acc > marker_results["linear"].test_acc + 0.4


@pytest.mark.parametrize("head", ["abmilp", "efficient"])
def test_attention_concentrates_on_the_marker(marker_results, marker_splits, head):
    model = marker_results[head].model
    x = marker_splits.test.patches[:200].float()
    with torch.inference_mode():
        attn = model.attention(x)
    # the marker token has by far the largest norm in this task
    where = x.norm(dim=-1).argmax(dim=-1)
    mass = attn.max(dim=1).values[torch.arange(len(where)), where]  # best query's weight on it
    assert mass.mean().item() > 3.0 / x.shape[1]  # ≥ 3× the uniform weight 1/P


def test_attention_maps_shape_and_normalised():
    x = torch.randn(5, 16, 64)
    for head, q in ((AbMILPHead(64), 1), (EfficientHead(64), 4)):
        a = head.attention(x)
        assert a.shape == (5, q, 16)
        assert torch.allclose(a.sum(-1), torch.ones(5, q), atol=1e-5)


def test_efficient_pooling_order_matches_ep_formula():
    """Projecting pooled vectors equals EP's pooling of projected tokens (W_v has no bias)."""
    torch.manual_seed(0)
    head = EfficientHead(64).eval()
    x = torch.randn(3, 16, 64)
    attn = head.attention(x)  # (B, Q, P)
    v = head.v(x).view(3, 16, 4, head.chunk).permute(0, 2, 1, 3)  # (B, Q, P, c)
    pooled = torch.matmul(attn.unsqueeze(2), v).reshape(3, head.out_dim)
    expected = head.fc(head.norm(pooled))
    assert torch.allclose(head(x, x[:, :0]), expected, atol=1e-5)


def test_efficient_output_dim_is_d_over_8():
    assert EfficientHead(384).out_dim == 48
    assert EfficientHead(384).fc.in_features == 48


def test_linear_cls_uses_prefix_token():
    head = LinearHead(8, use_cls=True)
    patches, prefix = torch.zeros(2, 4, 8), torch.arange(16.0).view(2, 1, 8)
    assert torch.equal(head.pool(patches, prefix), prefix[:, 0])
    with pytest.raises(ValueError, match="CLS"):
        head.pool(patches, prefix[:, :0])


def test_make_head_rejects_unknown():
    with pytest.raises(ValueError, match="unknown head"):
        make_head("nosuchhead", 8, 0.1)


def test_per_head_facts_live_on_the_head_class():
    """ATTENTIVE and SPARRTA_SCHEDULE are class attributes (a plugin head states its own); the
    sweep and --sparrta-schedule read them from the class, not from lists keyed by name."""
    from sceneforge.probing.config import DEFAULT_HEADS, ProbeConfig
    from sceneforge.probing.heads import attentive, sparrta_schedules

    assert [attentive(h) for h in ("linear", "abmilp", "efficient")] == [False, True, True]
    assert sparrta_schedules(("linear", "abmilp", "efficient")) == {
        "linear": (1000, 200),
        "abmilp": (500, 100),
        "efficient": (500, 100),
    }
    cfg = ProbeConfig.from_dict({"data": "d", "backbone": "b", "out": "o", "heads": "linear,efficient", "sparrta_schedule": True})
    assert cfg.train.epochs_by_head == {"linear": (1000, 200), "efficient": (500, 100)}
    assert cfg.train.schedule("efficient") == (500, 100)
    assert ProbeConfig.from_dict({"data": "d", "backbone": "b", "out": "o"}).heads == DEFAULT_HEADS


def test_a_registered_head_is_a_choice_not_a_default():
    """``@register_head`` on a class adds a name users can ask for; the defaults stay SpaRRTa's three."""
    from sceneforge.probing.config import DEFAULT_HEADS, ProbeConfig
    from sceneforge.probing.heads import sparrta_schedules
    from sceneforge.probing.registry import HEADS, register_head

    @register_head("tinylin", "test: a linear head with its own facts")
    class TinyLin(LinearHead):
        SPARRTA_SCHEDULE = (7, 1)

    try:
        assert isinstance(make_head("tinylin", 8, 0.0), TinyLin)
        assert ProbeConfig.from_dict({"data": "d", "backbone": "b", "out": "o"}).heads == DEFAULT_HEADS
        assert sparrta_schedules(["tinylin", "linear"]) == {"tinylin": (7, 1), "linear": (1000, 200)}
    finally:
        HEADS.pop("tinylin")
