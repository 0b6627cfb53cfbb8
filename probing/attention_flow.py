"""Attention flow between the objects of a relation (SpaRRTa's "Mechanism 2" analysis).

For a ViT backbone, per layer: of the attention that the patch tokens covering the **source**,
**target** and **viewpoint** object (camera task: no viewpoint object) give out, which share goes
to their own patches, to each other labelled object, to other objects (clutter), to the background
and to prefix tokens (CLS / registers)? Averaged over heads, over the object's patches and over
images. SpaRRTa reports that in a model that solves the task, source and target tokens attend to
each other (and to the viewpoint) increasingly with depth; a random init should not.

Objects come from the dataset's instance masks (``sceneforge generate --masks``: ``mask_file``
column, colours in ``params_file`` → ``mask_colors``), mapped through the backbone's own
resize/crop and pooled to the patch grid: a patch belongs to an object when ≥ ``min_cover`` (0.2) of its
pixels do (each patch at most one object: the largest cover).

Example::

    flow = attention_flow(bb, table.iloc[:32])      # {"layers": [...], "roles": {...}}
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

import numpy as np
from PIL import Image

from sceneforge.core.errors import ConfigError
from sceneforge.probing.preprocess import center_crop, resize_shorter_edge

log = logging.getLogger(__name__)
ROLES = ("source", "target", "viewpoint")
SINKS = ("self", "source", "target", "viewpoint", "other objects", "background", "prefix")


def _attn_inputs(model):
    """Forward pre-hooks on every block's attention module; returns (store, handles)."""
    store: list = []
    handles = [blk.attn.register_forward_pre_hook(lambda m, args, s=store: s.append((m, args[0]))) for blk in model.blocks]
    return store, handles


def _probs(attn_module, x):
    """Attention probabilities (B, H, N, N) of a timm ``Attention`` module on its input ``x``."""
    import torch

    b, n, c = x.shape
    h = attn_module.num_heads
    qkv = attn_module.qkv(x).reshape(b, n, 3, h, c // h).permute(2, 0, 3, 1, 4)
    q, k = qkv[0], qkv[1]
    q, k = attn_module.q_norm(q), attn_module.k_norm(k)
    return torch.softmax((q * attn_module.scale) @ k.transpose(-2, -1), dim=-1)


def object_grid(mask_rgb: np.ndarray, colors: dict, pre, grid: tuple[int, int], min_cover: float = 0.2) -> np.ndarray:
    """(gh*gw,) int labels: 1 source, 2 target, 3 viewpoint, 4 other object, 0 background."""
    ids = np.zeros(mask_rgb.shape[:2], np.uint8)
    anything = mask_rgb.reshape(-1, 3).any(1).reshape(mask_rgb.shape[:2])
    ids[anything] = 4
    for i, role in enumerate(("source", "target", "human"), start=1):
        c = colors.get(role)
        if c is not None:
            ids[(mask_rgb == np.asarray(c, np.uint8)).all(-1)] = i
    im = Image.fromarray(ids)
    if pre.resize_hw is not None:
        im = im.resize((pre.resize_hw[1], pre.resize_hw[0]), Image.NEAREST)
    elif pre.resize_shorter is not None:
        im = resize_shorter_edge(im, pre.resize_shorter, Image.NEAREST)
    if pre.crop_hw is not None:
        im = center_crop(im.convert("RGB"), pre.crop_hw).getchannel(0)
    a = np.asarray(im)
    gh, gw = grid
    ph, pw = a.shape[0] // gh, a.shape[1] // gw
    cells = a[: gh * ph, : gw * pw].reshape(gh, ph, gw, pw).transpose(0, 2, 1, 3).reshape(gh * gw, ph * pw)
    cover = np.stack([(cells == k).mean(1) for k in range(5)], 1)  # (P, 5)
    lab = np.zeros(gh * gw, np.int64)
    obj = cover[:, 1:].argmax(1) + 1
    keep = cover[np.arange(len(obj)), obj] >= min_cover
    lab[keep] = obj[keep]
    return lab


def attention_flow(backbone, rows, batch: int = 8) -> dict:
    """Per-layer attention shares from each role's patches (see module docstring).

    ``rows``: table rows (pandas) with ``path``, ``params_path``, ``mask_path`` and ``task``.
    """
    import torch

    model = backbone.model
    if not hasattr(model, "blocks") or not all(hasattr(b, "attn") and hasattr(b.attn, "qkv") for b in model.blocks):
        raise ConfigError(f"attention flow: {backbone.spec} is not a timm ViT (blocks[i].attn.qkv)")
    pre = backbone.preprocess
    n_layers = len(model.blocks)
    sums = np.zeros((n_layers, 3, len(SINKS)))
    counts = np.zeros((n_layers, 3))
    images = 0
    rows = list(rows.itertuples(index=False))
    for s in range(0, len(rows), batch):
        chunk = rows[s : s + batch]
        x = np.stack([pre(Image.open(r.path)) for r in chunk])
        store, handles = _attn_inputs(model)
        try:
            with torch.inference_mode():
                tokens = model.forward_features(torch.from_numpy(x))
        finally:
            for h in handles:
                h.remove()
        k_prefix = tokens.shape[1] - _grid_size(model, x)
        grid = _grid(model, x)
        labels = []
        for r in chunk:
            colors = json.loads(Path(r.params_path).read_text()).get("mask_colors", {})
            with Image.open(r.mask_path) as m:
                labels.append(object_grid(np.asarray(m.convert("RGB")), colors, pre, grid))
        images += len(chunk)
        for li, (mod, inp) in enumerate(store):
            with torch.inference_mode():
                probs = _probs(mod, inp).mean(1).numpy()  # (B, N, N), mean over heads
            for bi, lab in enumerate(labels):
                _accumulate(probs[bi], lab, k_prefix, sums[li], counts[li])
    shares = np.divide(sums, counts[..., None], out=np.full_like(sums, np.nan), where=counts[..., None] > 0)
    return {
        "backbone": backbone.spec,
        "images": images,
        "layers": list(range(1, n_layers + 1)),
        "sinks": list(SINKS),
        "patches_per_role": {r: int(counts[0, i]) for i, r in enumerate(ROLES)},
        "roles": {r: shares[:, i].round(5).tolist() for i, r in enumerate(ROLES)},
    }


def _accumulate(p: np.ndarray, lab: np.ndarray, k: int, sums: np.ndarray, counts: np.ndarray) -> None:
    """Add one image's shares: ``p`` (N, N) rows = queries; patch tokens start at ``k``."""
    patch = p[k:, :]  # queries = patch tokens
    to_prefix = patch[:, :k].sum(1)
    to = {c: patch[:, k:][:, lab == c].sum(1) for c in range(5)}
    for ri in range(3):
        q = lab == ri + 1
        if not q.any():
            continue
        row = np.zeros(len(SINKS))
        row[0] = to[ri + 1][q].sum()
        for ci, name in ((1, "source"), (2, "target"), (3, "viewpoint")):
            if ci != ri + 1:
                row[SINKS.index(name)] = to[ci][q].sum()
        row[SINKS.index("other objects")] = to[4][q].sum()
        row[SINKS.index("background")] = to[0][q].sum()
        row[SINKS.index("prefix")] = to_prefix[q].sum()
        sums[ri] += row
        counts[ri] += q.sum()


def _grid(model, x) -> tuple[int, int]:
    pe = model.patch_embed
    if hasattr(pe, "dynamic_feat_size"):
        return tuple(int(v) for v in pe.dynamic_feat_size(tuple(x.shape[-2:])))
    ph, pw = pe.patch_size
    return x.shape[-2] // ph, x.shape[-1] // pw


def _grid_size(model, x) -> int:
    gh, gw = _grid(model, x)
    return gh * gw
