"""Issue 47 item 6: an environment file accepts every class `sceneforge assets list` shows (the
procedural pack declares `water` and `street`; they were refused as "unknown class(es)"), a
misspelt class gets a suggestion, and `exclude_style_tags` keeps styles out (with `style_tags: []`
a grass scene drew snowy pines and palms)."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from sceneforge.assets_manifest.library import AssetLibrary
from sceneforge.core.errors import ConfigError
from sceneforge.scenarios.world.environments import load_env

TRIPLE = "triples:\n  - {id: rock_truck, source: rock, target: truck, viewpoint: human}\n"


def write_env(tmp_path, body: str, name: str = "meadow"):
    path = tmp_path / f"{name}.yaml"
    path.write_text(f"name: {name}\nground: {{color: [70, 110, 50], texture: grass}}\n{body}{TRIPLE}")
    return path


@pytest.fixture(scope="module")
def lib():
    return AssetLibrary.procedural()


def test_every_class_the_library_lists_is_accepted_without_passing_the_library(tmp_path, lib):
    """load_env(path) with no library (as `generate --env FILE` checks a file first): the
    accepted classes are the library's, pack-declared ones included."""
    classes = sorted(lib.classes())
    assert {"water", "street"} <= set(classes)
    path = write_env(tmp_path, f"clutter:\n  - {{classes: [{', '.join(classes)}], count: 1}}\n")
    env = load_env(path)
    assert set(classes) <= env.classes()
    water = write_env(tmp_path, "landmarks:\n  - {class: water, location_cm: [0, 5000], flat: true}\n", "pond")
    assert "water" in load_env(water).classes()


def test_a_misspelt_class_is_one_line_with_a_suggestion(tmp_path):
    path = write_env(tmp_path, "clutter:\n  - {classes: [tree, watr], count: 2}\n")
    with pytest.raises(ConfigError) as e:
        load_env(path)
    msg = str(e.value)
    assert "unknown class(es) or asset id(s) watr; did you mean 'water'?" in msg and "\n" not in msg
    assert "street" in msg and "water" in msg.split("known classes:")[1]


def tree_tags(path, lib, seeds=8) -> Counter:
    env = load_env(path, lib)
    tags = Counter()
    for seed in range(seeds):
        for a in env.clutter(np.random.default_rng(seed)):
            info = lib.info(a.asset_id)
            if info.cls == "tree":
                tags.update(["styled" if {"snow", "desert"} & set(info.tags) else "plain", "all"])
    return tags


def test_exclude_style_tags_keeps_snowy_variants_out(tmp_path, lib):
    trees = "clutter:\n  - {classes: [tree], count: [20, 30], ring_cm: [2000, 7000]}\n"
    assert any("snow" in lib.info(i.id).tags for i in lib.by_class("tree"))  # the library has snowy trees
    open_ = tree_tags(write_env(tmp_path, "style_tags: []\n" + trees, "open"), lib)
    assert open_["styled"] > 0 and open_["all"] > 100  # [] = every variant, the snowy ones too (as the doc says)
    kept = tree_tags(write_env(tmp_path, "style_tags: []\nexclude_style_tags: [snow, desert]\n" + trees, "kept"), lib)
    assert kept["styled"] == 0 and kept["all"] == open_["all"]
    env = load_env(write_env(tmp_path, "exclude_style_tags: [snow]\n" + trees, "v"), lib)
    assert env.variants("tree") and not any("snow" in lib.info(i).tags for i in env.variants("tree"))


def test_excluding_every_variant_of_a_class_is_one_line(tmp_path, lib):
    tags = sorted({t for i in lib.by_class("tree") for t in lib.info(i.id).tags})
    body = f"exclude_style_tags: [{', '.join(tags)}]\nclutter:\n  - {{classes: [tree], count: 3}}\n"
    env = load_env(write_env(tmp_path, body, "none"), lib)
    with pytest.raises(ConfigError, match=r"class 'tree': every variant \(.*\) carries an excluded style tag"):
        env.clutter(np.random.default_rng(0))
