"""The plugin's own tests: run from an installation (``pip install ./examples/sceneforge-height``,
then ``python -m pytest examples/sceneforge-height/tests``); .ci/run does."""

from __future__ import annotations

import json
from importlib import metadata
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from sceneforge import cli
from sceneforge.assets_manifest.library import shared_default_library
from sceneforge.engine.world import instance_color
from sceneforge.scenarios.contract import get_scenario


def test_the_entry_points_are_installed_and_name_the_classes():
    scenarios = {ep.name: ep.value for ep in metadata.entry_points(group="sceneforge.scenarios")}
    heads = {ep.name: ep.value for ep in metadata.entry_points(group="sceneforge.heads")}
    assert scenarios["height"] == "sceneforge_height.scenario:Height"
    assert heads["mlp"] == "sceneforge_height.heads:MLPHead"
    assert get_scenario("height").NAME == "height"  # through sceneforge's registry, by name


@pytest.fixture(scope="module")
def made(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("height") / "out"
    assert cli.main(["run", "height", "--n", "8", "--out", str(out), "--quiet", "--format", "png"]) == 0
    return out


def test_labels_are_the_3d_geometry(made):
    """Each label recomputed from the record's 3-D poses and the asset library's own sizes (not
    the sampler's shapes): the object whose top (base z + asset height, cm) is higher."""
    lib = shared_default_library()
    labels = []
    for i in range(8):
        rec = json.loads((made / "desert" / f"sample_{i:06d}.json").read_text())
        tops = {k: o["location"][2] + float(lib.size_cm(o["asset"])[2]) for k, o in rec["objects"].items()}
        assert rec["label"] == ("a" if tops["a"] > tops["b"] else "b"), (i, tops)
        assert abs(tops["a"] - tops["b"]) >= 30.0  # min_gap_cm: never a near tie
        for k, o in rec["objects"].items():
            assert o["top_cm"] == pytest.approx(tops[k], abs=1e-3)
        labels.append(rec["label"])
    assert set(labels) == {"a", "b"}  # both answers occur in 8 samples


def test_both_objects_are_in_the_image(made):
    """The mask holds both objects' instance colours (the server's visibility rule passed)."""
    for i in range(8):
        mask = np.asarray(Image.open(made / "desert" / f"mask_{i:06d}.png").convert("RGB"))
        for k in range(2):
            assert (mask == np.array(instance_color(k), dtype=mask.dtype)).all(axis=-1).sum() > 20, (i, k)


def test_the_table_lists_every_sample(made):
    import pandas as pd

    df = pd.read_parquet(made / "samples.parquet")
    assert list(df["index"]) == list(range(8)) and set(df["label"]) <= {"a", "b"}
    assert ((df["top_a_cm"] > df["top_b_cm"]) == (df["label"] == "a")).all()


def test_the_mlp_head_learns_what_a_linear_head_cannot():
    """XOR of two feature signs: a linear probe stays near chance, the MLP learns it."""
    torch = pytest.importorskip("torch")
    from sceneforge.probing.heads import make_head

    gen = torch.Generator().manual_seed(0)
    x = torch.randn(512, 16, 8, generator=gen)  # (N, patches, dim)
    y = ((x[:, :, 0].mean(1) > 0) ^ (x[:, :, 1].mean(1) > 0)).long()
    acc = {}
    for name in ("linear", "mlp"):
        torch.manual_seed(0)
        head = make_head(name, 8, 0.0, num_classes=2)
        pooled = head.pool(x, x[:, :0])
        opt = torch.optim.AdamW(head.parameters(), lr=1e-2)
        for _ in range(300):
            opt.zero_grad()
            torch.nn.functional.cross_entropy(head.classify(pooled), y).backward()
            opt.step()
        acc[name] = float((head(x, x[:, :0]).argmax(-1) == y).float().mean())
    assert acc["mlp"] > 0.9 and acc["linear"] < 0.7, acc
