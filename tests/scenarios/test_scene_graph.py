"""Scene graph and COCO RLE with hand-checkable geometry."""

import math

import numpy as np
import pytest

from sceneforge.engine.world import Actor, Camera, Rotator, Transform
from sceneforge.scenarios.output import coco_rle
from sceneforge.scenarios.output.scene_graph import SceneObject, coco_annotations, graph_rows, projected_box, scene_graph

CAM = Camera((0, 0, 0), Rotator(0, 0, 0), 90.0, 224, 224)  # f_px = 112, looking along +X


def obj(name, loc, yaw=0.0, size=(200, 100, 50), scale=(1, 1, 1), cls="car", color=(10, 20, 30)):
    return SceneObject(Actor(name, f"{cls}_01", Transform(loc, Rotator(0, yaw, 0), scale), color=color), cls, size)


def test_rle_matches_cocos_format_by_hand():
    m = np.array([[0, 1], [1, 1]], bool)  # column-major: 0,1,1,1 -> counts [1, 3]
    assert coco_rle.encode(m) == {"size": [2, 2], "counts": "13"}
    assert coco_rle.encode(np.ones((2, 2), bool))["counts"] == "04"  # leading empty background run
    assert coco_rle.string_to_counts(coco_rle.counts_to_string([0, 1000, 3, 7, 2])) == [0, 1000, 3, 7, 2]
    rng = np.random.default_rng(0)
    for _ in range(20):
        m = rng.random((int(rng.integers(1, 40)), int(rng.integers(1, 40)))) < rng.random()
        rle = coco_rle.encode(m)
        assert np.array_equal(coco_rle.decode(rle), m) and coco_rle.area(rle) == int(m.sum())
    assert coco_rle.bbox(np.pad(np.ones((2, 3), bool), ((1, 0), (4, 0)))) == [4.0, 1.0, 3.0, 2.0]


def test_object_box_pose_and_projection():
    a = obj("a", (1000, 0, 0), yaw=90.0)
    c = a.corners()
    assert c[:, 0].min() == pytest.approx(950) and c[:, 0].max() == pytest.approx(1050)  # W along X
    assert c[:, 1].min() == pytest.approx(-100) and c[:, 1].max() == pytest.approx(100)  # L along Y
    box = projected_box(a, CAM)
    assert box == pytest.approx([112 - 112 * 100 / 950, 112 - 112 * 50 / 950, 112 + 112 * 100 / 950, 112], abs=1e-3)
    g = scene_graph([a], CAM, world={"sun": {"pitch": 40}})
    n = g["objects"][0]
    assert n["distance_to_camera_cm"] == pytest.approx(math.hypot(1000, 25), abs=1e-3)
    assert n["box3d"]["size_cm"] == [200, 100, 50] and n["volume_m3"] == pytest.approx(1.0)
    assert n["camera_frame"] == {"forward": 1000.0, "right": 0.0, "up": 25.0}
    assert g["camera"]["K"][0] == [112.0, 0.0, 112.0] and g["world"]["sun"]["pitch"] == 40


def test_pairwise_relations_in_camera_and_object_frames():
    a = obj("a", (1000, 0, 0), yaw=90.0)  # facing +Y (the camera's right)
    b = obj("b", (1000, 300, 0), size=(100, 100, 100), scale=(2, 2, 2))
    g = scene_graph([a, b], CAM, visibility={"a": {"visible": 80, "unoccluded": 100, "bbox": [1, 2, 3, 4]}})
    ab = next(r for r in g["relations"] if r["a"] == "a" and r["b"] == "b")
    assert ab["distance_cm"] == pytest.approx(math.hypot(300, 75), abs=1e-3)  # centres z 25 vs 100
    assert ab["camera"]["horizontal"] == "right" and ab["camera"]["vertical"] == "above"
    assert ab["object"]["label"] == "front" and ab["object"]["forward"] == pytest.approx(300)
    ba = next(r for r in g["relations"] if r["a"] == "b" and r["b"] == "a")
    assert ba["object"]["label"] == "left" and ba["camera"]["label"] == "left"  # b faces +X
    assert ab["size_ratio"]["volume"] == pytest.approx(8.0) and ab["size_ratio"]["height"] == pytest.approx(4.0)
    na, nb = g["objects"]
    assert na["visible_ratio"] == 0.8 and na["box2d"] == [1, 2, 3, 4] and "visible_px" not in nb
    rows = graph_rows(g, {"sample": 7})
    assert rows[1]["scale_x"] == 2 and rows[1]["size_h"] == 200 and rows[0]["sample"] == 7


def test_coco_annotations_from_the_instance_mask():
    a, b = obj("a", (1000, 0, 0), color=(255, 0, 0)), obj("b", (1000, 300, 0), color=(0, 255, 0), cls="tree")
    mask = np.zeros((8, 8, 3), np.uint8)
    mask[2:4, 1:5] = (255, 0, 0)
    anns = coco_annotations(mask, scene_graph([a, b], CAM), image_id=3, categories={"car": 1, "tree": 2})
    assert len(anns) == 1 and anns[0]["bbox"] == [1.0, 2.0, 4.0, 2.0] and anns[0]["area"] == 8
    assert np.array_equal(coco_rle.decode(anns[0]["segmentation"]), (mask == (255, 0, 0)).all(-1))


def test_coco_ids_are_unique_across_images_when_objects_are_off_screen():
    """An object without pixels gets no annotation and uses no id: the next image's first id
    (``len(anns) + 1`` in the writer) must not collide with this image's ids."""
    a, b, c = (
        obj(n, (1000, y, 0), color=col)
        for n, y, col in (("a", 0, (255, 0, 0)), ("b", 300, (0, 255, 0)), ("c", -300, (0, 0, 255)))
    )
    mask = np.zeros((8, 8, 3), np.uint8)
    mask[0:2, 0:2] = (255, 0, 0)  # a and c visible, b (the middle object) off screen
    mask[5:7, 5:7] = (0, 0, 255)
    cats = {"car": 1}
    anns = coco_annotations(mask, scene_graph([a, b, c], CAM), image_id=1, categories=cats)
    anns += coco_annotations(mask, scene_graph([a, b, c], CAM), image_id=2, categories=cats, first_id=len(anns) + 1)
    assert [x["id"] for x in anns] == [1, 2, 3, 4]
    assert [x["sceneforge_object"] for x in anns] == ["a", "c", "a", "c"]


def test_graph_json_writes_the_bytes_dumps_writes():
    """``graph_json`` (string joins + per-object cached text) is ``dumps`` byte for byte: nodes
    behind and in front of the camera, scaled and turned objects, visibility, numpy scalars,
    unicode, empty containers, a node value changed after the graph was built; and it raises
    where ``dumps`` raises."""
    from sceneforge.scenarios.output.scene_graph import graph_json
    from sceneforge.scenarios.output.writers import dumps

    objs = [
        obj(f"o{k}", (300.0 * k - 900.0, 40.0 * k, 10.0), yaw=17.0 * k, scale=(1.0, 1.5, 0.7), color=(k, 2, 3)) for k in range(8)
    ]
    world = {
        "sun": {"pitch": 40.0, "yaw": np.float64(3.5)},
        "n": np.int64(3),
        "name": 'é☃ "q"',
        "t": (1, 2.5, True, None),
        "empty": {},
        "none": [],
        "tiny": 1e-7,
        "big": 1e22,
    }
    g = scene_graph(
        objs,
        CAM,
        world=world,
        visibility={"o4": {"visible": 3, "unoccluded": 4, "bbox": [1, 2, 3, 4]}},
        extra={"env": "x", "index": 3},
        relate=["o4", "o5"],
    )
    assert any(n["box2d_projected"] is None for n in g["objects"])  # some objects are behind the camera
    assert graph_json(g) == dumps(g)
    g["objects"][5]["location"] = [1.0, 2.0, 3.0]  # a cached value replaced: not its cached text
    g["objects"][6]["box3d"]["size_cm"] = [9.0, 9.0, 9.0]
    g["objects"][2]["extra"] = {"a": [1, {"b": None}], "c": [], "d": np.float32(0.1)}
    assert graph_json(g) == dumps(g)
    for bad in ({"x": float("nan")}, {"x": object()}):
        for encode in (dumps, graph_json):
            with pytest.raises((ValueError, TypeError)):
                encode(bad)


def test_one_object_node_is_the_node_of_the_batch():
    from sceneforge.scenarios.output.scene_graph import object_node

    objs = [obj("a", (1000, 0, 0), yaw=30.0), obj("b", (800, 300, 0), scale=(2, 1, 1))]
    vis = {"b": {"visible": 10, "unoccluded": 20, "bbox": [5, 6, 7, 8]}}
    g = scene_graph(objs, CAM, visibility=vis)
    assert object_node(1, objs[1], CAM, vis["b"]) == g["objects"][1]
    assert object_node(0, objs[0], CAM, None) == g["objects"][0]


def test_a_recoloured_object_is_the_object_made_with_that_colour():
    """``recolored`` derives the new colour's node from the old one (sparrta prepares nodes before
    the server names the colours): same node, same cached text, same graph bytes."""
    from sceneforge.scenarios.output.scene_graph import graph_json, recolored

    old = [
        obj(f"o{k}", (300.0 * k - 900.0, 40.0 * k, 10.0), yaw=17.0 * k, scale=(1.0, 1.5, 0.7), color=(k, 2, 3)) for k in range(4)
    ]
    new_colors = [(200, 10 + k, 7) for k in range(4)]
    derived = [recolored(o, c) for o, c in zip(old, new_colors)]
    fresh = [
        obj(f"o{k}", (300.0 * k - 900.0, 40.0 * k, 10.0), yaw=17.0 * k, scale=(1.0, 1.5, 0.7), color=c)
        for k, c in enumerate(new_colors)
    ]
    for d, f in zip(derived, fresh):
        assert d == f and d.static[0] == f.static[0] and d.static[1]["texts"] == f.static[1]["texts"]
        assert np.array_equal(d.static[1]["corners"], f.static[1]["corners"])
    assert graph_json(scene_graph(derived, CAM)) == graph_json(scene_graph(fresh, CAM))
    assert graph_json(scene_graph(derived, CAM)) != graph_json(scene_graph(old, CAM))


def test_recolored_changes_only_the_colour_and_checks_it():
    import pytest

    from sceneforge.core.errors import ConfigError
    from sceneforge.engine.world import Actor, Transform
    from sceneforge.scenarios.output.scene_graph import SceneObject, recolored

    o = SceneObject(Actor("clutter_001", "x", Transform((1.0, 2.0, 3.0)), color=(1, 2, 3)), "tree", (100.0, 80.0, 300.0))
    r = recolored(o, [9, 8, 7])
    assert r.actor == Actor("clutter_001", "x", Transform((1.0, 2.0, 3.0)), color=(9, 8, 7)) and o.actor.color == (1, 2, 3)
    fresh = SceneObject(r.actor, "tree", (100.0, 80.0, 300.0))
    assert r.static[0] == fresh.static[0] and r.static[1]["texts"] == fresh.static[1]["texts"]
    with pytest.raises(ConfigError, match="0..255"):
        recolored(o, (300, 0, 0))


def test_static_node_values_and_text_are_the_general_encoders():
    """An object's camera-independent node holds the floats ``_r`` gives and the text
    ``nested_json`` gives, for turned, tilted, scaled, far and tiny objects (negative zeros after
    rounding included), and a value that is not finite raises as the encoder does."""
    from sceneforge.scenarios.output.scene_graph import _NODE_LEVEL, _r, _static_node
    from sceneforge.scenarios.output.writers import nested_json

    rng = np.random.default_rng(7)
    objs = []
    for k in range(300):
        loc = tuple(float(v) for v in rng.normal(0.0, 10.0 ** rng.integers(-4, 6), 3))
        rot = tuple(float(v) for v in rng.uniform(-180.0, 180.0, 3) * (rng.random(3) < 0.5))
        scale = tuple(float(v) for v in rng.uniform(0.01, 3.0, 3))
        size = tuple(float(v) for v in rng.uniform(0.0005, 3000.0, 3))
        objs.append(
            SceneObject(
                Actor(f"o{k}", "cube", Transform(loc, Rotator(*rot), scale), tuple(int(v) for v in rng.integers(0, 256, 3))),
                "cls",
                size,
                "clutter",
            )
        )
    objs.append(
        SceneObject(Actor("zero", "cube", Transform((-1e-9, 0.0, -0.0), Rotator(0.0, -1e-9, 0.0))), "cls", (1e-4, 2e-4, 3e-4))
    )
    negative_zero = 0
    for o in objs:
        head, static, centre = _static_node.__wrapped__(o)
        t = o.actor.transform
        corners = o.corners()
        assert head["location"] == _r(t.location) and head["rotation"] == _r(t.rotation.as_tuple())
        assert head["scale"] == _r(t.scale, 6) and head["box3d"]["yaw_deg"] == _r(t.rotation.yaw)
        assert head["box3d"]["corners"] == _r(static["corners"], 3)
        assert np.allclose(static["corners"], corners, atol=1e-6 * (1.0 + np.abs(corners).max()))
        assert head["box3d"]["axes"] == _r(t.rotation.matrix().T, 8)
        assert head["box3d"]["centre"] == _r(centre) and head["box3d"]["size_cm"] == _r(o.extent_cm())
        assert head["volume_m3"] == _r(float(np.prod(o.extent_cm())) / 1e6, 6)
        for k, v in head.items():
            assert static["texts"][k] == nested_json(v, _NODE_LEVEL + 1), (o.name, k)
        negative_zero += "-0.0" in "".join(static["texts"].values())
    assert negative_zero  # the sign of a rounded-away value is kept
    huge = SceneObject(Actor("huge", "cube"), "cls", (1e300, 1e300, 1e300))
    with np.errstate(over="ignore"), pytest.raises(ValueError, match="not JSON compliant"):
        _static_node.__wrapped__(huge)  # its volume overflows: the general path raises, as it always did


def test_rounding_an_array_is_rounding_its_list():
    """``_r`` rounds 1-D and 2-D arrays without the general recursion: the same floats as
    rounding the same numbers given as (nested) lists, other shapes and scalars as before."""
    from sceneforge.scenarios.output.scene_graph import _r

    rng = np.random.default_rng(3)
    for shape in [(0,), (3,), (8, 3), (3, 3), (0, 3), (2, 0), (2, 2, 2), ()]:
        a = rng.normal(0.0, 1e3, shape) * (rng.random(shape) < 0.8)
        a = np.where(np.abs(a) < 1e-3, -1e-9, a)  # negative values that round to -0.0
        for nd in (3, 4, 8):
            expected = round(float(a), nd) if a.ndim == 0 else _r(a.tolist(), nd)
            got = _r(a, nd)
            assert got == expected and repr(got) == repr(expected), (shape, nd)
    assert _r(np.arange(3, dtype=np.float32), 2) == [0.0, 1.0, 2.0]
