"""Layout baselines without torch: what one object's 2-D box (or all of them) says about a label.

Why here: the dataset card of ``sceneforge generate`` (scenarios/) states, for every (env, task),
how well an MLP that sees only the labelled objects' boxes from the table predicts the label, on
the dataset's own train/val/test split (issue 46: a probe's number means little next to a box
that predicts the label alone). The base install has no torch and scenarios may not import
probing/, so the same model as ``probing/layout.py`` is written here in numpy (float64):

* features per box (:func:`box_features`): centre x, y, width, height (fractions of the image)
  and log area; boxes are inclusive pixel boxes ``x0, y0, x1, y1`` as the table writes them;
* a one-hidden-layer MLP (64 ReLU units), standardised on the train rows, trained full batch
  with AdamW (lr 1e-2, weight decay 1e-3, 400 steps), the step kept by validation accuracy
  checked every 10 steps (first best), test accuracy reported once.

Seeded and single-threaded arithmetic on the given rows: the same table gives the same numbers
(the card stays byte-identical at any worker count). Numbers agree with probing/layout.py's
torch model within sampling noise, not to the digit (different initial weights).

Example::

    rows = [{"label": "left", "split": "train", "source_bbox_x0": 10, ...}, ...]
    layout_baselines(rows, {"source": ("source",), "boxes": ("source", "target")})
    # {"source": {"acc": 0.31, "n_test": 100, "boxes": ["source"]}, "boxes": {...}}
"""

from __future__ import annotations

import math
from typing import Iterable, Mapping, Sequence

import numpy as np

HIDDEN, STEPS, EVAL_EVERY, LR, WEIGHT_DECAY = 64, 400, 10, 1e-2, 1e-3
BETAS, EPS = (0.9, 0.999), 1e-8


def box_features(rows: Sequence[Mapping], objects: Iterable[str], size_key: str = "camera_width") -> tuple[np.ndarray, list[str]]:
    """(N, 5 per box) features of the boxes of ``objects``; an object without a box in every row
    (the figure on ego) is left out and not named in the returned list."""
    cols, used = [], []
    for obj in objects:
        keys = [f"{obj}_bbox_{k}" for k in ("x0", "y0", "x1", "y1")]
        vals = np.array([[_num(r.get(k)) for k in keys] for r in rows], dtype=np.float64).reshape(len(rows), 4)
        if not len(rows) or np.isnan(vals).all():
            continue
        width = np.array([_num(r.get(size_key), 224.0) for r in rows])
        height = np.array([_num(r.get("camera_height"), 224.0) for r in rows])
        x0, y0, x1, y1 = vals.T
        w, h = (x1 - x0 + 1) / width, (y1 - y0 + 1) / height  # inclusive pixel boxes
        cols += [(x0 + x1 + 1) / 2 / width, (y0 + y1 + 1) / 2 / height, w, h, np.log(np.clip(w * h, 1e-6, None))]
        used.append(obj)
    return (np.stack(cols, 1) if cols else np.zeros((len(rows), 0))), used


def _num(v, default: float = math.nan) -> float:
    try:
        f = float(v)
    except (TypeError, ValueError):
        return default
    return f if math.isfinite(f) else default


def fit_mlp(x: np.ndarray, y: np.ndarray, idx: Mapping[str, np.ndarray], classes: int, seed: int = 0) -> float:
    """Test accuracy of the seeded MLP trained on ``idx['train']``, its step chosen on ``idx['val']``."""
    train, val, test = (np.asarray(idx[s], dtype=np.int64) for s in ("train", "val", "test"))
    if not len(train) or not len(test) or x.shape[1] == 0:
        return float("nan")
    z = _standardise(x, train)
    rng = np.random.default_rng(seed)
    b1, b2 = 1.0 / math.sqrt(z.shape[1]), 1.0 / math.sqrt(HIDDEN)  # torch.nn.Linear's default init range
    params = [
        rng.uniform(-b1, b1, (z.shape[1], HIDDEN)),
        rng.uniform(-b1, b1, HIDDEN),
        rng.uniform(-b2, b2, (HIDDEN, classes)),
        rng.uniform(-b2, b2, classes),
    ]
    m = [np.zeros_like(p) for p in params]
    v = [np.zeros_like(p) for p in params]
    onehot = np.eye(classes)[y[train]]
    best_val, best = -1.0, [p.copy() for p in params]
    xt = z[train]
    for step in range(1, STEPS + 1):
        w1, c1, w2, c2 = params
        hid = np.maximum(xt @ w1 + c1, 0.0)
        logits = hid @ w2 + c2
        logits -= logits.max(axis=1, keepdims=True)
        prob = np.exp(logits)
        prob /= prob.sum(axis=1, keepdims=True)
        g = (prob - onehot) / len(train)  # d(mean cross-entropy)/d(logits)
        gh = (g @ w2.T) * (hid > 0)
        grads = [xt.T @ gh, gh.sum(0), hid.T @ g, g.sum(0)]
        for k, (p, gr) in enumerate(zip(params, grads)):  # AdamW (decoupled weight decay), as torch
            p *= 1.0 - LR * WEIGHT_DECAY
            m[k] = BETAS[0] * m[k] + (1 - BETAS[0]) * gr
            v[k] = BETAS[1] * v[k] + (1 - BETAS[1]) * gr * gr
            mh, vh = m[k] / (1 - BETAS[0] ** step), v[k] / (1 - BETAS[1] ** step)
            p -= LR * mh / (np.sqrt(vh) + EPS)
        if step % EVAL_EVERY == 0 and len(val):
            acc = _accuracy(params, z[val], y[val])
            if acc > best_val:
                best_val, best = acc, [p.copy() for p in params]
    return _accuracy(best if len(val) else params, z[test], y[test])


def _accuracy(params, x: np.ndarray, y: np.ndarray) -> float:
    w1, c1, w2, c2 = params
    return float(np.mean(np.argmax(np.maximum(x @ w1 + c1, 0.0) @ w2 + c2, axis=1) == y))


def _standardise(x: np.ndarray, train: np.ndarray) -> np.ndarray:
    """Train-row mean/std scaling; missing values become the mean (0)."""
    mu, sd = np.nanmean(x[train], axis=0), np.nanstd(x[train], axis=0)
    z = (x - np.nan_to_num(mu)) / np.where(np.nan_to_num(sd) > 1e-9, np.nan_to_num(sd), 1.0)
    return np.nan_to_num(z, nan=0.0, posinf=0.0, neginf=0.0)


def layout_baselines(
    rows: Sequence[Mapping], box_sets: Mapping[str, Sequence[str]], labels: Sequence[str], seed: int = 0
) -> dict:
    """Test accuracy of each feature set of ``box_sets`` on ``rows`` (each with ``label`` and
    ``split``), chance ``1/len(labels)``: ``{name: {"acc", "n_test", "boxes"}}``; a set whose
    boxes are absent from every row (the figure on ego) is left out."""
    y = np.array([list(labels).index(str(r["label"])) for r in rows], dtype=np.int64)
    split = np.array([str(r.get("split")) for r in rows])
    idx = {s: np.flatnonzero(split == s) for s in ("train", "val", "test")}
    out = {}
    for name, objects in box_sets.items():
        x, used = box_features(rows, objects)
        if not used:
            continue
        acc = fit_mlp(x, y, idx, len(labels), seed)
        out[name] = {"acc": None if math.isnan(acc) else round(acc, 4), "n_test": int(len(idx["test"])), "boxes": used}
    return out
