"""Template VQA on a hand-built scene (every answer checkable on paper) and its scoring."""

import math
from collections import Counter

import numpy as np
import pytest

from sceneforge.core.errors import ConfigError
from sceneforge.engine.world import Actor, Camera, Rotator, Transform
from sceneforge.scenarios.output.scene_graph import SceneObject, scene_graph
from sceneforge.scenarios.vqa import evaluate, templates
from sceneforge.scenarios.vqa.templates import Rules, askable, letter_options, questions

CAM = Camera((0, 0, 0), Rotator(0, 0, 0), 90.0, 224, 224)  # at the origin looking along +X
OK = {"visible": 900, "unoccluded": 1000, "bbox": [10, 10, 60, 60]}


def so(name, cls, loc, size=(100, 100, 100)):
    return SceneObject(Actor(name, cls + "_01", Transform(loc)), cls, size)


def scene(vis_overrides=None):
    """Seen from above (X up the page = away from the camera, Y to the right):

    house (2000, 0)                      tree (2000, 1500)
    car   (1000, 0)     rock (1000, 800)
                camera (0, 0)
    """
    objs = [
        so("car", "car", (1000, 0, 0), (400, 200, 150)),
        so("house", "house", (2000, 0, 0), (800, 600, 500)),
        so("rock", "rock", (1000, 800, 0)),
        so("tree", "tree", (2000, 1500, 0), (100, 100, 600)),
    ]
    vis = {o.name: dict(OK) for o in objs}
    vis.update(vis_overrides or {})
    return scene_graph(objs, CAM, visibility=vis)


def by_cat(qs, cat):
    return [q for q in qs if q.category == cat]


def find(qs, cat, objects):
    return next(q for q in qs if q.category == cat and q.objects == objects)


def test_crisp_visibility_rule_and_unique_names():
    g = scene(
        {
            "rock": {"visible": 790, "unoccluded": 1000, "bbox": [0, 0, 80, 80]},  # 0.79 visible
            "tree": {"visible": 900, "unoccluded": 1000, "bbox": [0, 0, 38, 20]},
        }
    )  # 39 px box (inclusive)
    assert [o["name"] for o in askable(g, Rules())] == ["car", "house"]
    qs = questions(g)
    assert all(set(q.objects) <= {"car", "house"} for q in qs if q.category != "counting")
    # two cars in view: neither may be named "the car"
    objs = [so("car", "car", (1000, 0, 0)), so("car2", "car", (1000, 300, 0))]
    g2 = scene_graph(objs, CAM, visibility={"car": OK, "car2": OK})
    assert askable(g2, Rules()) == [] and [q.answer for q in questions(g2)] == [2]  # only counting


def test_numerical_templates_hand_values():
    qs = questions(scene())
    # every class is seen once and no class twice: one counting question, about one of them
    assert [q.answer for q in by_cat(qs, "counting")] == [1]
    assert find(qs, "object_size", ["car"]).answer == 400.0
    assert find(qs, "object_size", ["tree"]).answer == 600.0
    # centres: car (1000, 0, 75), house (2000, 0, 250)
    assert find(qs, "object_distance", ["car", "house"]).answer == round(math.hypot(1000, 175) / 100, 2)
    assert find(qs, "camera_distance", ["car"]).answer == round(math.hypot(1000, 75) / 100, 2)


def test_counting_needs_every_instance_visible_enough():
    objs = [so("t1", "tree", (1000, 0, 0)), so("t2", "tree", (1000, 300, 0))]
    g = scene_graph(objs, CAM, visibility={"t1": OK, "t2": {"visible": 10, "unoccluded": 1000, "bbox": [0, 0, 50, 50]}})
    assert by_cat(questions(g), "counting") == []


def test_direction_templates_hand_values():
    qs = questions(scene())
    W = templates.DIRECTION_WORDS
    # camera → car line of sight is +X; the house lies beyond the car: SpaRRTa "front" = behind it
    assert find(qs, "direction_ego", ["car", "house"]).answer == W["front"]
    assert find(qs, "direction_ego", ["house", "car"]).answer == W["back"]
    assert find(qs, "direction_ego", ["car", "rock"]).answer == W["right"]  # +Y is right in UE
    # from the rock (1000, 800) looking at the car (1000, 0) (towards -Y): the house (+X) is on its right
    assert find(qs, "direction_allo", ["rock", "car", "house"]).answer == W["right"]
    # standing at the car facing the house (+X), the rock (+Y) is to your right, the camera side is behind
    assert find(qs, "view_transformation", ["car", "house", "rock"]).answer == "to your right"
    assert find(qs, "view_transformation", ["house", "car", "tree"]).answer == "to your left"  # facing -X
    # ambiguous directions are not asked: tree from car is at atan2(1500, 1000) = 56 deg from +X,
    # within 15 deg of the 45 deg boundary
    assert not [q for q in qs if q.category == "view_transformation" and q.objects == ["car", "house", "tree"]]


def test_ranking_and_multi_hop_hand_values():
    qs = questions(scene())
    # distances to the camera: car 10.0 m, rock 12.8 m, house 20.2 m, tree 25.3 m
    closest = by_cat(qs, "relative_ranking")[0]
    assert closest.question.endswith("closest to the camera?") and closest.answer == "car"
    farthest = by_cat(qs, "relative_ranking")[1]
    assert farthest.answer == "tree"
    # nearest to the tree (2000, 1500) is the rock (1000, 800; 12.5 m, the house 15.0 m); seen from
    # the camera the car's line of sight is +X and car -> rock is +Y: the rock is to the car's right
    q = find(qs, "multi_hop", ["tree", "rock", "car"])
    assert q.answer == templates.DIRECTION_WORDS["right"] and len(q.options) == 4


def test_balanced_answer_positions_and_determinism():
    qs = [q for q in questions(scene()) if q.kind == "choice"] * 5
    counters = Counter()
    a = letter_options(qs, np.random.default_rng(0), counters)
    b = letter_options(qs, np.random.default_rng(0))
    assert a == b
    for cat in {q["category"] for q in a}:
        pos = Counter(q["answer"] for q in a if q["category"] == cat)
        assert max(pos.values()) - min(pos.values()) <= 1, (cat, pos)
    for q in a:
        assert q["options"][" ABCD".index(q["answer"]) - 1].endswith(q["answer_text"])


def test_mra_and_scoring():
    assert evaluate.mra(10.0, 10.0) == 1.0
    assert evaluate.mra(12.0, 10.0) == pytest.approx(0.6)  # rel 0.2 < 1-θ for θ ≤ 0.75: 6 of 10
    assert evaluate.mra(20.0, 10.0) == 0.0 and evaluate.mra(None, 3.0) == 0.0
    qs = [
        {"id": "1", "category": "object_size", "kind": "numerical", "answer": 100.0},
        {
            "id": "2",
            "category": "direction_ego",
            "kind": "choice",
            "answer": "B",
            "options": ["A. to its left", "B. to its right"],
        },
        {
            "id": "3",
            "category": "direction_ego",
            "kind": "choice",
            "answer": "A",
            "options": ["A. to its left", "B. to its right"],
        },
    ]
    r = evaluate.score(qs, {"1": "about 110 cm", "2": "(b) right", "3": "to its right"})
    assert r["categories"]["object_size"]["score"] == pytest.approx(0.8)
    assert r["categories"]["direction_ego"]["score"] == 0.5 and r["overall"] == pytest.approx(0.65)
    assert evaluate.parse_choice("to its left", qs[2]["options"]) == "A"


def test_bad_prediction_files(tmp_path):
    p = tmp_path / "p.jsonl"
    p.write_text('{"id": "1"}\n')
    with pytest.raises(ConfigError, match="needs 'id' and 'prediction'"):
        evaluate.load_predictions(p)
    with pytest.raises(ConfigError, match="not found"):
        evaluate.load_predictions(tmp_path / "none.jsonl")


def test_vqa_eval_command(tmp_path, capsys):
    import json

    from sceneforge.cli import main

    qs = [dict(q, id=f"q{i}") for i, q in enumerate(letter_options(questions(scene()), np.random.default_rng(0)))]
    (tmp_path / "questions.jsonl").write_text("".join(json.dumps(q) + "\n" for q in qs))
    # an oracle: the right letter / the exact number for every question
    (tmp_path / "pred.jsonl").write_text("".join(json.dumps({"id": q["id"], "prediction": q["answer"]}) + "\n" for q in qs))
    assert (
        main(["vqa-eval", "--questions", str(tmp_path / "questions.jsonl"), "--pred", str(tmp_path / "pred.jsonl"), "--json"])
        == 0
    )
    r = json.loads(capsys.readouterr().out)
    assert r["overall"] == 1.0 and set(r["categories"]) == set(templates.CATEGORIES)
    assert main(["vqa-eval", "--questions", str(tmp_path / "none.jsonl"), "--pred", str(tmp_path / "pred.jsonl")]) == 2
    assert main(["vqa-eval", "--questions", str(tmp_path / "questions.jsonl"), "--baselines", "--json"]) == 0
    b = json.loads(capsys.readouterr().out)
    assert set(b["categories"]) == set(templates.CATEGORIES) and 0 <= b["overall"] <= 1
    assert main(["vqa-eval", "--questions", str(tmp_path / "questions.jsonl")]) == 2  # neither --pred nor --baselines
    assert "--baselines" in capsys.readouterr().err


def test_ground_and_scene_scale_things_are_never_named():
    """Issue 52 item 1: a street crossing passes the pixel rule (its box is the whole frame) but is
    ground; a 12 m flat plaza is ground by its shape; neither is a subject, an option or counted."""
    base = scene()["objects"]
    objs = [
        so("car", "car", (1000, 0, 0), (400, 200, 150)),
        so("house", "house", (2000, 0, 0), (800, 600, 500)),
        so("rock", "rock", (1000, 800, 0)),
        so("clutter_000", "street", (0, 0, 0), (18000, 18000, 12)),
        so("clutter_001", "plaza", (1500, 0, 0), (1200, 1200, 20)),
    ]
    vis = {o.name: dict(OK) for o in objs}
    g = scene_graph(objs, CAM, visibility=vis)
    assert len(base) == 4 and [o["name"] for o in askable(g, Rules())] == ["car", "house", "rock"]
    assert templates.is_surface("dune", (3000, 2000, 300)) and not templates.is_surface("building", (1000, 1000, 2400))
    qs = questions(g)
    assert qs and all(not {"clutter_000", "clutter_001"} & set(q.objects) for q in qs)
    assert not [q for q in qs if "street" in q.question or "plaza" in q.question or "street" in str(q.options)]


def test_counting_answers_vary_with_zero_and_groups():
    """Item 2: three cones in view -> 3; a class of the environment's vocabulary not in view -> 0."""
    objs = [so(f"cone{k}", "cone", (1000, 300 * k - 300, 0), (40, 40, 70)) for k in range(3)]
    objs += [so("car", "car", (2000, 0, 0), (400, 200, 150))]
    g = scene_graph(objs, CAM, visibility={o.name: dict(OK) for o in objs})
    g["classes"] = ["bench", "car", "cone"]
    counts = {q.question: q.answer for q in by_cat(questions(g), "counting")}
    # the group, and a class the environment has but the view lacks (0) rather than the car seen once
    assert counts == {"How many cones are visible in the image?": 3, "How many benches are visible in the image?": 0}
    g["classes"] = ["car", "cone"]  # every class in view: the one seen once
    assert {q.answer for q in by_cat(questions(g), "counting")} == {3, 1}
    # one cone not visible enough (half hidden): the cones are not counted at all
    g2 = scene_graph(
        objs,
        CAM,
        visibility={**{o.name: dict(OK) for o in objs}, "cone1": {"visible": 400, "unoccluded": 1000, "bbox": [0, 0, 50, 50]}},
    )
    assert "How many cones are visible in the image?" not in {q.question for q in questions(g2)}


def test_closest_takes_every_visible_thing():
    """Item 3: a small unnamed barrel (two in view) nearer the tree than the rock is "the object
    closest to the tree", though it may not be named itself."""
    g = scene_graph(
        [*(so(n, c, loc, size) for n, c, loc, size in [
            ("car", "car", (1000, 0, 0), (400, 200, 150)),
            ("house", "house", (2000, 0, 0), (800, 600, 500)),
            ("rock", "rock", (1000, 800, 0), (100, 100, 100)),
            ("tree", "tree", (2000, 1500, 0), (100, 100, 600)),
            ("barrel_a", "barrel", (1900, 1300, 0), (80, 80, 90)),
            ("barrel_b", "barrel", (400, -900, 0), (80, 80, 90)),
        ])],
        CAM,
        visibility={n: dict(OK) for n in ("car", "house", "rock", "tree", "barrel_a", "barrel_b")},
    )  # fmt: skip
    assert "barrel_a" not in [o["name"] for o in askable(g, Rules())]
    hops = [q for q in questions(g) if q.category == "multi_hop" and q.objects[0] == "tree"]
    assert hops and all(q.objects[1] == "barrel_a" for q in hops)
    assert "barrel" not in " ".join(q.question for q in hops)
    # the nearest thing too hidden to be found: the question is not asked at all
    g["objects"] = [dict(o, visible_ratio=0.3) if o["name"] == "barrel_a" else o for o in g["objects"]]
    assert not [q for q in questions(g) if q.category == "multi_hop" and q.objects[0] == "tree"]


def test_letters_balanced_per_category_with_mixed_option_counts():
    """Item 6: ranking questions with 3 and 4 options in one category: no letter above 1/k + 0.1."""
    three = templates.Question("relative_ranking", "q3", "a", ["a", "b", "c"])
    four = templates.Question("relative_ranking", "q4", "a", ["a", "b", "c", "d"])
    two = templates.Question("multi_hop", "q2", "left", ["left", "right"])
    out = letter_options([three, four, two] * 12, np.random.default_rng(1))
    for cat, k in (("relative_ranking", 3), ("multi_hop", 2)):
        letters = Counter(q["answer"] for q in out if q["category"] == cat)
        n = sum(letters.values())
        assert max(letters.values()) / n <= 1 / k + 0.1, (cat, letters)
    for q in out:
        assert q["options"][" ABCD".index(q["answer"]) - 1].endswith(q["answer_text"])


def test_blind_baselines():
    """Item 6: the best constant letter and the lower median, per category, macro-averaged."""
    qs = [{"category": "counting", "kind": "numerical", "answer": a} for a in (0, 2, 3, 5)] + [
        {"category": "direction_ego", "kind": "choice", "answer": a, "options": ["A. x", "B. y", "C. z", "D. w"]} for a in "AABC"
    ]
    b = evaluate.baselines(qs)
    assert b["categories"]["counting"]["guess"] == 2.0  # lower median of 0, 2, 3, 5
    # MRA(2 | 0) = 0, (2 | 2) = 1, (2 | 3): rel 0.33 < 1 - t for t in .5..  .65 -> 0.4, (2 | 5) = 0
    assert b["categories"]["counting"]["score"] == pytest.approx(1.4 / 4)
    assert b["categories"]["direction_ego"]["guess"] == "A" and b["categories"]["direction_ego"]["score"] == 0.5
    assert b["overall"] == pytest.approx((0.35 + 0.5) / 2)
