"""Probe heads on frozen tokens, as in SpaRRTa: Linear (GAP or CLS), AbMILP, Efficient probing.

Every head pools the *raw* tokens, then applies LayerNorm → Dropout → Linear to the pooled
vector. Normalising tokens before attention erases their norms, a cue attention relies on: on the
marker task in tests/probing/test_heads.py it cut AbMILP from 0.89 to 0.41 and Efficient from
0.95 to 0.52 test accuracy at the same budget.

All heads take ``patches`` (B, P, D) and ``prefix`` (B, K, D) and return logits (B, C). The two
attentive heads expose ``attention(patches) -> (B, Q, P)`` (Q = 1 for AbMILP) so the maps can be
drawn over the image; rows sum to 1 over the P patches.

* Linear: LayerNorm + Dropout + Linear on the mean of the patch tokens (or the CLS token).
  ``pool`` is separate from ``classify`` so the trainer pools once and trains on (N, D).
* AbMILP (Ilse et al. 2018, as used by the EP benchmark): one attention map
  ``a = softmax(w^T x)`` over patches (optionally ``w^T tanh(V x)``); the pooled vector
  ``sum_i a_i x_i`` goes to the classifier.
* Efficient probing (Psomas et al. 2025): Q learned queries attend over the patch tokens used
  directly as keys (no W_q/W_k/W_o); one value projection to D/8 is split into Q chunks, chunk q
  pooled with query q's map; the concatenation (D/8) goes through LayerNorm to the classifier.

Grid training (:mod:`probing.grid`) stacks G copies of a head's parameters along a leading axis.
A head that supports it says how its stacked parameters pool: ``grid_scores(params)`` gives the
attention-score rows (G·Q, D) so that the grid (and several heads) share one pass over the tokens,
``grid_features(params, z)`` turns the pooled tokens (B, G·Q, D) into (G, B, F) features; the
shared LayerNorm → Dropout → Linear then runs batched over G. Linear heads train on the pooled
vector itself (``pre_pooled``), shared by all G.
"""

from __future__ import annotations

import torch
from torch import nn

from sceneforge.core.errors import ConfigError
from sceneforge.core.plugins import one_line
from sceneforge.probing.registry import HEADS as REGISTERED_HEADS

HEADS = tuple(REGISTERED_HEADS)  # names come from probing.registry


class LinearHead(nn.Module):
    """GAP (or CLS) → LayerNorm → Dropout → Linear."""

    pre_pooled = True
    # facts the sweep reads from the class (a plugin head states its own): whether it draws
    # attention maps, and SpaRRTa's (epochs, warm-up) for it under --sparrta-schedule
    ATTENTIVE = False
    SPARRTA_SCHEDULE = (1000, 200)

    def __init__(self, dim: int, num_classes: int = 4, dropout: float = 0.0, use_cls: bool = False):
        super().__init__()
        self.use_cls = use_cls
        self.norm = nn.LayerNorm(dim)
        self.drop = nn.Dropout(dropout)
        self.fc = nn.Linear(dim, num_classes)

    def pool(self, patches: torch.Tensor, prefix: torch.Tensor) -> torch.Tensor:
        if self.use_cls:
            if prefix.shape[1] == 0:
                raise ValueError("linear head with CLS pooling needs a backbone with a CLS token")
            return prefix[:, 0].float()
        return patches.float().mean(dim=1)

    def classify(self, pooled: torch.Tensor) -> torch.Tensor:
        return self.fc(self.drop(self.norm(pooled)))

    stackable = True

    def grid_features(self, params: dict[str, torch.Tensor], pooled: torch.Tensor) -> torch.Tensor:
        """The pooled (B, D) vectors, shared by every config (broadcast over G downstream)."""
        return pooled

    def forward(self, patches: torch.Tensor, prefix: torch.Tensor) -> torch.Tensor:
        return self.classify(self.pool(patches, prefix))


class AbMILPHead(nn.Module):
    """Attention-based MIL pooling: one learned attention map over the patches.

    ``depth=1`` (default, as in the EP authors' AbMILP probe) scores each token with a single
    linear map D → 1, so the head adds O(D) parameters; ``depth=2`` puts a tanh hidden layer of
    width ``hidden`` (Ilse et al.'s V) in front.
    """

    pre_pooled = False
    ATTENTIVE = True
    SPARRTA_SCHEDULE = (500, 100)

    def __init__(self, dim: int, num_classes: int = 4, dropout: float = 0.0, depth: int = 1, hidden: int | None = None):
        super().__init__()
        if depth == 1:  # no bias: softmax over patches ignores a constant (its gradient is noise)
            self.score = nn.Linear(dim, 1, bias=False)
        else:
            width = hidden or dim
            self.score = nn.Sequential(nn.Linear(dim, width), nn.Tanh(), nn.Linear(width, 1))
        self.norm = nn.LayerNorm(dim)
        self.drop = nn.Dropout(dropout)
        self.fc = nn.Linear(dim, num_classes)

    @property
    def stackable(self) -> bool:
        """Depth 1 only: its score is one linear map, so G of them are one (G, D) matrix."""
        return isinstance(self.score, nn.Linear)

    def grid_scores(self, params: dict[str, torch.Tensor]) -> torch.Tensor:
        """Stacked score maps (G, 1, D) → rows (G, D) of the shared score GEMM."""
        w = params["score.weight"]
        return w.reshape(w.shape[0], -1)

    def grid_features(self, params: dict[str, torch.Tensor], z: torch.Tensor) -> torch.Tensor:
        """Pooled tokens (B, G, D) → (G, B, D)."""
        return z.transpose(0, 1)

    def attention(self, patches: torch.Tensor) -> torch.Tensor:
        return self.score(patches.float()).squeeze(-1).softmax(dim=-1).unsqueeze(1)  # (B, 1, P)

    def finish(self, z: torch.Tensor) -> torch.Tensor:
        """Pooled (B, 1, D) → logits."""
        return self.fc(self.drop(self.norm(z[:, 0])))

    def forward(self, patches: torch.Tensor, prefix: torch.Tensor) -> torch.Tensor:
        x = patches.float()
        return self.finish(torch.bmm(self.attention(x), x))


class EfficientHead(nn.Module):
    """Efficient probing: ``num_queries`` learned queries, output dim D / ``dim_div``."""

    pre_pooled = False
    ATTENTIVE = True
    SPARRTA_SCHEDULE = (500, 100)

    def __init__(self, dim: int, num_classes: int = 4, dropout: float = 0.0, num_queries: int = 4, dim_div: int = 8):
        super().__init__()
        self.num_queries = num_queries
        self.chunk = max(1, dim // (dim_div * num_queries))
        self.scale = dim**-0.5
        self.queries = nn.Parameter(torch.randn(num_queries, dim) * 0.02)
        self.v = nn.Linear(dim, num_queries * self.chunk, bias=False)
        self.norm = nn.LayerNorm(num_queries * self.chunk)
        self.drop = nn.Dropout(dropout)
        self.fc = nn.Linear(num_queries * self.chunk, num_classes)

    @property
    def out_dim(self) -> int:
        return self.num_queries * self.chunk

    stackable = True

    def attention(self, patches: torch.Tensor) -> torch.Tensor:
        """Keys are the raw tokens, as in EP (see the module docstring for why no LayerNorm)."""
        w = self.queries * self.scale
        return torch.matmul(patches.float(), w.t()).transpose(1, 2).softmax(dim=-1)  # (B, Q, P)

    def grid_scores(self, params: dict[str, torch.Tensor]) -> torch.Tensor:
        """Stacked queries (G, Q, D) → scaled rows (G·Q, D) of the shared score GEMM."""
        return (params["queries"] * self.scale).reshape(-1, params["queries"].shape[-1])

    def grid_features(self, params: dict[str, torch.Tensor], z: torch.Tensor) -> torch.Tensor:
        """Pooled tokens (B, G·Q, D) → (G, B, D/8): chunk q of each config's W_v on query q's
        pooled vector, as :meth:`finish` does for one head."""
        g = params["v.weight"].shape[0]
        w = params["v.weight"].view(g, self.num_queries, self.chunk, -1)  # (G, Q, c, D)
        zq = z.view(z.shape[0], g, self.num_queries, -1)  # (B, G, Q, D)
        return torch.einsum("bgqd,gqcd->gbqc", zq, w).reshape(g, z.shape[0], self.out_dim)

    def finish(self, z: torch.Tensor) -> torch.Tensor:
        """Pooled tokens (B, Q, D) → logits: EP's ``sum_p a_qp (W_v x_p)[chunk q]`` computed as
        ``W_v[chunk q] (sum_p a_qp x_p)``. Same numbers (W_v has no bias), but the projection
        runs on Q pooled vectors instead of P tokens (test_efficient_pooling_order_...)."""
        w = self.v.weight.view(self.num_queries, self.chunk, -1)  # (Q, c, D)
        pooled = torch.einsum("bqd,qcd->bqc", z, w).reshape(z.shape[0], self.out_dim)
        return self.fc(self.drop(self.norm(pooled)))

    def forward(self, patches: torch.Tensor, prefix: torch.Tensor) -> torch.Tensor:
        x = patches.float()
        return self.finish(torch.bmm(self.attention(x), x))


def head_class(name: str) -> type:
    """The class registered as ``name`` (:data:`probing.registry.HEADS`, plugins included)."""
    if name not in REGISTERED_HEADS:
        raise ValueError(f"unknown head {name!r}; expected one of {', '.join(REGISTERED_HEADS)}")
    entry = REGISTERED_HEADS[name]
    try:
        return entry.load()
    except Exception as e:  # a plugin head that does not import: one line naming it and its package
        raise ConfigError(f"--heads {name}: {entry.target} [{entry.source}] cannot be loaded: {one_line(e)}") from e


def attentive(name: str) -> bool:
    """Whether the head draws attention maps over the patches (its class's ``ATTENTIVE``)."""
    return bool(getattr(head_class(name), "ATTENTIVE", False))


def sparrta_schedules(names) -> dict[str, tuple[int, int]]:
    """SpaRRTa's (epochs, warm-up) of each head that states one (its class's ``SPARRTA_SCHEDULE``)."""
    return {n: tuple(s) for n in names if (s := getattr(head_class(n), "SPARRTA_SCHEDULE", None))}


def make_head(name: str, dim: int, dropout: float, num_classes: int = 4, use_cls: bool = False) -> nn.Module:
    """Head by its registered name (:data:`probing.registry.HEADS`)."""
    cls = head_class(name)
    options = {"use_cls": use_cls} if getattr(cls, "pre_pooled", False) else {}
    return cls(dim, num_classes, dropout, **options)
