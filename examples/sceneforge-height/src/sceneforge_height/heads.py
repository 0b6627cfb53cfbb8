"""``mlp``: a 2-layer MLP probe head on the mean patch token (``sceneforge probe --heads mlp``).

The contract of a probe head (sceneforge.probing.heads): ``Class(dim, num_classes, dropout,
**options)``, ``forward(patches (B, P, D), prefix (B, K, D)) -> logits (B, C)``. A head with
``pre_pooled = True`` also gives ``pool(patches, prefix) -> (B, D)`` and ``classify(pooled) ->
logits``: the trainer pools each split once and trains on the pooled vectors (as the built-in
``linear`` head does), so the MLP costs one small matrix product per step. Facts the sweep reads
are class attributes: ``ATTENTIVE`` (it draws attention maps: no) and ``SPARRTA_SCHEDULE``
((epochs, warm-up) with ``--sparrta-schedule``: the linear head's).

It is a probe of *non-linear* decodability: an MLP that beats the linear head on the same features
says the information is there but not linearly separable. Registered through this distribution's
``sceneforge.heads`` entry point; importing this module needs torch (sceneforge's ``probe`` extra).
"""

from __future__ import annotations

import torch
from torch import nn


class MLPHead(nn.Module):
    """GAP (or CLS) → LayerNorm → Linear(D, hidden) → GELU → Dropout → Linear(hidden, C)."""

    pre_pooled = True
    ATTENTIVE = False
    SPARRTA_SCHEDULE = (1000, 200)

    def __init__(self, dim: int, num_classes: int = 4, dropout: float = 0.0, use_cls: bool = False, hidden: int | None = None):
        super().__init__()
        self.use_cls = use_cls
        hidden = hidden or max(64, dim // 2)
        self.norm = nn.LayerNorm(dim)
        self.fc1 = nn.Linear(dim, hidden)
        self.drop = nn.Dropout(dropout)
        self.fc2 = nn.Linear(hidden, num_classes)

    def pool(self, patches: torch.Tensor, prefix: torch.Tensor) -> torch.Tensor:
        if self.use_cls:
            if prefix.shape[1] == 0:
                raise ValueError("mlp head with CLS pooling needs a backbone with a CLS token")
            return prefix[:, 0].float()
        return patches.float().mean(dim=1)

    def classify(self, pooled: torch.Tensor) -> torch.Tensor:
        return self.fc2(self.drop(nn.functional.gelu(self.fc1(self.norm(pooled)))))

    def forward(self, patches: torch.Tensor, prefix: torch.Tensor) -> torch.Tensor:
        return self.classify(self.pool(patches, prefix))
