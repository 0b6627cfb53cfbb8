"""One shard skeleton for every rendering scenario: skip complete samples, make the rest in index
order on one render client, report each index as done, skipped or failed.

A scenario's ``run`` is then its config, where a sample's record lives, and a *maker*::

    def run(config, shard, out_dir, *, server, progress=None):
        cfg, out = Config.from_dict(config), Path(out_dir)
        return run_shard(shard, server, complete=lambda idx: record_exists(out, idx),
                         maker=lambda client, todo: Maker(cfg, client, out), progress=progress)

The maker is a context manager (entered once the client is open, exited before it closes: where
writer and lookahead threads start and drain) whose ``make_sample(index, upcoming)`` writes one sample
and returns its record; ``upcoming`` are the next indices of this shard (for scenarios that
prepare them ahead). A :class:`~sceneforge.core.errors.PlacementError` fails that sample only:
one hard sample must not cost the rest of the shard (a rerun resumes the failed ones). Rejection
counts come from each record's ``"rejections"`` and each error's.
"""

from __future__ import annotations

import contextlib
import time
from collections import Counter
from typing import Callable, ContextManager, Protocol, Sequence

from sceneforge.core.errors import PlacementError
from sceneforge.scenarios.contract import Shard, ShardResult


class Maker(Protocol):
    def make_sample(self, index: int, upcoming: Sequence[int]) -> dict | None: ...


def run_shard(
    shard: Shard,
    server: str,
    *,
    complete: Callable[[int], bool],
    maker: Callable[[object, list[int]], ContextManager[Maker] | Maker],
    progress=None,
    lookahead: int = 0,
) -> ShardResult:
    """Run one shard (see the module docstring); ``lookahead`` = how many next indices ``make_sample`` sees."""
    from sceneforge.engine.client import RenderClient  # ~11 ms: kept off `sceneforge --help` (the CLI parser imports this module)

    t0 = time.perf_counter()
    result = ShardResult(shard.shard_id)
    todo = []
    for idx in sorted(shard.indices):
        (result.skipped if complete(idx) else todo).append(idx)
    if todo:
        with RenderClient(server) as client:
            made = maker(client, todo)
            cm = made if hasattr(made, "__enter__") else contextlib.nullcontext(made)
            with cm as m:
                make_all(m, todo, result, progress, lookahead)
    result.seconds = time.perf_counter() - t0
    return result


def make_all(maker: Maker, todo: list[int], result: ShardResult, progress, lookahead: int) -> None:
    """The loop of :func:`run_shard` on an entered maker (benchmarks/generate.py times it on its own client)."""
    rejections: Counter = Counter(result.rejections)
    for k, idx in enumerate(todo):
        try:
            rec = maker.make_sample(idx, todo[k + 1 : k + 1 + lookahead])
        except PlacementError as e:
            result.failed[idx] = str(e)
            rejections.update(getattr(e, "rejections", None) or {})
            continue
        result.done.append(idx)
        rejections.update((rec or {}).get("rejections") or {})
        if progress is not None:
            progress(1)
    result.rejections = {k: v for k, v in rejections.items() if v > 0}
