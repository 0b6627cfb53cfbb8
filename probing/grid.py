"""The lr × dropout grid trained as one module: stacked parameters, one pass over the tokens.

Why: on CPU the attentive heads are memory-bound (a few FLOPs per token value), so 9 separate
runs of a head stream the tokens 9 times per epoch, and 3 heads 27 times. Here every head kind in
the grid is a :class:`HeadGrid`: each of the head's parameters stacked G times along a leading
config axis (all G from the same seeded init, as G runs with that seed would), a (G,) vector of
learning rates and of dropout rates, and AdamW moments per element (so each config keeps its own
optimizer state). :func:`train_grids` trains several kinds together: each batch is gathered once,
the attentive kinds' score rows are ONE GEMM over the tokens and their pooled vectors one bmm,
then LayerNorm → Dropout → Linear run batched over G; the summed loss keeps every config's
gradient its own. Linear heads train on pooled vectors computed once per split.

Early stopping (``TrainConfig.patience`` = N > 0): after every epoch the val accuracy of every
config still training comes from one more pass; each config keeps the weights of its best val
epoch, and once warm-up is over a config whose best is N epochs old stops and leaves the stack
(its rows are dropped from parameters and optimizer state, so a stopped config costs nothing).

Example::

    heads = train_grids({"efficient": [(1e-2, 0.2), (1e-3, 0.4)], "linear": [(1e-3, 0.2)]},
                        splits, TrainConfig(epochs=50, warmup=10, patience=10), seed=0)
    heads["efficient"][1]        # an ordinary EfficientHead (eval mode) for lr 1e-3, dropout 0.4
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from sceneforge.probing.heads import make_head
from sceneforge.probing.train import NUM_CLASSES, Part, ProbeSplits, TrainConfig, lr_at, on_device, pooled_inputs

BETA1, BETA2, EPS = 0.9, 0.999, 1e-8  # torch.optim.AdamW's defaults, as the heads trained alone
VAL_CHUNK = 512


class HeadGrid:
    """G configurations (lr, dropout) of one head kind as stacked tensors (see module docstring)."""

    def __init__(self, name: str, dim: int, configs: list[tuple[float, float]], cfg: TrainConfig, seed: int):
        torch.manual_seed(seed)
        self.name, self.dim, self.configs, self.use_cls = name, dim, list(configs), cfg.use_cls
        self.device = torch.device(cfg.device)
        self.template = make_head(name, dim, 0.0, NUM_CLASSES, use_cls=cfg.use_cls)  # the CPU init every device starts from
        g = len(configs)
        self.params = {
            n: p.detach().to(self.device).unsqueeze(0).repeat(g, *([1] * p.dim())).requires_grad_()
            for n, p in self.template.named_parameters()
        }
        self.moments = {n: (torch.zeros_like(p), torch.zeros_like(p)) for n, p in self.params.items()}
        self.active = list(range(g))  # config id of each stack row
        self.epochs, self.warmup = cfg.schedule(name)
        self.weight_decay = cfg.weight_decay
        self.pooled = bool(getattr(self.template, "pre_pooled", False))
        self.gen = torch.Generator().manual_seed(seed)  # dropout masks, drawn on the CPU on every device
        self.best: dict[int, tuple[float, int, dict]] = {}  # id -> (val acc, epoch, weights)

    def training(self, epoch: int) -> bool:
        return epoch < self.epochs and bool(self.active)

    def scores(self) -> torch.Tensor:
        return self.template.grid_scores(self.params)

    def logits(self, inputs: torch.Tensor, train: bool) -> torch.Tensor:
        """Pooled tokens (B, G·Q, D) or pooled vectors (B, D) → logits (G, B, C)."""
        p = self.params
        feats = self.template.grid_features(p, inputs)
        h = F.layer_norm(feats, feats.shape[-1:], eps=self.template.norm.eps)
        h = h * p["norm.weight"].unsqueeze(1) + p["norm.bias"].unsqueeze(1)  # (G, B, F)
        if train:
            rate = torch.tensor([self.configs[i][1] for i in self.active]).view(-1, 1, 1)
            keep = torch.rand(h.shape, generator=self.gen) >= rate
            rate = rate.to(self.device)
            h = h * keep.to(self.device) / (1.0 - rate)
        return torch.baddbmm(p["fc.bias"].unsqueeze(1), h, p["fc.weight"].transpose(1, 2))

    @torch.no_grad()
    def step(self, step: int, steps_per_epoch: int) -> None:
        """One AdamW step of every stack row with its own scheduled lr (torch.optim.AdamW's
        single-tensor update, written for a (G,) lr)."""
        total, warm = self.epochs * steps_per_epoch, self.warmup * steps_per_epoch
        lr = torch.tensor([lr_at(step, total, warm, self.configs[i][0]) for i in self.active]).to(self.device)
        bc1, bc2 = 1 - BETA1 ** (step + 1), math.sqrt(1 - BETA2 ** (step + 1))
        for name, p in self.params.items():
            m, v = self.moments[name]
            g, rate = p.grad, lr.view(-1, *([1] * (p.dim() - 1)))
            p.mul_(1 - rate * self.weight_decay)
            m.lerp_(g, 1 - BETA1)
            v.mul_(BETA2).addcmul_(g, g, value=1 - BETA2)
            p.addcdiv_(m * (rate / bc1), (v.sqrt() / bc2).add_(EPS), value=-1.0)
            p.grad = None

    def validate(self, correct: torch.Tensor, n: int, epoch: int, patience: int) -> None:
        """Record each row's val accuracy after ``epoch`` epochs; keep best weights; drop rows
        whose best is ``patience`` epochs old once warm-up is over."""
        keep = []
        for row, cid in enumerate(self.active):
            acc = float(correct[row]) / max(1, n)
            if cid not in self.best or acc > self.best[cid][0]:
                self.best[cid] = (acc, epoch, {k: p[row].detach().clone() for k, p in self.params.items()})
            if epoch < self.warmup or epoch - self.best[cid][1] < patience:
                keep.append(row)
        if len(keep) < len(self.active):
            idx = torch.tensor(keep, dtype=torch.long, device=self.device)
            self.params = {k: p.detach()[idx].clone().requires_grad_() for k, p in self.params.items()}
            self.moments = {k: (m[idx].clone(), v[idx].clone()) for k, (m, v) in self.moments.items()}
            self.active = [self.active[r] for r in keep]

    def heads(self) -> list[torch.nn.Module]:
        """Ordinary head modules (eval mode), one per config: its best-val weights when early
        stopping recorded them, else its final weights."""
        rows = {cid: row for row, cid in enumerate(self.active)}
        out = []
        for cid, (_, dropout) in enumerate(self.configs):
            head = make_head(self.name, self.dim, dropout, NUM_CLASSES, use_cls=self.use_cls)
            weights = self.best[cid][2] if cid in self.best else {k: p[rows[cid]].detach() for k, p in self.params.items()}
            head.load_state_dict(weights)
            out.append(head.eval())
        return out


def train_grids(
    grid: dict[str, list[tuple[float, float]]], splits: ProbeSplits, cfg: TrainConfig, seed: int
) -> dict[str, list[torch.nn.Module]]:
    """Train every (head, configs) of ``grid`` together on ``splits.train`` with the same seeded
    batch order (a head's results do not depend on which others share its passes).

    ``cfg.device`` is where the stack trains (train and val copied there once, :func:`on_device`);
    the batch order and dropout masks come from CPU generators, so a CUDA run sees the same
    batches and masks as the CPU run, and the heads returned are ordinary CPU modules."""
    dim = splits.train.patches.shape[-1]
    members = [HeadGrid(name, dim, configs, cfg, seed) for name, configs in grid.items()]
    train, val = on_device(splits.train, cfg.device), on_device(splits.val, cfg.device)
    y, order = train.y, torch.Generator().manual_seed(seed)
    steps_per_epoch, step = max(1, math.ceil(len(y) / cfg.batch_size)), 0
    for epoch in range(max(m.epochs for m in members)):
        live = [m for m in members if m.training(epoch)]
        if not live:
            break
        for rows in torch.randperm(len(y), generator=order).split(cfg.batch_size):
            logits = _logits(live, train, rows, train=True)
            target = y[rows]
            loss = sum(
                F.cross_entropy(lg.reshape(-1, NUM_CLASSES), target.repeat(lg.shape[0]), reduction="sum") / len(rows)
                for lg in logits
            )
            loss.backward()
            for m in live:
                m.step(step, steps_per_epoch)
            step += 1
        if cfg.patience:
            correct = _val_correct(live, val)
            for m, c in zip(live, correct):
                m.validate(c, len(val.y), epoch + 1, cfg.patience)
    return {m.name: m.heads() for m in members}


def _logits(members: list[HeadGrid], part: Part, rows: torch.Tensor, train: bool) -> list[torch.Tensor]:
    """(G, B, C) logits of every member on ``rows`` of ``part``, one pass over the tokens."""
    attentive = [m for m in members if not m.pooled]
    out: dict[int, torch.Tensor] = {}
    if attentive:
        x = part.patches[rows].float()
        w = [m.scores() for m in attentive]
        attn = torch.matmul(x, torch.cat(w).t()).transpose(1, 2).softmax(dim=-1)  # (B, ΣG·Q, P)
        z = torch.bmm(attn, x)
        for m, zk in zip(attentive, z.split([len(wk) for wk in w], dim=1)):
            out[id(m)] = m.logits(zk, train)
    for m in members:
        if m.pooled:
            out[id(m)] = m.logits(pooled_inputs(m.template, part)[0][rows], train)
    return [out[id(m)] for m in members]


@torch.no_grad()
def _val_correct(members: list[HeadGrid], part: Part) -> list[torch.Tensor]:
    """Correct val predictions per stack row of each member (no dropout), one pass."""
    correct = [torch.zeros(len(m.active), dtype=torch.long, device=part.y.device) for m in members]
    for s in range(0, len(part.y), VAL_CHUNK):
        rows = torch.arange(s, min(s + VAL_CHUNK, len(part.y)))
        for c, lg in zip(correct, _logits(members, part, rows, train=False)):
            c += (lg.argmax(-1) == part.y[rows]).sum(dim=1)
    return correct
