"""Each sampler and predicate of scenarios.sampling.rejection, on hand-built geometry."""

import math
from collections import Counter

import numpy as np
import pytest

from sceneforge.core.errors import ConfigError, PlacementError
from sceneforge.engine.server.backend import PixelCount
from sceneforge.engine.world import Camera, Ground, look_at_rotation
from sceneforge.scenarios.sampling.rejection import (
    AssetShape,
    Placed,
    big_enough,
    camera_clear,
    in_frame,
    label_rules,
    no_overlap,
    resample_while,
    sample_camera,
    sample_object,
    sample_rng,
    stable_key,
    visibility_failure,
    within_distance,
)

BOX = AssetShape("box", "box", np.array([[-50, -50], [50, -50], [50, 50], [-50, 50]], float), 100.0)
STICK = AssetShape("stick", "stick", np.array([[-200, -10], [200, -10], [200, 10], [-200, 10]], float), 50.0)


def test_resample_while_counts_first_failing_rule():
    seq = iter([1, 4, 3, 8, 2])
    counts = Counter({"even": 5})
    x = resample_while(
        lambda r: next(seq), [("even", lambda v: v % 2 == 0), ("big", lambda v: v >= 6)], np.random.default_rng(0), 10, counts
    )
    assert x == 8
    assert counts == Counter({"even": 7, "big": 1})  # 1 and 3 fail "even" first; 4 fails "big"


def test_resample_while_raises_with_the_worst_rule():
    rng = np.random.default_rng(0)
    counts = Counter()
    with pytest.raises(PlacementError) as e:
        resample_while(
            lambda r: r.integers(0, 10),
            [("lt5", lambda v: v < 5), ("never", lambda v: False)],
            rng,
            200,
            counts,
            what="unit test",
        )
    assert e.value.tries == 200
    assert e.value.rule in ("lt5", "never") and e.value.rule == counts.most_common(1)[0][0]
    assert sum(e.value.rejections.values()) == 200 == sum(counts.values())
    assert "unit test" in str(e.value) and e.value.rule in str(e.value)
    with pytest.raises(ConfigError):
        resample_while(lambda r: 1, [], rng, 0)


def test_sample_rng_is_stable_and_independent():
    a = sample_rng(0, "desert", "ego", "rock_truck", 3).random(4)
    assert np.array_equal(a, sample_rng(0, "desert", "ego", "rock_truck", 3).random(4))
    for other in [
        sample_rng(1, "desert", "ego", "rock_truck", 3),
        sample_rng(0, "forest", "ego", "rock_truck", 3),
        sample_rng(0, "desert", "allo", "rock_truck", 3),
        sample_rng(0, "desert", "ego", "rock_truck", 4),
        sample_rng(0, "desert", "ego", "rock_truck", 3, stream=1),
    ]:
        assert not np.array_equal(a, other.random(4))
    assert stable_key("a", "b") != stable_key("ab")  # separator prevents concatenation collisions
    assert stable_key("desert") == (stable_key("desert"))
    with pytest.raises(ConfigError):
        sample_rng(-1, "d", "ego", "t", 0)


def test_placed_footprint_rotation_follows_ue_yaw():
    p = Placed("s", STICK, 0, 0, 0, 90.0)  # +90 yaw turns local +X to world +Y
    fp = p.footprint_world()
    assert fp[:, 1].max() == pytest.approx(200) and fp[:, 0].max() == pytest.approx(10)
    c = p.corners()
    assert c.shape == (8, 3) and c[:, 2].min() == 0 and c[:, 2].max() == 50
    a = p.actor((1, 2, 3))
    assert a.transform.rotation.yaw == 90 and a.asset_id == "stick" and a.color == (1, 2, 3)


def test_no_overlap_uses_rotated_polygons_not_aabbs():
    a = Placed("a", STICK, 0, 0, 0, 45.0)
    b = Placed("b", STICK, 60, -60, 0, 45.0)  # parallel diagonal sticks: AABBs overlap, shapes don't
    ok = no_overlap([a])
    assert ok(b)
    assert not ok(Placed("c", STICK, 0, 0, 0, -45.0))  # crossing sticks
    assert not no_overlap([a], gap_cm=100)(b)


def test_within_distance():
    ok = within_distance([Placed("a", BOX, 0, 0, 0, 0)], 1000)
    assert ok(Placed("b", BOX, 600, 800, 0, 0)) and not ok(Placed("b", BOX, 600, 801, 0, 0))


def test_sample_object_gaussian_on_terrain():
    ground = Ground(relief_amplitude=80.0, relief_wavelength=2000.0)
    rng = np.random.default_rng(1)
    ps = [sample_object(rng, "o", BOX, (1000, -500), 500.0, ground) for _ in range(2000)]
    xs, ys = np.array([p.x for p in ps]), np.array([p.y for p in ps])
    assert abs(xs.mean() - 1000) < 40 and abs(ys.mean() + 500) < 40 and abs(xs.std() - 500) < 30
    for p in ps[:50]:  # on the lowest terrain point under the footprint: never floating
        fp = p.footprint_world()
        assert p.z == pytest.approx(min(ground.height(fp[:, 0], fp[:, 1]).min(), ground.height(p.x, p.y)))
        assert p.z <= ground.height(p.x, p.y)
    assert any(p.z < ground.height(p.x, p.y) - 1.0 for p in ps[:50])  # slopes exist: base below the centre
    assert min(p.yaw for p in ps) < -170 and max(p.yaw for p in ps) > 170
    assert sample_object(rng, "o", BOX, (0, 0), 1.0, ground, yaw=12.0).yaw == 12.0


def test_sample_camera_range_and_aim():
    rng = np.random.default_rng(2)
    aim = (100.0, 200.0, 50.0)
    for _ in range(200):
        cam = sample_camera(rng, (100, 200), 2500, (150, 1500), 0.0, aim, 53.13, 224)
        x, y, z = cam.location
        assert -2400 <= x <= 2600 and -2300 <= y <= 2700 and 150 <= z <= 1500
        uv, depth = cam.project(np.array([aim]))
        assert depth[0] > 0 and np.allclose(uv[0], [112, 112], atol=1e-6)


def test_camera_clear():
    ok = camera_clear([Placed("a", BOX, 0, 0, 0, 0)], 30)
    assert not ok(Camera((60, 0, 100))) and ok(Camera((90, 0, 100)))


def test_in_frame():
    box = Placed("a", BOX, 0, 0, 0, 0)
    ok = in_frame([box], 4)
    far = Camera((-2000, 0, 50), look_at_rotation((-2000, 0, 50), (0, 0, 50)), 53.13, 224, 224)
    assert ok(far)
    near = Camera((-120, 0, 50), look_at_rotation((-120, 0, 50), (0, 0, 50)), 53.13, 224, 224)
    assert not ok(near)  # box fills more than the frame
    away = far.with_pose(rotation=look_at_rotation((-2000, 0, 50), (-4000, 0, 50)))
    assert not ok(away)  # behind the camera
    aside = far.with_pose(rotation=look_at_rotation((-2000, 0, 50), (0, 1000, 50)))
    assert not ok(aside)


def test_big_enough_is_an_upper_bound_test():
    box = Placed("a", BOX, 0, 0, 0, 0)  # 100 cm cube-ish prism
    cam = Camera((-1000, 0, 50), look_at_rotation((-1000, 0, 50), (0, 0, 50)), 90.0, 200, 200)
    # at ~950-1050 cm with f = 100 px, 100 cm spans ~10 px (the near face is wider)
    assert big_enough([box], 10)(cam) and not big_enough([box], 12)(cam)


def test_label_rules_separate_ambiguity_from_balance():
    src, tgt = (0.0, 0.0), (0.0, 100.0)  # target on +Y of the source
    rules = dict(label_rules(lambda cam: cam, src, tgt, 15, "right"))
    assert rules["ambiguity"]((-500, 0)) and rules["label"]((-500, 0))  # looking +X: +Y is right
    assert rules["ambiguity"]((500, 0)) and not rules["label"]((500, 0))  # looking -X: it is left
    assert not rules["ambiguity"]((-500, -500))  # 45 degrees: ambiguous
    assert not rules["ambiguity"]((0, 0))  # observer on the source


def test_visibility_failure():
    good = PixelCount(visible=90, unoccluded=100, bbox=(10, 10, 29, 19))
    assert visibility_failure({"a": good}, ["a"], 0.8, 20) is None
    assert visibility_failure({"a": good}, ["a"], 0.8, 21) == "too_small"
    assert visibility_failure({"a": PixelCount(79, 100, (0, 0, 50, 50))}, ["a"], 0.8, 10) == "occluded"
    assert visibility_failure({"a": PixelCount(0, 100, None)}, ["a"], 0.8, 10) == "occluded"  # hidden behind
    assert visibility_failure({"a": PixelCount(0, 0, None)}, ["a"], 0.8, 10) == "not_visible"
    assert visibility_failure({"a": good}, ["a", "b"], 0.8, 10) == "not_visible"


@pytest.mark.render
def test_a_prism_under_min_px_can_render_a_min_px_mask_box_and_the_screens_keep_it(server):
    """A box-shaped building whose prism projects to E in [11, 12) px renders a 12-px mask box
    (E px cover up to floor(E) + 1 pixel centres): the geometric screens must keep such views
    for the mask rule (``min_bbox_px`` = 12) to decide — they reject only E < 11."""
    from sceneforge.assets_manifest import AssetLibrary
    from sceneforge.engine.client import RenderClient
    from sceneforge.scenarios.sampling.conditioned import max_useful_distance
    from sceneforge.scenarios.sampling.rejection import aimed_camera, projection_rules
    from sceneforge.scenarios.sampling.screens import screen_aimed_cameras

    lib = AssetLibrary.default()
    aid = "proc_building_a"
    shape = AssetShape(aid, "building", np.asarray(lib.footprint(aid), float), float(lib.size_cm(aid)[2]))
    box = Placed("box", shape, 0.0, 0.0, 0.0, 0.0)
    found = []
    with RenderClient(server.address) as c:
        c.reset()
        c.spawn([box.actor((255, 0, 0))])
        for k, d in enumerate(np.linspace(25000.0, 27500.0, 60)):
            cam = aimed_camera(-d, 20.0 * (k % 7), 300.0 + 50.0 * (k % 5), tuple(box.centre()), 60.0, 224)
            uv, _ = cam.project(box.corners())
            extent = max(np.ptp(uv[:, 0]), np.ptp(uv[:, 1]))
            if not 11.0 <= extent < 12.0:
                continue
            bbox = c.visibility(0, ["box"], camera=cam)["box"].bbox
            if bbox is not None and max(bbox[2] - bbox[0] + 1, bbox[3] - bbox[1] + 1) >= 12:
                found.append((d, cam))
        c.reset()
    assert found, "no view with a prism under 12 px and a 12-px mask box: widen the distance sweep"
    rules = dict(projection_rules([box], 4.48, 12.0))
    (cx, cy), dmax = max_useful_distance(box.corners(), 12.0, 60.0, 224, 224)
    for d, cam in found:
        assert big_enough([box], 12.0)(cam) and rules["small_projection"](cam)
        eye = np.array([cam.location])
        assert screen_aimed_cameras(eye, box.centre(), 60.0, 224, [box.corners()], 4.48, 12.0) == [None]
        assert math.hypot(cam.location[0] - cx, cam.location[1] - cy) <= dmax
