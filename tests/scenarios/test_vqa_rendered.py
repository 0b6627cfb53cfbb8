"""Issue 52 (and 48 item 9) on rendered scenes: hand-placed actors on the session's render server,
measured and written by the VQA maker itself, then asked about by the templates.

Each scene is drawn in its test's docstring; the camera is at the origin, 1.7 m up, looking
along +X with a 53.13° horizontal FOV (focal 96 px at 192 px): a point (x, y) projects to
u = 96 + 96 y / x."""

import json
from collections import Counter

import numpy as np
import pytest
from PIL import Image

from sceneforge.engine.client import RenderClient
from sceneforge.engine.world import Actor, Camera, Rotator, Transform, instance_color
from sceneforge.scenarios.contract import Shard
from sceneforge.scenarios.vqa import scenario
from sceneforge.scenarios.vqa.templates import Rules, askable, questions

SIZE = 192
CAM = Camera((0.0, 0.0, 170.0), Rotator(-5.0, 0.0, 0.0), 53.13, SIZE, SIZE)
RULES = Rules(0.8, 16.0, 15.0, 0.15)


@pytest.fixture
def maker(server, tmp_path):
    cfg = scenario.parse_config({"envs": ["city"], "n": 1, "image_size": SIZE, "min_bbox_px": 16, "min_askable": 1})
    with RenderClient(server.address, timeout=120) as client:
        yield scenario.Maker(cfg, client, tmp_path)


def rendered(maker, specs):
    """Spawn ``specs`` = [(name, class, (x, y), yaw)] (the class's first asset) on the city's flat asphalt, write the view of
    ``CAM`` as the maker writes a sample; returns the record (None if it was refused)."""
    env = maker.env("city")
    lib = maker._shapes["city"].lib
    actors = [
        Actor(n, env.variants(cls, lib)[0], Transform((x, y, 0.0), Rotator(0.0, yaw, 0.0)), color=instance_color(k))
        for k, (n, cls, (x, y), yaw) in enumerate(specs)
    ]
    maker.client.set_world(env.world)
    maker.client.reset()
    maker.client.spawn(actors)
    colors = maker.client.object_colors([a.name for a in actors])
    objs = maker.objects("city", actors, colors)
    return maker.write_if_askable(env, "city", 0, actors, colors, objs, CAM, RULES, Counter())


def mask_of(maker, rec) -> np.ndarray:
    return np.asarray(Image.open(maker.out / rec["files"]["mask"]).convert("RGB"))


def node(rec, name):
    return next(o for o in rec["graph"]["objects"] if o["name"] == name)


def test_counting_a_rendered_group(maker):
    """Four cones in a row 8 m ahead (y = -225, -75, 75, 225: u = 69..123) and a taxi 14 m ahead:
    "How many cones" is 4, and each cone is its own colour in the written mask."""
    specs = [(f"obj_{k}", "cone", (800.0, -225.0 + 150.0 * k), 0.0) for k in range(4)]
    specs += [("obj_4", "taxi", (1400.0, 0.0), 90.0)]
    rec = rendered(maker, specs)
    assert rec is not None
    mask = mask_of(maker, rec)
    seen = [n for n, *_ in specs[:4] if (mask == node(rec, n)["color"]).all(-1).any()]
    assert len(seen) == 4  # independent of the graph: four cone colours in the image
    counts = {q.question: q.answer for q in questions(rec["graph"], RULES) if q.category == "counting"}
    assert counts["How many cones are visible in the image?"] == 4
    assert [o["class"] for o in askable(rec["graph"], RULES)] == ["taxi"]


def test_border_cut_object_refused_and_pixels_match_the_mask(maker):
    """A taxi 10 m ahead fully in view and a vespa 6 m ahead at y = 330 (u = 96 + 96*330/600 =
    149 px: its 1.75 m length reaches past the right border at 192 px). Before issue 52 the vespa's
    ratio compared in-frame pixels only (~1.0) and it was asked about; now the part outside the
    frame counts as not visible (``alone_px`` > ``unoccluded_px``)."""
    rec = rendered(maker, [("obj_0", "taxi", (1000.0, -150.0), 90.0), ("obj_1", "vespa", (600.0, 330.0), 90.0)])
    assert rec is not None
    taxi, vespa = node(rec, "obj_0"), node(rec, "obj_1")
    assert taxi["alone_px"] == taxi["unoccluded_px"] and taxi["visible_ratio"] >= 0.95
    assert vespa["visible_px"] > 0 and vespa["box2d"][2] == SIZE - 1  # it touches the right border
    assert vespa["alone_px"] is None or vespa["alone_px"] > vespa["unoccluded_px"]
    assert vespa["visible_ratio"] < 0.8
    assert [o["name"] for o in askable(rec["graph"], RULES)] == ["obj_0"]
    assert all("vespa" not in q.question for q in questions(rec["graph"], RULES))
    # item 8: visible_px and box2d are the written mask's, for every object
    mask = mask_of(maker, rec)
    for o in rec["graph"]["objects"]:
        sel = (mask == o["color"]).all(-1)
        assert o["visible_px"] == int(sel.sum()), o["name"]
        ys, xs = np.nonzero(sel)
        assert o["box2d"] == ([int(xs.min()), int(ys.min()), int(xs.max()), int(ys.max())] if len(xs) else None)


def test_closest_against_a_hand_placed_nearer_small_object(maker):
    """Seen from above (x away from the camera, y to the right), cm:

        taxi (1400, -300)
        bike (900, -250)              vespa (800, 300)
                                 bench_a (750, 100)    <- 2.1 m from the vespa
              bench_b (600, -300)
                          camera (0, 0)

    The nearest thing to the vespa is bench_a (the bike is 5.6 m away, the taxi 8.4 m), though two
    benches in view mean it is never named; before issue 52 "closest" looked at the named objects
    only and answered with the bike. The multi-hop question about the vespa is about bench_a."""
    rec = rendered(
        maker,
        [
            ("obj_0", "taxi", (1400.0, -300.0), 90.0),
            ("obj_1", "vespa", (800.0, 300.0), 90.0),
            ("obj_2", "bike", (900.0, -250.0), 90.0),
            ("clutter_000", "bench", (750.0, 100.0), 0.0),
            ("clutter_001", "bench", (600.0, -300.0), 0.0),
        ],
    )
    assert rec is not None
    named = {o["name"] for o in askable(rec["graph"], RULES)}
    assert {"obj_0", "obj_1", "obj_2"} <= named and not named & {"clutter_000", "clutter_001"}
    hops = [q for q in questions(rec["graph"], RULES) if q.category == "multi_hop" and q.objects[0] == "obj_1"]
    assert hops, "the multi-hop question about the vespa is asked"
    assert {q.objects[1] for q in hops} == {"clutter_000"}
    assert all("bench" not in q.question for q in hops)


def test_city_sample_never_names_the_ground(tmp_path, server):
    """A generated city sample: the street crossing (180 m x 180 m x 12 cm) is recorded with role
    ``ground`` and no question names it (before: half of all city questions did)."""
    cfg = {"envs": ["city"], "n": 2, "image_size": SIZE, "min_bbox_px": 16, "seed": 0}
    res = scenario.run(cfg, Shard(0, (0, 1)), tmp_path, server=server.address)
    assert sorted(res.done) == [0, 1]
    scenario.finalize(cfg, tmp_path)
    qs = [json.loads(line) for line in (tmp_path / "questions.jsonl").read_text().splitlines()]
    for i in (0, 1):
        g = json.loads((tmp_path / "city" / f"scene_{i:06d}.json").read_text())["graph"]
        ground = {o["name"] for o in g["objects"] if o["role"] == "ground"}
        assert {o["class"] for o in g["objects"] if o["name"] in ground} == {"street"}
        assert "classes" in g and "street" not in g["classes"]
        assert not ground & {n for q in qs if q["index"] == i for n in q["objects"]}
    assert qs and not [q for q in qs if "street" in q["question"] or "street" in json.dumps(q.get("options", []))]
    # the independent audit (benchmarks/vqa_audit.py) agrees with every answer, and catches a wrong one
    audit = _audit_module()
    r = audit.audit(tmp_path, 16.0)
    assert r["n"] == len(qs) and r["wrong"] == [] and r["non_thing"] == 0 and r["pixel_bad"] == 0
    lines = (tmp_path / "questions.jsonl").read_text().splitlines()
    k = next(i for i, line in enumerate(lines) if json.loads(line)["category"] == "object_size")
    bad = json.loads(lines[k])
    bad["answer"] = bad["answer"] + 50.0
    lines[k] = json.dumps(bad)
    (tmp_path / "questions.jsonl").write_text("\n".join(lines) + "\n")
    assert [w[0] for w in audit.audit(tmp_path, 16.0)["wrong"]] == [bad["id"]]
    # letters: within a category and option count, no letter more than once ahead of another
    for cat in {q["category"] for q in qs if q["kind"] == "choice"}:
        for k in {len(q["options"]) for q in qs if q["category"] == cat}:
            c = Counter(q["answer"] for q in qs if q["category"] == cat and len(q["options"]) == k)
            c.update({letter: 0 for letter in "ABCD"[:k]})
            assert max(c.values()) - min(c.values()) <= 1, (cat, k, c)


def test_a_scene_without_a_view_is_redrawn(tmp_path, server):
    """Issue 48 item 9: ``sceneforge vqa --env city --n 3 --seed 4`` failed its scene 0 ("no view
    with 3 askable objects in 30 scenes"); scenes whose objects cannot be both in the frame and big
    enough are now redrawn before any render, and the job completes."""
    cfg = {"envs": ["city"], "n": 3, "seed": 4}
    res = scenario.run(cfg, Shard(0, (0,)), tmp_path, server=server.address)
    assert res.done == [0] and not res.failed
    # the geometric test that redraws such a scene: three 70 cm cones 50 m apart have no camera
    from sceneforge.scenarios.sampling.rejection import standing
    from sceneforge.scenarios.sampling.shapes import ShapeCache

    cfg_ = scenario.parse_config(cfg)
    env = cfg_.env("city")
    shapes = ShapeCache(env.library, lambda cls, e=env: e.variants(cls, e.library))
    cone = shapes.pick(np.random.default_rng(0), "cone")
    placed = [standing(f"obj_{k}", cone, 5000.0 * k, 0.0, 0.0, env.ground) for k in range(3)]
    names = {p.name for p in placed}
    near, far = scenario._camera_range(placed, names, scenario.cam_focal(53.13, 448), 40.0, 3, 53.13)
    assert near > far
    near, far = scenario._camera_range(placed[:1], {"obj_0"}, scenario.cam_focal(53.13, 448), 40.0, 1, 53.13)
    assert near < far


def _audit_module():
    """benchmarks/vqa_audit.py as a module (benchmarks/ is not a package)."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "benchmarks" / "vqa_audit.py"
    spec = importlib.util.spec_from_file_location("vqa_audit", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod
