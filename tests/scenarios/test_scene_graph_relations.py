"""``scene_graph.relations`` (pair tables) against the per-pair reference (issue 33, item 3).

The VQA scene record holds every ordered pair's relation, so the fast path must give the very
same dicts (same floats, labels and key order: the written JSON byte for byte) as one
``relation`` call per pair did, and a city-size graph must not fall back to per-pair Python.
"""

import math

import numpy as np
import pytest

from sceneforge.engine.world import Actor, Camera, Rotator, Transform
from reference_scene_graph import reference_relations
from sceneforge.scenarios.output import scene_graph as sg
from sceneforge.scenarios.output.scene_graph import SceneObject, relation, relations, scene_graph
from sceneforge.scenarios.output.writers import dumps

CAM = Camera((0, 0, 0), Rotator(0, 0, 0), 90.0, 224, 224)  # at the origin, looking along +X


def obj(name, loc, rot=(0.0, 0.0, 0.0), size=(200, 100, 50), scale=(1, 1, 1), cls="car"):
    return SceneObject(Actor(name, f"{cls}_01", Transform(loc, Rotator(*rot), scale)), cls, size)


def random_scene(n: int, seed: int) -> tuple[list[SceneObject], Camera]:
    """``n`` objects with any rotation, mirrored and uneven scales, sizes from 1 cm to 30 m,
    spread over a city block (±90 m), and a camera with pitch and roll."""
    rng = np.random.default_rng(seed)
    objs = []
    for k in range(n):
        loc = tuple(float(v) for v in rng.uniform(-9000, 9000, 3) * (1, 1, 0.05))
        rot = tuple(float(v) for v in rng.uniform(-180, 180, 3))
        scale = tuple(float(v) for v in rng.choice([-1, 1], 3) * rng.uniform(0.5, 2.0, 3))
        size = tuple(float(v) for v in 10 ** rng.uniform(0, 3.5, 3))
        objs.append(obj(f"o{k}", loc, rot, size, scale, cls=str(rng.choice(["car", "tree", "building"]))))
    cam = Camera(tuple(float(v) for v in rng.uniform(-2500, 2500, 3)), Rotator(-20.0, 37.5, 3.0), 53.13, 448, 448)
    return objs, cam


def test_pair_tables_by_hand():
    """a: 200×100×50 cm at (1000, 0, 0) yawed 90° (faces +Y, the camera's right); b: a 1 m cube
    scaled 2×, 3 m along +Y: in front of a in a's frame, to the right of it for the camera (at the
    same depth, 75 cm higher: box centres at z 25 and 100)."""
    a = obj("a", (1000, 0, 0), (0, 90, 0))
    b = obj("b", (1000, 300, 0), size=(100, 100, 100), scale=(2, 2, 2))
    ab, ba = relations([a, b], CAM)
    assert (ab["a"], ab["b"], ba["a"], ba["b"]) == ("a", "b", "b", "a")
    assert ab["distance_cm"] == round(math.hypot(300, 75), 4) and ab["horizontal_cm"] == 300.0  # centres z 25, 100
    assert ab["camera"] == {
        "right": 300.0,
        "up": 75.0,
        "farther": 0.0,
        "horizontal": "right",
        "vertical": "above",
        "depth": "closer",
        "label": "right",
    }
    assert ab["object"]["forward"] == 300.0 and ab["object"]["label"] == "front"  # a faces +Y
    assert ab["object"]["azimuth_deg"] == 0.0 and abs(ab["object"]["right"]) < 1e-4
    assert ba["object"] == {"forward": 0.0, "right": -300.0, "up": -75.0, "azimuth_deg": -90.0, "label": "left"}
    assert ab["size_ratio"] == {"volume": 8.0, "height": 4.0, "longest": 1.0}  # 8 m³ / 1 m³; 200/50
    assert ba["size_ratio"] == {"volume": 0.125, "height": 0.25, "longest": 1.0}
    assert [ab, ba] == reference_relations([a, b], CAM)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_pair_tables_equal_the_per_pair_reference_on_a_random_scene(seed):
    objs, cam = random_scene(25, seed)
    objs.append(objs[3])  # the same object twice: its pairs with itself are skipped
    fast, ref = relations(objs, cam), reference_relations(objs, cam)
    assert len(fast) == 26 * 25 - 2
    assert fast == ref and dumps(fast) == dumps(ref)  # same floats, labels, key order, bytes
    assert [relation(a, b, cam) for a in objs for b in objs if a is not b] == ref


def test_scene_graph_relates_every_pair_like_the_reference():
    objs, cam = random_scene(12, 7)
    g = scene_graph(objs, cam, relate=[o.name for o in objs[::2]])
    assert g["relations"] == reference_relations(objs[::2], cam)
    assert scene_graph([], cam)["relations"] == [] and relations(objs[:1], cam) == []


def test_city_size_graph_makes_no_per_pair_python_calls(monkeypatch):
    """68 objects = 4,556 ordered pairs: the per-object work (rotation matrices, box corners,
    camera transforms) is done once per object, never once per pair."""
    objs, cam = random_scene(68, 3)
    calls = {"relation": 0, "matrix": 0}
    real_matrix = Rotator.matrix

    def counted_relation(*a, **k):
        calls["relation"] += 1
        return relation(*a, **k)

    def counted_matrix(self):
        calls["matrix"] += 1
        return real_matrix(self)

    monkeypatch.setattr(sg, "relation", counted_relation)
    monkeypatch.setattr(Rotator, "matrix", counted_matrix)
    g = scene_graph(objs, cam)
    assert len(g["relations"]) == 68 * 67
    assert calls["relation"] == 0
    assert calls["matrix"] <= 4 * 68 + 10  # O(objects), not O(pairs) (was ~3 per pair)
