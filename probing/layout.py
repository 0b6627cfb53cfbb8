"""Layout baselines: what the objects' 2-D boxes alone say about the label, on the probe's split.

Why: a probe's accuracy means little on its own. On desert ego (issue 34) a small MLP that sees
only the source and target boxes from ``samples.parquet`` (no pixels) reaches 0.95 test accuracy,
the source box alone 0.59 (chance 0.25): a backbone that merely finds both objects can score high,
and one that finds only the source gets 0.59 for free. Every probe report therefore prints, next
to each (protocol, env, task) cell, what the layout gives on the *same* train/val/test rows.

Feature sets (:data:`BOX_SETS`): the source box, the target box, all boxes (source, target and,
where the table has it, the allocentric figure ``human``), and on allo the figure's box alone
(where the train rows have no figure, as on ego, that set is skipped). Per box: centre x, y,
width, height (as fractions of the image) and log area, standardised on the train rows.

The model is a one-hidden-layer MLP (64 ReLU units, float64), trained full batch with AdamW
(lr 1e-2, weight decay 1e-3, 400 steps, seeded) and the step kept by validation accuracy, checked
every 10 steps (like the probes: selection on val, test reported once); 0.3 s per baseline at
1,000 train rows.
Not a logistic model: the label compares two objects through perspective (depth from height in
the image and apparent size) and a single box's shortcut comes from the in-frame constraint, both
non-linear in box coordinates; a baseline that underfits the layout would flatter the probe.

Example::

    table = read_tables("data/desert_ego")       # probing.data: samples.parquet, *_bbox_*, split
    idx = {s: np.flatnonzero(table["split"] == s) for s in ("train", "val", "test")}
    layout_baselines(table, idx)   # {"source": Baseline(acc=0.59, ...), "target": ..., "boxes": ...}
    group_layout(table, groups)    # one record per (protocol, env, task, features): layout.jsonl
"""

from __future__ import annotations

import copy
from dataclasses import asdict, dataclass

import numpy as np
import pandas as pd

from sceneforge.probing.data import CLASSES
from sceneforge.probing.stats import wilson_ci

BOX_SETS: dict[str, tuple[str, ...]] = {
    "source": ("source",),
    "target": ("target",),
    "boxes": ("source", "target", "human"),  # human: allo only (ego rows have no figure box)
    "figure": ("human",),  # allo only: the allocentric figure's box alone (issue 46's third single box)
}
HIDDEN, STEPS, EVAL_EVERY, LR, WEIGHT_DECAY = 64, 400, 10, 1e-2, 1e-3


@dataclass(frozen=True)
class Baseline:
    """Test accuracy of one layout baseline on one (protocol, env, task) split."""

    features: str  # a key of BOX_SETS
    boxes: tuple[str, ...]  # the objects actually used (no figure on ego)
    acc: float
    n_test: int
    ci_lo: float
    ci_hi: float

    def as_dict(self) -> dict:
        return {**asdict(self), "boxes": list(self.boxes)}


def has_boxes(table: pd.DataFrame) -> bool:
    """True when the table has the source and target box columns (``sceneforge generate`` data)."""
    return all(f"{o}_bbox_{k}" in table for o in ("source", "target") for k in ("x0", "y0", "x1", "y1"))


def box_features(
    table: pd.DataFrame, objects: tuple[str, ...], rows: np.ndarray | None = None
) -> tuple[np.ndarray, tuple[str, ...]]:
    """(N, 5 per box) features of the boxes of ``objects`` present in ``table``; objects whose
    columns are missing or empty in every one of ``rows`` (default: all rows) are left out and not
    named. Why ``rows``: a probe's table holds ego and allo rows together, and the figure box
    exists only on allo rows; judged on the whole table, an ego group's "boxes" baseline claimed
    the figure and standardised an all-empty column (numpy's "Mean of empty slice" on every
    probe, issue 47)."""
    width = _column(table, "camera_width", 224.0)
    height = _column(table, "camera_height", 224.0)
    cols, used = [], []
    for obj in objects:
        names = [f"{obj}_bbox_{k}" for k in ("x0", "y0", "x1", "y1")]
        if not all(n in table for n in names):
            continue
        x0, y0, x1, y1 = (pd.to_numeric(table[n], errors="coerce").to_numpy(float) for n in names)
        if np.isnan(x0 if rows is None else x0[rows]).all():
            continue
        w, h = (x1 - x0 + 1) / width, (y1 - y0 + 1) / height  # inclusive pixel boxes
        cols += [(x0 + x1 + 1) / 2 / width, (y0 + y1 + 1) / 2 / height, w, h, np.log(np.clip(w * h, 1e-6, None))]
        used.append(obj)
    return (np.stack(cols, 1) if cols else np.zeros((len(table), 0))), tuple(used)


def _column(table: pd.DataFrame, name: str, default: float) -> np.ndarray:
    if name not in table:
        return np.full(len(table), default)
    values = pd.to_numeric(table[name], errors="coerce").to_numpy(float)
    return np.where(np.isfinite(values) & (values > 0), values, default)


def layout_baselines(table: pd.DataFrame, idx: dict[str, np.ndarray], seed: int = 0) -> dict[str, Baseline]:
    """The baselines (:data:`BOX_SETS`; the figure's alone only where the train rows have one) on
    rows ``idx['train'|'val'|'test']`` of ``table``
    (positional). Empty dict when the table has no box columns."""
    if not has_boxes(table):
        return {}
    y = np.asarray([CLASSES.index(str(v)) for v in table["label"]], dtype=np.int64)
    out = {}
    train = np.asarray(idx["train"], dtype=np.int64)
    for name, objects in BOX_SETS.items():
        x, used = box_features(table, objects, train)  # a box the train rows never have says nothing
        if not used:  # the figure alone on ego rows (no figure): no baseline, not a chance-level one
            continue
        acc = fit_mlp(x, y, idx, seed)
        n = len(idx["test"])
        out[name] = Baseline(name, used, acc, n, *wilson_ci(acc, n))
    return out


def group_layout(table: pd.DataFrame, groups) -> list[dict]:
    """Records for ``layout.jsonl``: one per (probe group, feature set), in group order.
    ``groups``: :class:`probing.sweep.Group` (protocol, env, task, positional ``idx``)."""
    records = []
    for g in groups:
        for b in layout_baselines(table, g.idx).values():
            records.append({"protocol": g.protocol, "env": g.env, "task": g.task, **b.as_dict()})
    return records


def fit_mlp(x: np.ndarray, y: np.ndarray, idx: dict[str, np.ndarray], seed: int = 0) -> float:
    """Test accuracy of a seeded one-hidden-layer MLP trained full batch on ``idx['train']``, the
    step chosen by accuracy on ``idx['val']`` (first best). Runs on one torch thread: at these
    sizes (thousands x 15) more threads only wait on each other, and under load a multi-threaded
    BLAS was 10x slower (numpy/OpenBLAS: 10 s instead of 0.8 s for three baselines)."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        z = torch.from_numpy(_standardise(x, idx["train"]))
        yt = torch.from_numpy(y)
        torch.manual_seed(seed)
        net = torch.nn.Sequential(
            torch.nn.Linear(z.shape[1], HIDDEN), torch.nn.ReLU(), torch.nn.Linear(HIDDEN, len(CLASSES))
        ).double()
        opt = torch.optim.AdamW(net.parameters(), lr=LR, weight_decay=WEIGHT_DECAY)
        train, val, test = (torch.tensor(np.asarray(idx[s], dtype=np.int64)) for s in ("train", "val", "test"))
        best_val, best = -1.0, copy.deepcopy(net.state_dict())
        for step in range(1, STEPS + 1):
            opt.zero_grad(set_to_none=True)
            torch.nn.functional.cross_entropy(net(z[train]), yt[train]).backward()
            opt.step()
            if step % EVAL_EVERY == 0:
                acc = _accuracy(net, z[val], yt[val])
                if acc > best_val:
                    best_val, best = acc, copy.deepcopy(net.state_dict())
        net.load_state_dict(best)
        return _accuracy(net, z[test], yt[test])
    finally:
        torch.set_num_threads(threads)


def _accuracy(net, x, y) -> float:
    import torch

    if not len(y):
        return float("nan")
    with torch.no_grad():
        return float((net(x).argmax(dim=1) == y).double().mean())


def _standardise(x: np.ndarray, train: np.ndarray) -> np.ndarray:
    """Train-row mean/std scaling; missing values (a box absent in some rows) become the mean.
    Counted by hand, not with ``np.nanmean``/``np.nanstd``: a column with no (or one) value in the
    train rows scales by 0 mean / unit std instead of warning ("Mean of empty slice", "Degrees of
    freedom <= 0") and relying on ``nan_to_num`` afterwards."""
    t = x[np.asarray(train, dtype=np.int64)]
    seen = np.isfinite(t)
    n = seen.sum(axis=0)
    mu = np.divide(np.where(seen, t, 0.0).sum(axis=0), n, out=np.zeros(x.shape[1]), where=n > 0)
    var = np.divide(np.where(seen, (t - mu) ** 2, 0.0).sum(axis=0), n, out=np.ones(x.shape[1]), where=n > 1)
    sd = np.sqrt(var)
    z = (x - mu) / np.where(sd > 1e-9, sd, 1.0)
    return np.nan_to_num(z, nan=0.0, posinf=0.0, neginf=0.0)
