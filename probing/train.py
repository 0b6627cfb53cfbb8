"""Training probe heads on cached tokens, as SpaRRTa does.

AdamW (weight decay 1e-3), batch 256, linear warmup then cosine decay to 0 (per step), a grid
over lr ∈ {1e-2, 1e-3, 1e-4} × dropout ∈ {0.2, 0.4, 0.6}; the configuration with the best
validation accuracy is selected and only then evaluated on test. Extra runs repeat the selected
configuration with new seeds (mean ± std in the reports). Everything is seeded: the same features
and config give the same numbers. The grid (and all heads asked for) trains as one stacked module
(:mod:`probing.grid`); ``TrainConfig(batched=False)`` trains every config alone, one after the
other (:func:`train_heads`): the reference the batched grid is tested and benchmarked against,
and the path of heads that cannot be stacked (AbMILP depth 2).

Example::

    data = ProbeSplits.from_index(patches, prefix, labels, {"train": ..., "val": ..., "test": ...})
    results = run_grid("efficient", data, TrainConfig(epochs=50, warmup=10))   # probing.selection
    by_head = run_grids(("linear", "efficient"), data, TrainConfig(patience=10))
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass, field

import numpy as np
import torch

from sceneforge.probing.heads import make_head, sparrta_schedules  # noqa: F401 (sparrta_schedules: ProbeConfig.train's)

log = logging.getLogger(__name__)
NUM_CLASSES = 4


@dataclass(frozen=True)
class TrainConfig:
    lrs: tuple[float, ...] = (1e-2, 1e-3, 1e-4)
    dropouts: tuple[float, ...] = (0.2, 0.4, 0.6)
    epochs: int = 100
    warmup: int = 20
    batch_size: int = 256
    weight_decay: float = 1e-3
    runs: int = 1
    seed: int = 0
    use_cls: bool = False
    epochs_by_head: dict = field(default_factory=dict)  # head -> (epochs, warmup), overrides
    patience: int = 0  # > 0: early stopping on val after this many epochs without a new best
    batched: bool = True  # False: each config trained alone (the reference; slower)
    # where the heads train: "cpu" (the tested default, bit-for-bit reproducible), "cuda" or
    # "cuda:N". Only the training moves: init and batch order (and the batched grid's dropout
    # masks) still come from seeded CPU generators; the returned heads live on the CPU. Heads
    # trained one by one (train_heads) use nn.Dropout, which draws on the device.
    device: str = "cpu"

    def schedule(self, head: str) -> tuple[int, int]:
        return tuple(self.epochs_by_head.get(head, (self.epochs, self.warmup)))  # type: ignore


class LazyRows:
    """Rows of a (memory-mapped) array, gathered only when indexed: ``lazy[rows]`` → tensor.

    Used when a split does not fit in memory (e.g. leave-one-env-out on 40k ViT-L images =
    21 GB of fp16 tokens): each batch then reads its rows from the page cache / disk.
    """

    def __init__(self, array, rows: np.ndarray):
        self.array, self.rows = array, rows
        self.shape = (len(rows), *array.shape[1:])

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, idx) -> torch.Tensor:
        rows = self.rows[idx.numpy() if isinstance(idx, torch.Tensor) else idx]
        order = np.argsort(rows, kind="stable")  # sequential reads, then restore the order
        out = np.empty((len(rows), *self.array.shape[1:]), dtype=self.array.dtype)
        out[order] = self.array[rows[order]]
        return torch.from_numpy(out)


@dataclass
class Part:
    """One split: tokens (float32 or fp16 tensors, or :class:`LazyRows`) and labels."""

    patches: "torch.Tensor | LazyRows"
    prefix: "torch.Tensor | LazyRows"
    y: torch.Tensor
    index: np.ndarray  # row numbers in the feature arrays (for attention-map samples)
    pooled: dict = field(default_factory=dict)  # cached GAP / CLS vectors for linear heads


@dataclass
class DeviceRows:
    """A :class:`LazyRows` whose gathered batches are moved to ``device`` (a split too large to
    copy to the accelerator once is still read per batch from the page cache)."""

    def __init__(self, rows: LazyRows, device: torch.device):
        self.rows, self.device, self.shape = rows, device, rows.shape

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, idx) -> torch.Tensor:
        return self.rows[idx].to(self.device, non_blocking=True)


def on_device(part: Part, device: str | torch.device) -> Part:
    """``part`` with its tokens and labels on ``device`` for training (the same object on the
    CPU, so nothing changes there): tensors are copied once, :class:`LazyRows` wrapped in
    :class:`DeviceRows`. Pooled vectors are recomputed on the device copy (once per split)."""
    device = torch.device(device)
    if device.type == "cpu":
        return part

    def move(x):
        return DeviceRows(x, device) if isinstance(x, LazyRows) else x.to(device)

    return Part(move(part.patches), move(part.prefix), part.y.to(device), part.index)


@dataclass
class ProbeSplits:
    train: Part
    val: Part
    test: Part

    @classmethod
    def from_index(
        cls,
        patches,
        prefix,
        labels: np.ndarray,
        idx: dict[str, np.ndarray],
        fp32_budget_bytes: int = 4 << 30,
        memory_budget_bytes: int = 8 << 30,
    ) -> "ProbeSplits":
        """Gather rows (memmap fancy indexing reads only those) for train/val/test.

        Tokens are converted to float32 once when they fit in ``fp32_budget_bytes`` (the per-step
        fp16 → fp32 copy was ~20 % of a training step); else kept fp16 in memory when they fit in
        ``memory_budget_bytes``; else read per batch from the cache (:class:`LazyRows`).
        """
        rows_total = sum(len(v) for v in idx.values())
        per_row = 4 * (int(np.prod(patches.shape[1:])) + int(np.prod(prefix.shape[1:])))
        dtype = np.float32 if rows_total * per_row <= fp32_budget_bytes else np.float16
        lazy = rows_total * per_row // 2 > memory_budget_bytes

        def part(rows: np.ndarray) -> Part:
            rows = np.asarray(rows, dtype=np.int64)
            if lazy:
                return Part(
                    LazyRows(patches, rows), LazyRows(prefix, rows), torch.from_numpy(labels[rows].astype(np.int64)), rows
                )
            return Part(
                torch.from_numpy(np.asarray(patches[rows], dtype=dtype)),
                torch.from_numpy(np.asarray(prefix[rows], dtype=dtype)),
                torch.from_numpy(labels[rows].astype(np.int64)),
                rows,
            )

        return cls(part(idx["train"]), part(idx["val"]), part(idx["test"]))


@dataclass
class Result:
    head: str
    lr: float
    dropout: float
    seed: int
    val_acc: float
    test_acc: float | None = None
    per_class: list[float] | None = None
    confusion: list[list[int]] | None = None
    seconds: float = 0.0
    selected: bool = False
    model: torch.nn.Module | None = None
    test_pred: np.ndarray | None = None  # class ids on the test split (selected runs only)


def lr_at(step: int, total: int, warmup: int, base: float) -> float:
    """Linear warmup over ``warmup`` steps, then cosine from ``base`` to 0 at ``total``."""
    if step < warmup:
        return base * (step + 1) / warmup
    progress = (step - warmup) / max(1, total - warmup)
    return 0.5 * base * (1.0 + math.cos(math.pi * min(1.0, progress)))


def pooled_inputs(head, part: Part) -> tuple[torch.Tensor, ...]:
    """Linear heads train on pooled (N, D) vectors, computed once per split and pooling mode
    (shared by the whole lr × dropout grid); others on tokens."""
    if getattr(head, "pre_pooled", False):
        key = "cls" if head.use_cls else "gap"
        if key not in part.pooled:
            with torch.inference_mode(False), torch.no_grad():  # reusable by training and predict
                part.pooled[key] = torch.cat(
                    [head.pool(part.patches[s : s + 1024], part.prefix[s : s + 1024]) for s in range(0, len(part.y), 1024)]
                )
        return (part.pooled[key],)
    return part.patches, part.prefix


def _step_logits(head, inputs: tuple[torch.Tensor, ...], rows) -> torch.Tensor:
    if len(inputs) == 1:
        return head.classify(inputs[0][rows])
    return head(inputs[0][rows].float(), inputs[1][rows].float())


def train_heads(
    name: str, splits: ProbeSplits, configs: list[tuple[float, float]], cfg: TrainConfig, seed: int
) -> list[torch.nn.Module]:
    """Train one ordinary head module per (lr, dropout), each with its own AdamW and nn.Dropout,
    on the same seeded init and batch order; heads do not share passes over the tokens.

    ``configs=[c]`` is one run alone, as SpaRRTa trains it: the reference for :mod:`probing.grid`.
    With ``cfg.patience`` each head keeps its best-val weights and stops like the grid's rows.
    Returns heads in eval mode, on the CPU (wherever ``cfg.device`` trained them).
    """
    gen = torch.Generator().manual_seed(seed)
    device = torch.device(cfg.device)
    dim = splits.train.patches.shape[-1]
    heads = []
    for _, dropout in configs:
        torch.manual_seed(seed)  # initialised on the CPU, then moved: the same init on every device
        heads.append(make_head(name, dim, dropout, NUM_CLASSES, use_cls=cfg.use_cls).to(device).train())
    opts = [torch.optim.AdamW(h.parameters(), lr=lr, weight_decay=cfg.weight_decay) for h, (lr, _) in zip(heads, configs)]
    train, val = on_device(splits.train, device), on_device(splits.val, device)
    inputs, y = pooled_inputs(heads[0], train), train.y
    epochs, warmup = cfg.schedule(name)
    steps_per_epoch = max(1, math.ceil(len(y) / cfg.batch_size))
    total, warm_steps, step = epochs * steps_per_epoch, warmup * steps_per_epoch, 0
    best: dict[int, tuple[float, int, dict]] = {}
    live = list(range(len(heads)))
    for epoch in range(epochs):
        if not live:
            break
        for rows in torch.randperm(len(y), generator=gen).split(cfg.batch_size):
            for k in live:
                for g in opts[k].param_groups:
                    g["lr"] = lr_at(step, total, warm_steps, configs[k][0])
            loss = sum(torch.nn.functional.cross_entropy(_step_logits(heads[k], inputs, rows), y[rows]) for k in live)
            for k in live:
                opts[k].zero_grad(set_to_none=True)
            loss.backward()
            for k in live:
                opts[k].step()
            step += 1
        if cfg.patience:
            live = [k for k in live if _keep_training(heads[k], val, best, k, epoch + 1, warmup, cfg.patience)]
    for k, (_, _, weights) in best.items():
        heads[k].load_state_dict(weights)
    return [h.cpu().eval() for h in heads]


def _keep_training(head, val: Part, best: dict, k: int, epoch: int, warmup: int, patience: int) -> bool:
    """Early stopping of one head: record its val accuracy (best weights kept in ``best[k]``);
    False once warm-up is over and its best is ``patience`` epochs old."""
    acc = scores(val.y.cpu().numpy(), predict(head.eval(), val))[0]
    head.train()
    if k not in best or acc > best[k][0]:
        best[k] = (acc, epoch, {n: t.detach().clone() for n, t in head.state_dict().items()})
    return epoch < warmup or epoch - best[k][1] < patience


@torch.inference_mode()
def predict(head, part: Part, batch_size: int = 512) -> np.ndarray:
    inputs = pooled_inputs(head, part)
    out = [
        _step_logits(head, inputs, torch.arange(s, min(s + batch_size, len(part.y)))).argmax(-1)
        for s in range(0, len(part.y), batch_size)
    ]
    return torch.cat(out).cpu().numpy() if out else np.zeros(0, dtype=np.int64)


def scores(y_true: np.ndarray, y_pred: np.ndarray) -> tuple[float, list[float], list[list[int]]]:
    """Accuracy, per-class accuracy (recall; NaN for an absent class) and confusion[true][pred]."""
    conf = np.zeros((NUM_CLASSES, NUM_CLASSES), dtype=np.int64)
    np.add.at(conf, (y_true, y_pred), 1)
    support = conf.sum(axis=1)
    per_class = [float(conf[i, i] / support[i]) if support[i] else float("nan") for i in range(NUM_CLASSES)]
    acc = float(np.trace(conf) / max(1, conf.sum()))
    return acc, per_class, conf.tolist()
