"""What one (train image × epoch) of the study's head grid costs at the batch sizes a study uses
(``study.config.batch_for``: 32 at n_train 300, 62 at 1,000, 250 at 4,000): the measurement behind
``study.plan.HEAD_BATCH_FIT``. The 3-head × 9-config grid (``probing.grid.train_grids``) on random
ViT-S/14-shaped tokens (256 × 384, fp16 like the feature cache), no early stopping, 2 threads.

    python benchmarks/study_head_cost.py          # one line per train size: wall and CPU ms per image x epoch
"""

from __future__ import annotations

import time

import numpy as np
import torch

from sceneforge.probing.grid import train_grids
from sceneforge.probing.train import ProbeSplits, TrainConfig
from sceneforge.study.config import batch_for


def main() -> None:
    torch.set_num_threads(2)
    rng = np.random.default_rng(0)
    for n, epochs in ((300, 6), (1000, 3), (4000, 1)):
        tokens, width = 256, 384
        patches = rng.standard_normal((n + 40, tokens, width)).astype(np.float16)
        prefix = rng.standard_normal((n + 40, 1, width)).astype(np.float16)
        labels = rng.integers(0, 4, n + 40)
        idx = {"train": np.arange(n), "val": np.arange(n, n + 20), "test": np.arange(n + 20, n + 40)}
        splits = ProbeSplits.from_index(patches, prefix, labels, idx)
        batch = batch_for(n)
        cfg = TrainConfig(epochs=epochs, warmup=0, batch_size=batch)
        configs = [(lr, d) for lr in cfg.lrs for d in cfg.dropouts]
        t0, c0 = time.perf_counter(), time.process_time()
        train_grids({h: configs for h in ("linear", "abmilp", "efficient")}, splits, cfg, 0)
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        steps = epochs * -(-n // batch)
        print(
            f"n_train {n} batch {batch} epochs {epochs} ({steps} steps): wall {wall:.1f} s, CPU {cpu:.1f} s; "
            f"per image x epoch: wall {1000 * wall / (n * epochs):.2f} ms, CPU {1000 * cpu / (n * epochs):.2f} ms",
            flush=True,
        )


if __name__ == "__main__":
    main()
