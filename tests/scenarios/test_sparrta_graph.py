"""SpaRRTa samples carry a complete scene record: the metric scene graph beside params, with
every clutter object's scale, and instance colours that match the mask."""

import json

import numpy as np
import pytest
from PIL import Image

from sparrta_helpers import generate


@pytest.mark.render
def test_sparrta_sample_has_a_scene_graph(server, tmp_path):
    cfg = {"envs": ["desert"], "tasks": ["allo"], "n": 1, "seed": 3, "masks": True}
    generate(cfg, tmp_path, server=server.address, progress=False)
    scene = next(tmp_path.glob("desert/allo/*/scene_0000.json"))
    g = json.loads(scene.read_text())
    params = json.loads(scene.with_name("params_0000.json").read_text())
    roles = [o["role"] for o in g["objects"]]
    assert roles[:2] == ["source", "target"] and roles[-1] == "human" and "clutter" in roles
    clutter = [o for o in g["objects"] if o["role"] == "clutter"]
    assert [c["scale"] for c in clutter] == [pytest.approx(c["scale"]) for c in params["clutter"]]
    assert [c["asset"] for c in clutter] == [c["asset"] for c in params["clutter"]]
    assert len(g["relations"]) == 6  # ordered pairs of source, target, human
    src = g["objects"][0]
    assert src["visible_ratio"] == pytest.approx(params["visibility"]["source"]["ratio"], abs=1e-6)
    # the source's instance colour covers exactly its visible pixels in the mask
    mask = np.asarray(Image.open(scene.with_name("mask_0000.png")).convert("RGB"))
    assert int((mask == src["color"]).all(-1).sum()) == src["visible_px"]
    assert g["camera"]["width"] == 224 and g["world"]["sun"]

    # finalize: one objects row per graph node, COCO instances that decode to the mask's pixels
    import pandas as pd

    from sceneforge.scenarios.output import coco_rle

    objs = pd.read_parquet(tmp_path / "objects.parquet")
    assert len(objs) == len(g["objects"]) and set(objs["role"]) >= {"source", "target", "human", "clutter"}
    coco = json.loads((tmp_path / "annotations.coco.json").read_text())
    src_ann = next(a for a in coco["annotations"] if a["sceneforge_object"] == "source")
    assert np.array_equal(coco_rle.decode(src_ann["segmentation"]), (mask == src["color"]).all(-1))


@pytest.mark.render
def test_a_scene_graph_failing_on_the_writer_thread_leaves_nothing_of_its_sample(server, tmp_path, monkeypatch):
    """The scene graph is built by the writer thread (``Session.describe`` binds its inputs,
    ``record.write_sample`` builds it before writing any of the sample's files): an error there
    stops the job with that error, leaves no file of that sample, and a rerun completes it."""
    import sceneforge.scenarios.sparrta.scenario as S

    real, calls = S.sample_graph, []

    def failing_second(*a, **k):
        calls.append(1)
        if len(calls) == 2:
            raise RuntimeError("scene graph failed")
        return real(*a, **k)

    monkeypatch.setattr(S, "sample_graph", failing_second)
    cfg = {"envs": ["desert"], "tasks": ["ego"], "n": 3, "seed": 5}
    with pytest.raises(Exception, match="scene graph failed"):
        generate(cfg, tmp_path, server=server.address)
    scenes = sorted(p.name for p in tmp_path.glob("desert/ego/*/scene_*.json"))
    images = sorted(p.name for p in tmp_path.glob("desert/ego/*/img_*.jpg"))
    assert len(scenes) == 1 and [s.replace("scene_", "img_").replace(".json", ".jpg") for s in scenes] == images
    monkeypatch.setattr(S, "sample_graph", real)
    generate(cfg, tmp_path, server=server.address)
    assert len(list(tmp_path.glob("desert/ego/*/scene_*.json"))) == 3
