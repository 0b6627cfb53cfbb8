"""Issue 33 item 7: `sceneforge demo` leaves every task a test split a probe report accepts, while
`generate` keeps its 80/10/10 splits and byte-identical outputs (no rendering here: the splits are
computed on records shaped as the demo's)."""

from __future__ import annotations

from collections import Counter

import pytest

from sceneforge.core.errors import ConfigError
from sceneforge.probing.report import MIN_TEST
from sceneforge.scenarios.sampling.relations import LABELS
from sceneforge.scenarios.sparrta.card import with_splits
from sceneforge.scenarios.sparrta.config import parse_config
from sceneforge.scenarios.output.writers import SPLIT_PATTERN
from sceneforge.cli import build_parser
from sceneforge.commands import demo


def demo_rows(cfg):
    """Records (``{"row": ...}``) laid out as the job's units: env, task, triple, unit index, label."""
    from sceneforge.scenarios.sparrta.setting import units_of

    from sceneforge.scenarios.sparrta.card import FIRST_COLUMNS

    blank = dict.fromkeys(FIRST_COLUMNS)
    return [
        {
            "row": {
                **blank,
                "index": u.start + i,
                "env": u.env,
                "task": u.task,
                "triple_id": u.triple_id,
                "unit_index": i,
                "label": u.label(i),
            }
        }
        for u in units_of(cfg)
        for i in range(u.n)
    ]


def split_counts(cfg) -> Counter:
    rows = with_splits(demo_rows(cfg), cfg.samples_per_scene, cfg.split_pattern)
    return Counter((r["task"], r["split"]) for r in rows)


def test_the_demo_leaves_each_task_enough_test_images_to_probe():
    args = build_parser().parse_args(["demo"])
    cfg = parse_config(demo.demo_config(args.n, args.env, args.seed), "demo")
    counts = split_counts(cfg)
    for task in ("ego", "allo"):
        assert counts[(task, "test")] >= MIN_TEST, counts  # was 1 per task (16 images, 80/10/10)
        assert counts[(task, "train")] >= counts[(task, "test")] and counts[(task, "val")] >= 16, counts
    rows = with_splits(demo_rows(cfg), cfg.samples_per_scene, cfg.split_pattern)
    for (task, split), n in counts.items():  # balanced labels in every split
        c = Counter(r["label"] for r in rows if r["task"] == task and r["split"] == split)
        assert set(c) == set(LABELS) and max(c.values()) - min(c.values()) <= 1, (task, split, c)


def test_generate_keeps_its_splits_and_fingerprint():
    raw = {"envs": ["desert"], "tasks": ["ego", "allo"], "n": 96, "seed": 0}
    cfg = parse_config(dict(raw))
    assert "split_pattern" not in cfg.to_dict()  # the fingerprint of every old config holds
    assert cfg.fingerprint() == parse_config({**raw, "split_pattern": None}).fingerprint()
    assert cfg.fingerprint() != parse_config({**raw, "split_pattern": list(SPLIT_PATTERN)}).fingerprint()
    counts = split_counts(cfg)
    # 24 scenes per task, the k-th to SPLIT_PATTERN[k % 10], as before
    assert [counts[("ego", s)] for s in ("train", "val", "test")] == [72, 12, 12]


@pytest.mark.parametrize("pattern", [[], ["train", "test"], ["train", "val", "tset"], "train"])
def test_a_bad_split_pattern_is_one_line(pattern):
    with pytest.raises(ConfigError, match="split_pattern"):
        parse_config({"split_pattern": pattern}, "my.yaml")
