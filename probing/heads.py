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
"""
from __future__ import annotations

import torch
from torch import nn

from sceneforge.probing.registry import HEADS as REGISTERED_HEADS

HEADS = tuple(REGISTERED_HEADS)  # names come from probing.registry


class LinearHead(nn.Module):
    """GAP (or CLS) → LayerNorm → Dropout → Linear."""

    pre_pooled = True

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

    def forward(self, patches: torch.Tensor, prefix: torch.Tensor) -> torch.Tensor:
        return self.classify(self.pool(patches, prefix))


class AbMILPHead(nn.Module):
    """Attention-based MIL pooling: one learned attention map over the patches.

    ``depth=1`` (default, as in the EP authors' AbMILP probe) scores each token with a single
    linear map D → 1, so the head adds O(D) parameters; ``depth=2`` puts a tanh hidden layer of
    width ``hidden`` (Ilse et al.'s V) in front.
    """

    pre_pooled = False

    def __init__(self, dim: int, num_classes: int = 4, dropout: float = 0.0, depth: int = 1,
                 hidden: int | None = None):
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
        return isinstance(self.score, nn.Linear)

    def score_params(self) -> tuple[torch.Tensor, torch.Tensor]:
        """(W (1, D), b (1,)) with attention logits ``x @ W.T + b`` (depth 1 only; b = 0)."""
        return self.score.weight, self.score.weight.new_zeros(1)

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

    def __init__(self, dim: int, num_classes: int = 4, dropout: float = 0.0,
                 num_queries: int = 4, dim_div: int = 8):
        super().__init__()
        self.num_queries = num_queries
        self.chunk = max(1, dim // (dim_div * num_queries))
        self.scale = dim ** -0.5
        self.queries = nn.Parameter(torch.randn(num_queries, dim) * 0.02)
        self.v = nn.Linear(dim, num_queries * self.chunk, bias=False)
        self.norm = nn.LayerNorm(num_queries * self.chunk)
        self.drop = nn.Dropout(dropout)
        self.fc = nn.Linear(num_queries * self.chunk, num_classes)

    @property
    def out_dim(self) -> int:
        return self.num_queries * self.chunk

    stackable = True

    def score_params(self) -> tuple[torch.Tensor, torch.Tensor]:
        """(W (Q, D), b (Q,)) with attention logits ``x @ W.T + b``: the scaled queries, b = 0.

        Keys are the raw tokens, as in EP (see the module docstring for why no LayerNorm).
        """
        w = self.queries * self.scale
        return w, w.new_zeros(self.num_queries)

    def attention(self, patches: torch.Tensor) -> torch.Tensor:
        w, _ = self.score_params()
        return torch.matmul(patches.float(), w.t()).transpose(1, 2).softmax(dim=-1)  # (B, Q, P)

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


def stacked_logits(heads: list[nn.Module], x: torch.Tensor) -> list[torch.Tensor]:
    """Logits of several attentive heads on the same batch with ONE pass over the tokens.

    Why: on CPU these heads are memory-bound (a few FLOPs per token value), so training the
    9-point lr × dropout grid one head at a time streams the tokens 9x as often. Here every
    head's score matrix is concatenated into one GEMM and all pooled vectors come from one bmm;
    each head then finishes on its own slice. Gradients stay separate (disjoint parameters).
    """
    params = [h.score_params() for h in heads]
    w = torch.cat([p[0] for p in params])
    b = torch.cat([p[1] for p in params])
    attn = (torch.matmul(x, w.t()) + b).transpose(1, 2).softmax(dim=-1)  # (B, sum Q, P)
    z = torch.bmm(attn, x)
    sizes = [p[0].shape[0] for p in params]
    return [h.finish(zk) for h, zk in zip(heads, z.split(sizes, dim=1))]


def make_head(name: str, dim: int, dropout: float, num_classes: int = 4,
              use_cls: bool = False) -> nn.Module:
    """Head by its registered name (:data:`probing.registry.HEADS`)."""
    if name not in REGISTERED_HEADS:
        raise ValueError(f"unknown head {name!r}; expected one of {', '.join(REGISTERED_HEADS)}")
    cls = REGISTERED_HEADS[name].load()
    options = {"use_cls": use_cls} if getattr(cls, "pre_pooled", False) else {}
    return cls(dim, num_classes, dropout, **options)
