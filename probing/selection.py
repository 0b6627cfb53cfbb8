"""The lr × dropout grid search and the selection, as SpaRRTa does it: every config of every head
trained (stacked in one module where the head allows: :mod:`probing.grid`, else one by one:
:func:`probing.train.train_heads`), the best by validation accuracy selected, test numbers for
every run, extra seeds for the selected config.

Example::

    by_head = run_grids(("linear", "efficient"), splits, TrainConfig(patience=10))
"""

from __future__ import annotations

import logging
import time

from sceneforge.probing.grid import train_grids
from sceneforge.probing.heads import make_head
from sceneforge.probing.train import NUM_CLASSES, ProbeSplits, Result, TrainConfig, predict, scores, train_heads

log = logging.getLogger(__name__)


def run_grid(name: str, splits: ProbeSplits, cfg: TrainConfig) -> list[Result]:
    """Full lr × dropout grid of one head with ``cfg.seed``; see :func:`run_grids`."""
    return run_grids((name,), splits, cfg)[name]


def run_grids(names, splits: ProbeSplits, cfg: TrainConfig) -> dict[str, list[Result]]:
    """The lr × dropout grid of every head in ``names``, trained together (one stacked module,
    shared passes over the tokens; :mod:`probing.grid`); per head the config with the best val
    accuracy is selected; test numbers for every run.

    With ``cfg.runs > 1`` the selected configuration is retrained with seeds ``seed+1 ...``; those
    runs are also marked ``selected`` (they are the repeated measurements of the chosen config).
    """
    configs = [(lr, dr) for lr in cfg.lrs for dr in cfg.dropouts]
    results = _fit({n: configs for n in names}, splits, cfg, cfg.seed)
    # ties: smaller lr, then more dropout
    best = {n: max(rs, key=lambda r: (r.val_acc, -r.lr, r.dropout)) for n, rs in results.items()}
    extra = {n: [] for n in names}
    for k in range(1, cfg.runs):
        for n, rs in _fit({n: [(b.lr, b.dropout)] for n, b in best.items()}, splits, cfg, cfg.seed + k).items():
            extra[n] += rs
    out = {}
    for n in names:
        for r in [best[n]] + extra[n]:
            r.selected = True
        for r in results[n] + extra[n]:  # selection above used val only
            pred = predict(r.model, splits.test)
            r.test_acc, r.per_class, r.confusion = scores(splits.test.y.numpy(), pred)
            if r.selected:
                r.test_pred = pred  # per-sample predictions (probe's predictions/*.csv)
            else:
                r.model = None  # free memory; only selected heads are kept (attention maps)
        out[n] = results[n] + extra[n]
    return out


def _fit(grid: dict[str, list[tuple[float, float]]], splits: ProbeSplits, cfg: TrainConfig, seed: int) -> dict[str, list[Result]]:
    """Train ``grid`` (head -> configs): stackable heads as one module when ``cfg.batched``, the
    rest config by config. ``Result.seconds``: the training wall time shared equally by configs."""
    t0 = time.perf_counter()
    dim = splits.train.patches.shape[-1]
    stacked = {
        n: c
        for n, c in grid.items()
        if cfg.batched and getattr(make_head(n, dim, 0.0, NUM_CLASSES, use_cls=cfg.use_cls), "stackable", False)
    }
    heads = train_grids(stacked, splits, cfg, seed) if stacked else {}
    for n, configs in grid.items():
        if n not in stacked:
            heads[n] = [m for c in configs for m in train_heads(n, splits, [c], cfg, seed)]
    seconds = (time.perf_counter() - t0) / max(1, sum(map(len, grid.values())))
    out = {}
    for n, configs in grid.items():
        out[n] = []
        for head, (lr, dropout) in zip(heads[n], configs):
            val_acc = scores(splits.val.y.numpy(), predict(head, splits.val))[0]
            log.info("%s lr=%g dropout=%g seed=%d: val %.3f", n, lr, dropout, seed, val_acc)
            out[n].append(Result(n, lr, dropout, seed, val_acc, seconds=seconds, model=head))
    return out
