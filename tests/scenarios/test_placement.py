"""Clutter placement: the cheap bounds (boxes, inner discs, zone rectangles) only ever decide what
shapely would decide. Every environment places exactly the reference's clutter (the placement
before the bounds, tests/scenarios/reference_placement.py), and on hand-built shapes at, just
inside and just outside the gap (near-tangent) the collision and zone tests give shapely's answer.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import shapely
from shapely.geometry import Point

from sceneforge.assets_manifest import AssetLibrary
import reference_placement as ref  # tests/scenarios is on sys.path (as for reference_sampler)
from sceneforge.scenarios.world.environments import list_envs, load_env
from sceneforge.scenarios.world.occupancy import Occupancy
from sceneforge.scenarios.world.placement import Line
from sceneforge.scenarios.world.placement_bounds import AssetFootprint, Candidate, ScaledFootprint
from sceneforge.scenarios.world.zones import Zone, in_zones, zone_geometry

SQUARE = np.array([[-50.0, -50.0], [50.0, -50.0], [50.0, 50.0], [-50.0, 50.0]])  # 1 m, origin at its centre
CAR = np.array(
    [
        [-225.0, -70.0],
        [-200.0, -90.0],
        [200.0, -90.0],
        [225.0, -70.0],  # rounded corners
        [225.0, 70.0],
        [200.0, 90.0],
        [-200.0, 90.0],
        [-225.0, 70.0],
    ]
)
WEDGE = np.array([[100.0, 0.0], [300.0, 0.0], [300.0, 80.0]])  # origin outside: no inner disc
_T = np.linspace(0, 2 * np.pi, 21)[:-1]
DUNE = np.stack([600.0 * np.cos(_T), 200.0 * np.sin(_T)], axis=1)  # long and thin (oriented boxes, core)
SHAPES = (SQUARE, CAR, WEDGE, DUNE)


@pytest.fixture(scope="module")
def lib():
    return AssetLibrary.procedural()


@pytest.mark.parametrize("name", list_envs())
def test_clutter_is_the_reference_placement_draw_for_draw(name, lib):
    """Same objects, positions, yaws, scales and order, and the generator left in the same state."""
    env = load_env(name, library=lib)
    for seed in range(4):
        keep = [(0.0, 0.0, 800.0), (300.0 * seed, -200.0, 450.0)]
        rng_a, rng_b = np.random.default_rng(seed), np.random.default_rng(seed)
        got = [
            (a.asset_id, a.transform.location[0], a.transform.location[1], a.transform.rotation.yaw, a.transform.scale[0])
            for a in env.clutter(rng_a, keep_out=keep, library=lib)
        ]
        want = ref.reference_clutter(env, rng_b, keep, lib)
        assert got == want, f"{name} seed {seed}"
        assert rng_a.random() == rng_b.random()


def _polygon_candidate(footprint, x, y, yaw, scale=1.0):
    asset = AssetFootprint(footprint)
    shapes = ScaledFootprint(asset, scale)
    return Candidate(x, y, yaw, 0.0, inner=(x, y, asset.inner * scale) if asset.inner > 0 else None, shapes=shapes)


def _both(placed, keep_out=()):
    """The same objects in the production Occupancy and in the reference one."""
    occ, old = Occupancy(keep_out), ref.Occupancy(keep_out)
    for c, radius, group in placed:
        occ.add_candidate(c, radius, group)
        old.add(c.geom, c.pad, c.x, c.y, radius, group)
    return occ, old


def _radius(footprint, scale=1.0):
    return AssetFootprint(footprint).radius * scale


def _agree(occ, old, c, radius, gap, overlap=None):
    want = old.clear(ref.Candidate(c.x, c.y, c.yaw, c.pad, geom=c.geom), radius, gap, overlap)
    assert occ.clear(c, radius, gap, overlap) is want
    return want


@pytest.mark.parametrize("delta", [-1e-3, -1e-9, 0.0, 1e-9, 1e-3])
def test_squares_at_the_gap(delta):
    """Two 1 m squares side by side, their facing edges exactly ``gap + delta`` apart: clear iff
    ``delta >= 0`` (the bounds must hand the tangent cases to shapely, not guess)."""
    gap = 100.0
    a = _polygon_candidate(SQUARE, 0.0, 0.0, 0.0)
    occ, old = _both([(a, _radius(SQUARE), 0)])
    c = _polygon_candidate(SQUARE, 100.0 + gap + delta, 0.0, 0.0)
    assert _agree(occ, old, c, _radius(SQUARE), gap) is (delta >= 0)
    turned = _polygon_candidate(SQUARE, 0.0, 100.0 + gap + delta, 90.0)  # same, turned a quarter
    assert _agree(occ, old, turned, _radius(SQUARE), gap) is (delta >= 0)


@pytest.mark.parametrize("delta", [-1e-3, -1e-9, 0.0, 1e-9, 1e-3])
def test_discs_at_the_gap(delta):
    """Discs (padded points) whose rims are ``gap + delta`` apart, and a disc by a square."""
    gap, r = 50.0, 120.0
    occ, old = _both([(Candidate(0.0, 0.0, 0.0, r), r, 0)])
    c = Candidate(2 * r + gap + delta, 0.0, 0.0, r)
    assert _agree(occ, old, c, r, gap) is (delta >= 0)
    d = (2 * r + gap + delta) / math.sqrt(2.0)  # the same along the diagonal
    _agree(occ, old, Candidate(d, d, 0.0, r), r, gap)
    occ, old = _both([(_polygon_candidate(SQUARE, 0.0, 0.0, 0.0), _radius(SQUARE), 0)])
    c = Candidate(50.0 + r + gap + delta, 0.0, 0.0, r)
    assert _agree(occ, old, c, r, gap) is (delta >= 0)


def test_touching_and_overlapping_polygons_with_no_gap():
    """gap 0: polygons that touch or overlap are 0 apart, which is not clear (shapely's ``> 0``);
    ones a hair apart are clear."""
    occ, old = _both([(_polygon_candidate(SQUARE, 0.0, 0.0, 0.0), _radius(SQUARE), 0)])
    for x, clear in ((100.0, False), (60.0, False), (0.0, False), (100.0 + 1e-6, True)):
        assert _agree(occ, old, _polygon_candidate(SQUARE, x, 0.0, 0.0), _radius(SQUARE), 0.0) is clear


def test_overlap_group_and_keep_out():
    """Objects of the overlap group are ignored; a keep-out disc is always tested on the disc."""
    a = _polygon_candidate(SQUARE, 0.0, 0.0, 0.0)
    occ, old = _both([(a, _radius(SQUARE), 3)], keep_out=[(1000.0, 0.0, 100.0)])
    c = _polygon_candidate(SQUARE, 50.0, 0.0, 0.0)
    assert _agree(occ, old, c, _radius(SQUARE), 10.0, overlap=3) is True
    assert _agree(occ, old, c, _radius(SQUARE), 10.0, overlap=2) is False
    for nudge, clear in ((1e-6, False), (-1e-6, True)):  # the disc just inside / outside the keep-out
        near = _polygon_candidate(SQUARE, 1000.0 - 100.0 - _radius(SQUARE) - 10.0 + nudge, 0.0, 0.0)
        assert _agree(occ, old, near, _radius(SQUARE), 10.0) is clear


def test_random_crowds_agree_with_shapely():
    """Random crowds of squares, cars, wedges (no inner disc), dunes and discs at any yaw, each new
    spot nudged onto the gap's edge half the time: every answer is the reference's."""
    rng = np.random.default_rng(5)
    shapes = list(SHAPES)
    for trial in range(40):
        gap = float(rng.choice([0.0, 20.0, 150.0]))
        placed = []
        for _ in range(12):
            fp = shapes[int(rng.integers(len(shapes)))]
            s = float(rng.uniform(0.5, 2.0))
            yaw = float(rng.choice([0.0, 90.0, -90.0, 180.0, rng.uniform(-180, 180)]))
            x, y = rng.uniform(-1500, 1500, size=2)
            if rng.random() < 0.3:
                placed.append((Candidate(float(x), float(y), 0.0, 60.0 * s), 60.0 * s, int(rng.integers(2))))
            else:
                c = _polygon_candidate(fp, float(x), float(y), yaw, s)
                placed.append((c, _radius(fp, s), int(rng.integers(2))))
        occ, old = _both(placed)
        for _ in range(60):
            fp = shapes[int(rng.integers(len(shapes)))]
            s = float(rng.uniform(0.5, 2.0))
            yaw = float(rng.choice([0.0, 90.0, rng.uniform(-180, 180)]))
            x, y = (float(v) for v in rng.uniform(-1500, 1500, size=2))
            disc = rng.random() < 0.3
            c = Candidate(x, y, 0.0, 60.0 * s) if disc else _polygon_candidate(fp, x, y, yaw, s)
            if rng.random() < 0.5:  # slide it along x until it is exactly ``gap`` from its nearest
                others = shapely.distance(c.geom, np.array([p.geom for p, _, _ in placed], dtype=object))
                k = int(np.argmin(others - np.array([p.pad for p, _, _ in placed])))
                d = float(others[k]) - placed[k][0].pad - c.pad - gap
                if d > 0:
                    step = -d if placed[k][0].x > x else d
                    x += step + float(rng.choice([0.0, 1e-9, -1e-9, 1e-5]))
                    c = Candidate(x, y, 0.0, 60.0 * s) if disc else _polygon_candidate(fp, x, y, yaw, s)
            radius = 60.0 * s if disc else _radius(fp, s)
            _agree(occ, old, c, radius, gap, int(rng.integers(3)) if rng.random() < 0.3 else None)


def test_zone_tests_agree_with_shapely():
    """in_zones with the rectangles' shortcuts gives the answer of shapely alone, for spots deep
    inside, far outside, on the edges, across the seam of two touching rectangles and at a corner."""
    rects = [[0, 0, 1000, 400], [1000, 0, 1400, 400], [0, 400, 400, 1400]]  # an L, one seam inside it
    fast, exact = Zone(rects), Zone(geom=zone_geometry(rects))
    rng = np.random.default_rng(2)
    spots = [
        (x, y)
        for x in (-30.0, 0.0, 1e-9, 30.0, 200.0, 370.0, 400.0, 430.0, 1000.0, 1370.0, 1400.0, 1430.0)
        for y in (-30.0, 0.0, 30.0, 200.0, 370.0, 400.0, 430.0, 1370.0, 1400.0)
    ]
    # 30 cm discs and 60 cm squares centred 30 cm from an edge, poking out (or in) by a nanometre
    spots += [(30.0 + e, 200.0) for e in (-1e-9, 1e-9)] + [(200.0, 370.0 + e) for e in (-1e-9, 1e-9)]
    spots += [(1370.0 + e, 200.0) for e in (-1e-9, 1e-9)] + [(200.0, 1370.0 + e) for e in (-1e-9, 1e-9)]
    spots += [tuple(float(v) for v in rng.uniform(-300, 1700, size=2)) for _ in range(300)]
    for x, y in spots:
        for c, radius in (
            (Candidate(x, y, 0.0, 30.0), 30.0),
            (Candidate(x, y, 0.0, 0.0), 0.0),
            (_polygon_candidate(SQUARE, x, y, 0.0, 0.6), _radius(SQUARE, 0.6)),
            (_polygon_candidate(CAR, x, y, 33.0, 0.5), _radius(CAR, 0.5)),
            (_polygon_candidate(WEDGE, x, y, 90.0), _radius(WEDGE)),
        ):
            old = ref.Candidate(c.x, c.y, c.yaw, c.pad, geom=c.geom)
            for avoid, within in ((fast, None), (None, fast)):
                want = ref.in_zones(old, radius, exact.geom if avoid else None, exact.geom if within else None)
                assert in_zones(c, radius, avoid, within) is want, (x, y, c.is_disc, avoid is fast)


def _obb_polygon(o):
    x, y, c, s, x0, y0, x1, y1 = o[:8]
    local = np.array([[x0, y0], [x1, y0], [x1, y1], [x0, y1]])
    return shapely.polygons(local @ np.array([[c, s], [-s, c]]) + (x, y))


def test_an_empty_zone_is_left_to_shapely():
    """A zone with no rectangle: nothing is inside it, nothing touches it (shapely's answers)."""
    c = Candidate(10.0, 20.0, 0.0, 30.0)
    old = ref.Candidate(c.x, c.y, c.yaw, c.pad, geom=c.geom)
    empty = zone_geometry([])
    for avoid, within in ((Zone([]), None), (None, Zone([]))):
        want = ref.in_zones(old, 30.0, empty if avoid else None, empty if within else None)
        assert in_zones(c, 30.0, avoid, within) is want
    assert Zone([]).rects is None and Zone([[0, 0, math.inf, 1]]).rects is None


def test_box_and_fill_bound_the_turned_footprint():
    """A candidate's box holds its polygon and every point of the box is within ``fill`` of it;
    the same for its oriented box; its core lies inside it."""
    rng = np.random.default_rng(9)
    for fp in SHAPES:
        for yaw in [0.0, 90.0, -90.0, 180.0, 45.0] + list(rng.uniform(-180, 180, size=20)):
            c = _polygon_candidate(fp, 1234.5, -678.9, float(yaw), 1.7)
            x0, y0, x1, y1 = c.box
            gx0, gy0, gx1, gy1 = c.geom.bounds
            assert x0 <= gx0 + 1e-9 and y0 <= gy0 + 1e-9 and x1 >= gx1 - 1e-9 and y1 >= gy1 - 1e-9
            corners = [Point(px, py) for px in (x0, x1) for py in (y0, y1)]
            assert max(c.geom.distance(p) for p in corners) <= c.fill + 1e-9
            obb = _obb_polygon(c.obb)
            assert obb.buffer(1e-9).contains(c.geom)
            assert max(c.geom.distance(Point(p)) for p in obb.exterior.coords) <= c.obb[8] + 1e-9
            if c.core is not None:
                assert c.geom.buffer(1e-9).contains(_obb_polygon(c.core))
            assert (c.core is None) is (fp is WEDGE)  # the wedge's box shrunk about its centre leaves it
    assert math.isfinite(AssetFootprint(CAR).fill) and AssetFootprint(WEDGE).inner == 0.0


def test_line_draws_the_same_points():
    """Line.draw in plain floats: the same point, direction and side as the vector form."""
    segs = [[950, 950, 9000, 950], [9000, -950, 950, -950], [-950, 950, -950, 9000], [0, 0, 3000, 1733]]
    line, old = Line(segs), ref.Line(segs)
    a, b = np.random.default_rng(1), np.random.default_rng(1)
    for _ in range(500):
        p, d, n = line.draw(a)
        q, e, m = old.draw(b)
        assert (p, d, n) == (tuple(q.tolist()), tuple(e.tolist()), tuple(m.tolist()))
