"""Which rows a probe trains, selects and tests on: one :class:`Group` per (protocol, env, task).

Shared by the runner (:mod:`probing.sweep`) and the reports (:mod:`probing.report`, which
recomputes layout baselines of older runs on the same rows), so neither imports the other.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np

from sceneforge.core.errors import ConfigError

log = logging.getLogger(__name__)


@dataclass
class Group:
    protocol: str
    env: str
    task: str
    idx: dict[str, np.ndarray]


def make_groups(table, protocols: tuple[str, ...]) -> list[Group]:
    """Index sets per protocol/env/task; groups missing a split are skipped with a warning."""
    groups: list[Group] = []
    if "within" in protocols:
        for (env, task), g in table.groupby(["env", "task"], sort=True):
            groups.append(Group("within", env, task, {s: g.index[g["split"] == s].to_numpy() for s in ("train", "val", "test")}))
    if "loeo" in protocols:
        for task, t in table.groupby("task", sort=True):
            envs = sorted(t["env"].unique())
            if len(envs) < 2:
                log.warning("loeo: task %s has only env %s; skipped", task, envs)
            for env in envs if len(envs) > 1 else []:
                rest = t[t["env"] != env]
                groups.append(
                    Group(
                        "loeo",
                        env,
                        task,
                        {
                            "train": rest.index[rest["split"] == "train"].to_numpy(),
                            "val": rest.index[rest["split"] == "val"].to_numpy(),
                            "test": t.index[t["env"] == env].to_numpy(),
                        },
                    )
                )
    usable = []
    for g in groups:
        if all(len(v) for v in g.idx.values()):
            usable.append(g)
        else:
            log.warning(
                "%s %s/%s has an empty split (%s); skipped", g.protocol, g.env, g.task, {k: len(v) for k, v in g.idx.items()}
            )
    if not usable:
        raise ConfigError("--data: no env/task group has rows in all of train, val and test")
    return usable
