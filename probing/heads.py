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
  ``a = softmax(w^T x + b)`` over patches (optionally ``w^T tanh(V x)``); the pooled vector
  ``sum_i a_i x_i`` goes to the classifier.
* Efficient probing (Psomas et al. 2025): Q learned queries attend over the patch tokens used
  directly as keys (no W_q/W_k/W_o); one value projection to D/8 is split into Q chunks, chunk q
  pooled with query q's map; the concatenation (D/8) goes through LayerNorm to the classifier.
"""
from __future__ import annotations

import torch
from torch import nn

HEADS = ("linear", "abmilp", "efficient")


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
        if depth == 1:
            self.score = nn.Linear(dim, 1)
        else:
            width = hidden or dim
            self.score = nn.Sequential(nn.Linear(dim, width), nn.Tanh(), nn.Linear(width, 1))
        self.norm = nn.LayerNorm(dim)
        self.drop = nn.Dropout(dropout)
        self.fc = nn.Linear(dim, num_classes)

    def _attend(self, patches: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        x = patches.float()
        attn = self.score(x).squeeze(-1).softmax(dim=-1)  # (B, P)
        return x, attn.unsqueeze(1)

    def attention(self, patches: torch.Tensor) -> torch.Tensor:
        return self._attend(patches)[1]

    def forward(self, patches: torch.Tensor, prefix: torch.Tensor) -> torch.Tensor:
        x, attn = self._attend(patches)
        pooled = torch.bmm(attn, x).squeeze(1)
        return self.fc(self.drop(self.norm(pooled)))


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

    def _attend(self, patches: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        # Keys are the raw tokens, as in EP (see the module docstring for why no LayerNorm here).
        # One GEMM gives both the query logits and the values: x is read once (memory-bound on CPU).
        x = patches.float()
        proj = torch.matmul(x, torch.cat([self.queries * self.scale, self.v.weight]).t())
        attn = proj[..., :self.num_queries].transpose(1, 2).softmax(dim=-1)  # (B, Q, P)
        return proj[..., self.num_queries:], attn

    def attention(self, patches: torch.Tensor) -> torch.Tensor:
        return self._attend(patches)[1]

    def forward(self, patches: torch.Tensor, prefix: torch.Tensor) -> torch.Tensor:
        values, attn = self._attend(patches)
        b, p, _ = values.shape
        v = values.reshape(b, p, self.num_queries, self.chunk).transpose(1, 2)  # (B, Q, P, c)
        pooled = torch.matmul(attn.unsqueeze(2), v).reshape(b, self.out_dim)
        return self.fc(self.drop(self.norm(pooled)))


def make_head(name: str, dim: int, dropout: float, num_classes: int = 4,
              use_cls: bool = False) -> nn.Module:
    """Head by name (``linear``, ``abmilp``, ``efficient``)."""
    if name == "linear":
        return LinearHead(dim, num_classes, dropout, use_cls=use_cls)
    if name == "abmilp":
        return AbMILPHead(dim, num_classes, dropout)
    if name == "efficient":
        return EfficientHead(dim, num_classes, dropout)
    raise ValueError(f"unknown head {name!r}; expected one of {', '.join(HEADS)}")
