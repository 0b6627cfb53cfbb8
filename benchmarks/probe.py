"""Probing throughput: feature extraction vs the raw backbone forward, and the head grid from cache.

Run: ``python benchmarks/probe.py [--n-extract 256] [--n-grid 5000] [--epochs 10] [--threads 2]``
(or ``sceneforge bench probe ...``).

1. **Extraction**: ``extract_features`` end to end (PNG decode + preprocessing from the model's
   config + forward + fp16 memmap writes + content hash) on synthetic 224² PNGs, against the bare
   ``forward_intermediates`` call on the same images already decoded and in memory, same batch
   size, measured alternately in the same run (best of ``--repeats``). Target: ratio ≥ 0.90.
2. **Grid**: wall time of the full 3 heads × 9 (lr × dropout) grid for one layer × one env × one
   task: 5,000 images (4,000 train / 500 val / 500 test) read from an fp16 memmap cache of
   ViT-S/16 shape (196 patch tokens × 384). The features are **synthetic** (Gaussian tokens; four
   random patches per image carry a class vector, so the heads can learn and early stopping has
   something to stop on); head training does not look at where features came from. Rows, from
   the same run: the batched grid (all 27 configs as one module, :mod:`probing.grid`) with
   ``--epochs``, the same with early stopping (``--patience``), and the sequential grid (27
   separate runs, each config alone with its own AdamW: :func:`probing.train.train_heads`),
   measured over ``--sequential-epochs`` epochs per config and scaled to ``--epochs`` (without
   early stopping an epoch costs the same at every epoch; ``--sequential-epochs`` equal to
   ``--epochs`` measures it in full). Target: batched ≤ 10 min on 2 cores.

The backbone is a randomly initialised ``vit_small_patch16_224`` (no weights can be downloaded
here; speed does not depend on the weights).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402


def make_images(folder: Path, n: int, size: int = 224) -> list[str]:
    from PIL import Image

    rng = np.random.default_rng(0)
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for i in range(n):
        img = rng.integers(0, 255, (size // 8, size // 8, 3), dtype=np.uint8)
        p = folder / f"img_{i:05d}.png"
        Image.fromarray(img).resize((size, size), Image.BILINEAR).save(p)
        paths.append(str(p))
    return paths


def bench_extraction(tmp: Path, n: int, batch: int, layer: int, repeats: int):
    """Best-of-``repeats`` ([wall, CPU] images/s of the raw forward, same of extract_features),
    measured alternately so that load from other processes hits both about equally. Images per
    CPU-second (decode thread included) are far less sensitive to that load."""
    import torch

    from sceneforge.probing.backbones import create_backbone
    from sceneforge.probing.features import extract_features
    from sceneforge.probing.preprocess import load_batch

    paths = make_images(tmp / "imgs", n)
    bb = create_backbone("timm:vit_small_patch16_224", weights="random")
    batches = [torch.from_numpy(load_batch(paths[s : s + batch], bb.preprocess)) for s in range(0, n, batch)]
    bb.extract(batches[0][:2], [layer])  # warm-up (allocations, oneDNN kernels)
    raw, full = [0.0, 0.0], [0.0, 0.0]  # [images per wall second, images per CPU second]
    for r in range(repeats):
        t0, c0 = time.perf_counter(), time.process_time()
        with torch.inference_mode():
            for x in batches:
                bb.model.forward_intermediates(
                    x,
                    indices=[layer - 1],
                    return_prefix_tokens=True,
                    output_fmt="NLC",
                    norm=False,
                    stop_early=True,
                    intermediates_only=True,
                )
        raw = [max(raw[0], n / (time.perf_counter() - t0)), max(raw[1], n / (time.process_time() - c0))]
        t0, c0 = time.perf_counter(), time.process_time()
        extract_features(bb, paths, [layer], tmp / f"cache{r}", batch_size=batch, progress=False)
        full = [max(full[0], n / (time.perf_counter() - t0)), max(full[1], n / (time.process_time() - c0))]
    return raw, full


def grid_splits(tmp: Path, n: int):
    """5,000 synthetic ViT-S-shaped images (80/10/10) in an fp16 memmap, as the cache stores them."""
    from sceneforge.probing.train import ProbeSplits

    rng = np.random.default_rng(0)
    labels = rng.integers(0, 4, n)
    centres = rng.normal(0, 0.1, (4, 384)).astype(np.float16)  # weak: ~100 epochs to learn
    patches = np.lib.format.open_memmap(tmp / "patches.npy", "w+", np.float16, (n, 196, 384))
    for s in range(0, n, 500):
        block = rng.normal(0, 1, (min(500, n - s), 196, 384)).astype(np.float16)
        where = rng.integers(0, 196, (len(block), 4))
        block[np.arange(len(block))[:, None], where] += centres[labels[s : s + len(block)]][:, None, :]
        patches[s : s + len(block)] = block
    patches.flush()
    del patches
    patches = np.load(tmp / "patches.npy", mmap_mode="r")
    cut = [int(n * 0.8), int(n * 0.9)]
    idx = {"train": np.arange(cut[0]), "val": np.arange(cut[0], cut[1]), "test": np.arange(cut[1], n)}
    return ProbeSplits.from_index(patches, np.zeros((n, 1, 384), np.float16), labels, idx)


def bench_grid(
    tmp: Path, n: int, epochs: int, warmup: int, patience: int, seq_epochs: int
) -> dict[str, tuple[float, float, str]]:
    """(wall s, CPU s, note) per row. CPU seconds / threads is what the wall time would be on
    an idle machine."""
    import torch

    from sceneforge.probing.selection import run_grids
    from sceneforge.probing.train import TrainConfig, train_heads

    torch.optim.AdamW([torch.zeros(1, requires_grad=True)]).step()  # first use imports ~3 s of modules
    heads = ("linear", "abmilp", "efficient")
    rows = {}
    t0, c0 = time.perf_counter(), time.process_time()
    splits = grid_splits(tmp, n)
    rows["load from cache"] = (time.perf_counter() - t0, time.process_time() - c0, "")
    for name, p in (("batched", 0), (f"batched, patience {patience}", patience)):
        cfg = TrainConfig(epochs=epochs, warmup=warmup, patience=p)
        t0, c0 = time.perf_counter(), time.process_time()
        results = run_grids(heads, splits, cfg)
        note = "; ".join(f"{h} {next(r for r in rs if r.selected).test_acc:.3f}" for h, rs in results.items())
        rows[f"{name} grid"] = (time.perf_counter() - t0, time.process_time() - c0, "selected test acc: " + note)
    cfg = TrainConfig(epochs=seq_epochs, warmup=min(warmup, seq_epochs))
    t0, c0 = time.perf_counter(), time.process_time()
    for head in heads:
        for config in [(lr, dr) for lr in cfg.lrs for dr in cfg.dropouts]:
            train_heads(head, splits, [config], cfg, seed=0)
    scale = epochs / seq_epochs
    rows["sequential grid"] = (
        (time.perf_counter() - t0) * scale,
        (time.process_time() - c0) * scale,
        f"27 runs x {seq_epochs} epochs measured" + (f", x{scale:g} to {epochs}" if scale != 1 else ""),
    )
    return rows


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n-extract", type=int, default=256)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--repeats", type=int, default=3, help="extraction: best of N, alternating")
    ap.add_argument("--layer", type=int, default=12)
    ap.add_argument("--n-grid", type=int, default=5000)
    ap.add_argument("--epochs", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--patience", type=int, default=10, help="early stopping row (epochs)")
    ap.add_argument(
        "--sequential-epochs", type=int, default=2, help="epochs measured per config of the sequential grid (scaled to --epochs)"
    )
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--skip", choices=("extract", "grid"), action="append", default=[])
    args = ap.parse_args(argv)
    import torch

    torch.set_num_threads(args.threads)
    with tempfile.TemporaryDirectory() as tmp:
        if "extract" not in args.skip:
            raw, full = bench_extraction(Path(tmp) / "x", args.n_extract, args.batch, args.layer, args.repeats)
            print(
                f"extraction (vit_small_patch16_224, layer {args.layer}, batch {args.batch}, "
                f"{args.n_extract} PNGs, {args.threads} threads, best of {args.repeats})"
            )
            print(f"  raw forward        {raw[0]:8.1f} images/s wall  {raw[1]:8.1f} images/CPU-s")
            print(f"  extract_features   {full[0]:8.1f} images/s wall  {full[1]:8.1f} images/CPU-s")
            print(f"  ratio              {full[0] / raw[0]:8.3f} wall        {full[1] / raw[1]:8.3f} CPU (target >= 0.90)")
        if "grid" not in args.skip:
            rows = bench_grid(Path(tmp), args.n_grid, args.epochs, args.warmup, args.patience, args.sequential_epochs)
            print(
                f"head grid from cache ({args.n_grid} synthetic images: {int(args.n_grid * 0.8)} train, "
                f"196x384 tokens; 3 heads x 9 configs, {args.epochs} epochs, warmup {args.warmup}, "
                f"batch 256, {args.threads} threads)"
            )
            load = rows.pop("load from cache")
            print(f"  {'load from cache':28s} {load[0]:8.1f} s wall  {load[1]:8.1f} s CPU")
            for k, (w, c, note) in rows.items():
                print(
                    f"  {k:28s} {w:8.1f} s wall  {c:8.1f} s CPU  ({w / 60:.1f} min wall, "
                    f"{c / args.threads / 60:.1f} min CPU/threads)  {note}"
                )
            print("  target: batched grid <= 10 min on 2 cores")


if __name__ == "__main__":
    main(sys.argv[1:])
