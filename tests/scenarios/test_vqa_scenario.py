"""The VQA scenario end to end on the session's render server: scenes, records, questions,
COCO annotations, byte-identical re-rendering from the record, resume, degraded variants."""

import json

import numpy as np
import pandas as pd
import pytest
from PIL import Image

from sceneforge.core.errors import ConfigError
from sceneforge.scenarios.contract import Shard
from sceneforge.scenarios.output import coco_rle
from sceneforge.scenarios.vqa import scenario
from sceneforge.scenarios.vqa.record import rerender

CFG = {"envs": ["desert"], "n": 2, "image_size": 192, "min_bbox_px": 16, "depth": True, "seed": 1}


def test_vqa_scenario_end_to_end(tmp_path, server, render_client):
    res = scenario.run(CFG, Shard(0, (0, 1)), tmp_path, server=server.address)
    assert sorted(res.done) == [0, 1] and not res.failed
    stats = scenario.finalize(CFG, tmp_path)
    assert stats["images"] == 2 and stats["questions"] > 0
    qs = [json.loads(line) for line in (tmp_path / "questions.jsonl").read_text().splitlines()]
    rec = json.loads((tmp_path / "desert" / "scene_000000.json").read_text())
    names = {o["name"]: o for o in rec["graph"]["objects"]}
    graphs = {i: json.loads((tmp_path / "desert" / f"scene_{i:06d}.json").read_text())["graph"] for i in (0, 1)}
    for q in qs:  # only objects passing the (scaled) CRISP rule are asked about
        for n in q["objects"]:
            obj = next(x for x in graphs[q["index"]]["objects"] if x["name"] == n)
            x0, y0, x1, y1 = obj["box2d"]
            assert obj["visible_ratio"] >= 0.8 and max(x1 - x0, y1 - y0) + 1 >= 16
    # the record replays to the same bytes
    assert rerender(rec, render_client) == (tmp_path / rec["files"]["image"]).read_bytes()
    # COCO masks are the instance mask's pixels of each object
    coco = json.loads((tmp_path / "annotations.coco.json").read_text())
    mask = np.asarray(Image.open(tmp_path / rec["files"]["mask"]).convert("RGB"))
    for a in (a for a in coco["annotations"] if a["image_id"] == 1):
        sel = (mask == names[a["sceneforge_object"]]["color"]).all(-1)
        assert np.array_equal(coco_rle.decode(a["segmentation"]), sel) and a["area"] == int(sel.sum())
    objs = pd.read_parquet(tmp_path / "objects.parquet")
    assert len(objs) == sum(len(g["objects"]) for g in graphs.values())
    # resume: nothing redone
    again = scenario.run(CFG, Shard(0, (0, 1)), tmp_path, server=server.address)
    assert sorted(again.skipped) == [0, 1] and not again.done
    # sample 1 made alone (another shard, after another scene was on the server) is the same bytes
    other = tmp_path / "other"
    scenario.run(CFG, Shard(3, (1,)), other, server=server.address)
    for f in ("img_000001.jpg", "mask_000001.png", "depth_000001.npy", "scene_000001.json"):
        assert (other / "desert" / f).read_bytes() == (tmp_path / "desert" / f).read_bytes(), f


def test_vqa_config_errors():
    with pytest.raises(ConfigError, match="unknown field"):
        scenario.parse_config({"envs": ["desert"], "n": 1, "bogus": 1})
    with pytest.raises(ConfigError, match=r"vqa config: n must be an integer in \[1, inf\], got 0"):
        scenario.parse_config({"n": 0})
    with pytest.raises(ConfigError, match=r"q.yaml: margin_deg must be a number in \[0, 44.9\], got 50"):
        scenario.parse_config({"margin_deg": 50}, "q.yaml")
    with pytest.raises(ConfigError, match=r"count_group must be 0 \(no counting group\) or 2..12 instances"):
        scenario.parse_config({"count_group": 1})
    with pytest.raises(ConfigError, match=r"count_group must be an integer in \[0, 12\], got 13"):
        scenario.parse_config({"count_group": 13})
    with pytest.raises(ConfigError, match=r"min_askable must be in \[1, max_objects \(4\)\], got 5"):
        scenario.parse_config({"max_objects": 4, "min_askable": 5})


def test_vqa_cli_generate_render_record_and_eval(tmp_path, server, capsys):
    from sceneforge.cli import main

    out = tmp_path / "v"
    assert (
        main(
            [
                "vqa",
                "--env",
                "desert",
                "--n",
                "1",
                "--size",
                "160",
                "--out",
                str(out),
                "--seed",
                "4",
                "--server",
                server.address,
                "--quiet",
                "--per-category",
                "1",
                "--min-bbox-px",
                "16",
            ]
        )
        == 0
    )
    assert "1 images" in capsys.readouterr().out
    assert main(["render-record", str(out / "desert" / "scene_000000.json"), "--server", server.address]) == 0
    assert "identical" in capsys.readouterr().out
    qs = [json.loads(line) for line in (out / "questions.jsonl").read_text().splitlines()]
    (tmp_path / "p.jsonl").write_text("".join(json.dumps({"id": q["id"], "prediction": "A"}) + "\n" for q in qs))
    assert main(["vqa-eval", "--questions", str(out / "questions.jsonl"), "--pred", str(tmp_path / "p.jsonl")]) == 0
    assert "overall (macro)" in capsys.readouterr().out
    # a different config in the same directory is refused by the runner, in one line
    assert (
        main(
            [
                "vqa",
                "--env",
                "desert",
                "--n",
                "1",
                "--size",
                "160",
                "--out",
                str(out),
                "--seed",
                "5",
                "--server",
                server.address,
                "--quiet",
                "--min-bbox-px",
                "16",
            ]
        )
        == 2
    )
    assert "different config" in capsys.readouterr().err


def test_vqa_relations_only_for_the_written_view(tmp_path, server, monkeypatch):
    """Candidate views are judged on the objects' nodes; the all-pairs relations (a city view has
    ~4,600) are computed once per sample, for the view that is written (issue 33, item 3)."""
    from sceneforge.scenarios.output import scene_graph as sg

    calls, view_relations = [], []
    real_relations, real_graph = sg.relations, scenario.Maker.graph

    def counted_relations(objs, cam):
        if objs:  # a view's graph asks for none (relate=())
            calls.append(len(objs))
        return real_relations(objs, cam)

    def recorded_graph(self, *a):
        g = real_graph(self, *a)
        view_relations.append(len(g["relations"]))
        return g

    monkeypatch.setattr(sg, "relations", counted_relations)
    monkeypatch.setattr(sg, "relation", lambda *a: pytest.fail("per-pair relation() called"))
    monkeypatch.setattr(scenario.Maker, "graph", recorded_graph)
    res = scenario.run({**CFG, "depth": False, "seed": 3}, Shard(0, (0,)), tmp_path, server=server.address)
    assert res.done == [0]
    rec = json.loads((tmp_path / "desert" / "scene_000000.json").read_text())
    n = len(rec["graph"]["objects"])
    assert calls == [n] and set(view_relations) == {0} and len(view_relations) >= 1  # seed 3: 7 views tried, 1 kept
    assert len(rec["graph"]["relations"]) == n * (n - 1)
