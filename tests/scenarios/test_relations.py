"""Hand-checkable tests of SpaRRTa's labelling rules (observer at the origin looking along +X)."""

import math

import pytest

from sceneforge.core.errors import ConfigError
from sceneforge.scenarios.sampling.relations import LABELS, angle_and_cross, boundary_distance, classify, relation

O, S = (0.0, 0.0), (100.0, 0.0)  # line of sight along +X; UE +Y is to the observer's right


def at(angle_deg: float, side: int = 1, d: float = 50.0) -> tuple[float, float]:
    """Target at ``angle_deg`` from the line of sight, on the right (+1) or left (-1)."""
    a = math.radians(angle_deg)
    return (S[0] + d * math.cos(a), S[1] + side * d * math.sin(a))


@pytest.mark.parametrize(
    "target,label",
    [
        ((200, 0), "front"),  # straight beyond the source
        ((0, 0.5), "back"),  # between observer and source (angle ~180)
        ((100, 80), "right"),  # +Y is right in UE
        ((100, -80), "left"),
        ((150, 10), "front"),
        ((50, 10), "back"),
        ((110, 90), "right"),
        ((90, -90), "left"),
    ],
)
def test_quadrants(target, label):
    assert relation(O, S, target, 15) == label


@pytest.mark.parametrize("observer_yaw", [0, 37, 90, 180, 271])
def test_rotating_the_whole_scene_keeps_the_label(observer_yaw):
    """The rule depends on relative geometry only: rotate all points about the origin."""
    c, s = math.cos(math.radians(observer_yaw)), math.sin(math.radians(observer_yaw))
    rot = lambda p: (c * p[0] - s * p[1], s * p[0] + c * p[1])
    for target, label in [((200, 0), "front"), ((20, 0), "back"), ((100, 80), "right"), ((100, -80), "left")]:
        assert relation(rot(O), rot(S), rot(target), 15) == label


def test_observer_behind_flips_left_right():
    """Seen from the other side (+X looking -X) the same target swaps left/right and front/back."""
    other = (300.0, 0.0)
    assert relation(other, S, (100, 80), 15) == "left"
    assert relation(other, S, (0, 0), 15) == "front"


@pytest.mark.parametrize(
    "angle,cross,m,label",
    [
        (29.999, 1, 15, "front"),
        (30.0, 1, 15, None),  # 45 - m is exclusive
        (60.0, 1, 15, None),
        (60.001, 1, 15, "right"),  # 45 + m
        (119.999, -1, 15, "left"),
        (120.0, -1, 15, None),  # 135 - m
        (150.0, 1, 15, None),
        (150.001, 1, 15, "back"),  # 135 + m
        (34.0, 1, 10, "front"),
        (34.0, 1, 15, None),
        (35.0, 1, 10, None),  # the human's margin is smaller
        (44.999, 1, 0, "front"),
        (45.0, 1, 0, None),
        (45.001, 1, 0, "right"),
        (135.0, -1, 0, None),
        (135.001, -1, 0, "back"),
        (134.999, -1, 0, "left"),
        (0.0, 0, 15, "front"),
        (180.0, 0, 15, "back"),
        (90.0, 1, 44.9, "right"),
    ],
)
def test_boundaries(angle, cross, m, label):
    assert classify(angle, cross, m) == label


def test_geometric_boundaries_match_classify():
    assert relation(O, S, at(20), 15) == "front"
    assert relation(O, S, at(40), 15) is None
    assert relation(O, S, at(70, -1), 15) == "left"
    assert relation(O, S, at(125), 15) is None
    assert relation(O, S, at(160, -1), 15) == "back"
    assert relation(O, S, (200, 100), 0) is None  # exactly 45 degrees (atan2(1, 1))


def test_angle_and_cross_values():
    a, c = angle_and_cross(O, S, (100, 50))
    assert a == pytest.approx(90.0) and c == pytest.approx(100 * 50)
    a, c = angle_and_cross(O, S, (50, -50))
    assert a == pytest.approx(135.0) and c < 0
    assert boundary_distance(100.0) == pytest.approx(35.0)


def test_z_is_ignored():
    assert relation((0, 0, 500), (100, 0, 0), (100, 80, -300), 15) == "right"


@pytest.mark.parametrize("obs,src,tgt", [((0, 0), (0, 0), (1, 1)), ((0, 0), (5, 5), (5, 5))])
def test_degenerate_inputs_raise(obs, src, tgt):
    with pytest.raises(ConfigError, match="coincide"):
        relation(obs, src, tgt, 15)


@pytest.mark.parametrize("m", [-1, 45, 90])
def test_bad_margin(m):
    with pytest.raises(ConfigError, match="margin"):
        classify(90, 1, m)


def test_bad_points():
    with pytest.raises(ConfigError, match="observer"):
        relation((0,), S, (1, 1), 15)
    with pytest.raises(ConfigError, match="target"):
        relation(O, S, (float("nan"), 1), 15)


def test_labels_order_is_fixed():
    assert LABELS == ("front", "back", "left", "right")


def test_heading_relation_reads_along_the_camera_heading():
    """Issue 46: the same scene read along the camera's heading can name another sector than
    SpaRRTa's camera→source line when the source sits off the image centre."""
    from sceneforge.scenarios.sampling.relations import heading_angle_and_cross, heading_relation

    cam, src, tgt = (0.0, 0.0), (1000.0, 0.0), (1300.0, 0.0)  # target straight beyond the source
    assert relation(cam, src, tgt, 15) == "front"
    assert heading_relation(0.0, src, tgt, 15) == "front"  # heading along +X: the same line
    assert heading_relation(-90.0, src, tgt, 15) == "right"  # heading -Y: +X is the heading's right
    assert heading_relation(40.0, src, tgt, 15) is None  # 40° off: inside the 30..60° band
    angle, cross = heading_angle_and_cross(25.0, src, tgt)
    assert angle == pytest.approx(25.0) and cross < 0  # the target is left of a heading turned right
