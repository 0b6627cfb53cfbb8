"""Label-conditioned proposals (scenarios.sampling.conditioned) and the statistical proof that the new
SpaRRTa sampler draws the same distribution as the plain rejection sampler it replaces.

Statistical design: on one fixed desert scene, N = 1200 accepted samples from each sampler
(independent seeded streams; 800 allo figures), a two-sample Kolmogorov-Smirnov test per
marginal (camera x, y, z, yaw, pitch and the label angle for ego views; figure x, y, z, yaw,
angle, distance to the source; target x, y, yaw, distance; whole allo views with ``-m slow``),
family-wise
significance α = 0.01 per test function, Bonferroni-split over its marginals. Seeds are fixed,
so the outcome is deterministic; ``test_the_ks_check_has_power`` shows the same check rejects a
plausible bug (a proposal that forgets the Gaussian weight), so the equality tests can fail.
"""

import math
from collections import Counter

import numpy as np
import pytest
from scipy import stats
from shapely.geometry import Point, Polygon

from sceneforge.scenarios.sampling.conditioned import (
    ConvexRegion,
    Sector,
    gaussian_in_box,
    max_useful_distance,
    observer_sector,
    square_sector_region,
    truncated_normal,
)
from sceneforge.scenarios.sampling.rejection import AssetShape, Placed, big_enough, in_frame, aimed_camera
from sceneforge.scenarios.world.environments import load_env
from sceneforge.scenarios.sampling.relations import LABELS, angle_and_cross, relation
from sceneforge.scenarios.sampling.rejection import sample_rng
from sceneforge.scenarios.sparrta import scene
from sceneforge.scenarios.sparrta import scenario as sparrta
from sceneforge.scenarios.sparrta.config import parse_config
from sceneforge.scenarios.sampling.shapes import ShapeCache
from sceneforge.scenarios.sparrta.scene import build_group, sample_view

from reference_sampler import reference_human, reference_target, reference_view

N = 1200
ALPHA = 0.01


# --- the pieces -----------------------------------------------------------------------------------
@pytest.mark.parametrize("margin", [0.0, 10.0, 15.0, 44.0])
def test_observer_sector_is_exactly_the_label_region(margin):
    rng = np.random.default_rng(0)
    checked = Counter()
    for _ in range(4000):
        s, t, o = rng.normal(0, 500, 2), rng.normal(0, 500, 2), rng.uniform(-3000, 3000, 2)
        lab = relation(o, s, t, margin)
        for want in LABELS:
            sec = observer_sector(s, t, margin, want)
            off = math.degrees(math.atan2(o[1] - s[1], o[0] - s[0])) - sec.centre_deg
            off = (off + 180.0) % 360.0 - 180.0
            if abs(abs(off) - sec.half_deg) < 1e-6:
                continue  # on a boundary: the rule decides (strict bounds)
            assert (abs(off) < sec.half_deg) == (lab == want), (s, t, o, want, lab)
            checked[want] += abs(off) < sec.half_deg
    assert min(checked.values()) > 0.5 * 4000 * 2 * (45 - margin) / 360  # each sector was hit


def test_sector_distance_matches_shapely():
    rng = np.random.default_rng(1)
    for _ in range(300):
        sec = Sector(
            tuple(rng.normal(0, 100, 2)), float(rng.uniform(-180, 180)), float(rng.uniform(5, 80)), float(rng.uniform(100, 1000))
        )
        arc = [sec.point(sec.centre_deg - sec.half_deg + 2 * sec.half_deg * k / 400, sec.radius) for k in range(401)]
        poly = Polygon([sec.apex] + arc)
        p = rng.normal(0, 1000, 2)
        sag = sec.radius * (1 - math.cos(math.radians(sec.half_deg / 400)))  # chord sag
        assert sec.distance(p) == pytest.approx(poly.distance(Point(p)), abs=sag + 1e-6)


def test_square_sector_region_is_uniform_on_the_intersection():
    sec = observer_sector((300.0, -200.0), (500.0, 100.0), 15.0, "left")
    region = square_sector_region((0.0, 0.0), 2500.0, sec)
    rng = np.random.default_rng(2)
    new = np.array([region.sample(rng) for _ in range(3000)])
    ref = []
    while len(ref) < 3000:  # rejection from the square: the reference
        p = rng.uniform(-2500, 2500, 2)
        if relation(p, (300.0, -200.0), (500.0, 100.0), 15.0) == "left":
            ref.append(p)
    ref = np.array(ref)
    assert all(relation(p, (300.0, -200.0), (500.0, 100.0), 15.0) == "left" for p in new)
    for k in range(2):
        assert stats.ks_2samp(new[:, k], ref[:, k]).pvalue > ALPHA / 2
    assert ConvexRegion(np.zeros((0, 2))).area == 0.0


def test_truncated_normal_and_gaussian_in_box():
    rng = np.random.default_rng(3)
    for lo, hi in [(-100.0, 300.0), (600.0, 1400.0), (-1400.0, -600.0), (2500.0, 2600.0)]:
        xs = np.array([truncated_normal(rng, 0.0, 500.0, lo, hi) for _ in range(2000)])
        assert lo <= xs.min() and xs.max() <= hi
        assert stats.kstest(xs, stats.truncnorm(lo / 500, hi / 500, scale=500).cdf).pvalue > ALPHA / 4
    assert truncated_normal(rng, 0.0, 1.0, 60.0, 61.0) is None  # probability underflows: no draw
    sec = Sector((400.0, 300.0), 120.0, 30.0, 1000.0)
    new, ref = [], []
    while len(new) < 3000:
        p = gaussian_in_box(rng, (0.0, 0.0), 500.0, sec.polygon().bounds)
        new.append(p) if sec.contains(p) else None
    while len(ref) < 3000:
        p = rng.normal(0, 500, 2)
        ref.append(p) if sec.contains(p) else None
    new, ref = np.array(new), np.array(ref)
    for k in range(2):
        assert stats.ks_2samp(new[:, k], ref[:, k]).pvalue > ALPHA / 2


def test_max_useful_distance_never_drops_a_view_the_rules_keep():
    rng = np.random.default_rng(4)
    dropped = 0
    for _ in range(3000):
        fp = rng.uniform(20, 200, 2)
        shape = AssetShape(
            "a", "a", np.array([[-fp[0], -fp[1]], [fp[0], -fp[1]], [fp[0], fp[1]], [-fp[0], fp[1]]]), float(rng.uniform(20, 300))
        )
        obj = Placed("a", shape, 0.0, 0.0, 0.0, float(rng.uniform(-180, 180)))
        (cx, cy), dmax = max_useful_distance(obj.corners(), 12.0, 53.13, 224, 224)
        d, b = rng.uniform(0.5, 3) * dmax, rng.uniform(-180, 180)
        eye = (cx + d * math.cos(math.radians(b)), cy + d * math.sin(math.radians(b)), float(rng.uniform(0, 1500)))
        aim = obj.centre() + rng.normal(0, 0.2, 3) * shape.height
        cam = aimed_camera(*eye, aim, 53.13, 224)
        keeps = in_frame([obj], 4.48)(cam) and big_enough([obj], 12.0)(cam)
        if d > dmax:  # the region leaves it out: the rules must reject it too
            assert not keeps, (fp, shape.height, d, dmax)
            dropped += 1
    assert dropped > 1000


# --- the SpaRRTa sampler vs the reference rejection sampler -----------------------------------------
@pytest.fixture(scope="module")
def desert():
    env = load_env("desert")
    shapes = ShapeCache(env.library)
    return env, shapes, shapes.pick(np.random.default_rng(0), "human")


def _group(desert, task, g=0):
    env, shapes, _ = desert
    # the reference (reference_sampler.py) is the plain rejection sampler of the centroid-aimed
    # ("jitter") policy, kept verbatim: compare the conditioned sampler under that policy (the
    # default since 0.6.0, "decorrelated", aims at a drawn screen point and adds the heading rule)
    st = sparrta.setting_for(parse_config({"tasks": [task], "camera_policy": "jitter"}), env, task)
    group = build_group(
        sample_rng(5, "desert", task, "rock_truck", g, 1), ("k", g), "rock", "truck", shapes, st, env.ground, env.clutter
    )
    return st, group


def _views(fn, seed, desert, st, group, task, want, n=N):
    env, _, human = desert
    rng, counts, out = np.random.default_rng(seed), Counter(), []
    while len(out) < n:
        out.append(fn(rng, group, task, want, st, env.ground, human, counts))
    return out, counts


def _humans(fn, seed, desert, st, group, want, n):
    """Only the allo figure (the part of an allo view that the label conditions): n draws."""
    env, _, human = desert
    rng, counts = np.random.default_rng(seed), Counter()
    return [fn(rng, group, want, st, env.ground, human, counts) for _ in range(n)], counts


def _marginals(views, group, task):
    cols = {
        "cam_x": [v.camera.location[0] for v in views],
        "cam_y": [v.camera.location[1] for v in views],
        "cam_z": [v.camera.location[2] for v in views],
        "cam_yaw": [v.camera.rotation.yaw for v in views],
        "cam_pitch": [v.camera.rotation.pitch for v in views],
        "angle": [v.angle_deg for v in views],
    }
    if task == "allo":
        cols |= {
            "human_x": [v.human.x for v in views],
            "human_y": [v.human.y for v in views],
            "human_yaw": [v.human.yaw for v in views],
        }
    return {k: np.asarray(v) for k, v in cols.items()}


def _human_marginals(humans, group):
    src, tgt = group.source.location, group.target.location
    return {
        "x": np.array([h.x for h in humans]),
        "y": np.array([h.y for h in humans]),
        "z": np.array([h.z for h in humans]),
        "yaw": np.array([h.yaw for h in humans]),
        "angle": np.array([angle_and_cross(h.location, src, tgt)[0] for h in humans]),
        "dist": np.array([math.hypot(h.x - src[0], h.y - src[1]) for h in humans]),
    }


def _ks(a: dict, b: dict) -> dict:
    return {k: stats.ks_2samp(a[k], b[k]).pvalue for k in a}


def _check_views(desert, task, want, n):
    st, group = _group(desert, task)
    new, new_counts = _views(sample_view, 11, desert, st, group, task, want, n)
    ref, ref_counts = _views(reference_view, 12, desert, st, group, task, want, n)
    for v in new:  # the labelling rule, on the final poses, agrees with the label asked for
        obs = v.camera.location if task == "ego" else v.human.location
        assert relation(obs, group.source.location, group.target.location, st.margin_deg) == want
    pvals = _ks(_marginals(new, group, task), _marginals(ref, group, task))
    assert min(pvals.values()) > ALPHA / len(pvals), pvals
    # and the point of it: label and ambiguity rejections all but vanish
    assert (new_counts["label"] + new_counts["ambiguity"]) / n < 0.01
    assert (ref_counts["label"] + ref_counts["ambiguity"]) / n > 1.0


@pytest.mark.parametrize("want", ["front", "right"])
def test_ego_views_have_the_reference_distribution(desert, want):
    _check_views(desert, "ego", want, N)


@pytest.mark.slow
@pytest.mark.parametrize("want", ["back", "left"])
def test_allo_views_have_the_reference_distribution(desert, want):
    """Whole allo views (figure, then camera): ~2 min under load, hence slow; the figure alone
    is checked by default below."""
    _check_views(desert, "allo", want, N)


N_HUMAN = 800


@pytest.fixture(scope="module")
def reference_humans(desert):
    st, group = _group(desert, "allo")
    return st, group, _humans(reference_human, 12, desert, st, group, "back", N_HUMAN)


def test_allo_figure_has_the_reference_distribution(desert, reference_humans):
    st, group, (ref, ref_counts) = reference_humans
    new, counts = _humans(scene._sample_human, 11, desert, st, group, "back", N_HUMAN)
    assert all(relation(h.location, group.source.location, group.target.location, st.margin_deg) == "back" for h in new)
    pvals = _ks(_human_marginals(new, group), _human_marginals(ref, group))
    assert min(pvals.values()) > ALPHA / len(pvals), pvals
    assert counts["label"] + counts["ambiguity"] == 0 and ref_counts["label"] + ref_counts["ambiguity"] > N_HUMAN
    assert counts["proposal"] < 0.5 * (ref_counts["label"] + ref_counts["ambiguity"])


def test_the_ks_check_has_power(desert, reference_humans, monkeypatch):
    """A plausible bug, a proposal that forgets the Gaussian weight (uniform on the box), is
    caught by the same check at the same N and α: so the equality tests above can fail."""
    st, group, (ref, _) = reference_humans
    monkeypatch.setattr(scene, "gaussian_in_box", lambda r, c, s, b: (r.uniform(b[0], b[2]), r.uniform(b[1], b[3])))
    bad, _ = _humans(scene._sample_human, 11, desert, st, group, "back", N_HUMAN)
    pvals = _ks(_human_marginals(bad, group), _human_marginals(ref, group))
    assert min(pvals.values()) < ALPHA / len(pvals), pvals


def test_target_placement_has_the_reference_distribution(desert):
    env, shapes, _ = desert
    st, _ = _group(desert, "ego")
    rng_new, rng_ref = np.random.default_rng(21), np.random.default_rng(22)
    rows_new, rows_ref = [], []
    for k in range(N):
        g = build_group(rng_new, ("k", k), "rock", "truck", shapes, st, env.ground, None)
        rows_new.append((g.target.x, g.target.y, g.target.yaw, math.hypot(g.target.x - g.source.x, g.target.y - g.source.y)))
        src = g.source  # same source, reference target draw
        t = reference_target(rng_ref, src, g.target.shape, st, env.ground, Counter())
        rows_ref.append((t.x, t.y, t.yaw, math.hypot(t.x - src.x, t.y - src.y)))
    a, b = np.array(rows_new), np.array(rows_ref)
    pvals = [stats.ks_2samp(a[:, k], b[:, k]).pvalue for k in range(4)]
    assert min(pvals) > ALPHA / 4, pvals


# --- the allo figure's polygon proposal (GaussianOnPolygon over the region minus obstacles) ---------
def test_gaussian_on_polygon_is_the_restricted_gaussian():
    from shapely.geometry import MultiPolygon, box

    from sceneforge.scenarios.sampling.conditioned import GaussianOnPolygon

    ring = box(-300, -900, 1400, 700).difference(box(100, -400, 700, 300))  # a hole where the mass is
    poly = MultiPolygon([ring, box(-1500, 900, -1100, 1300)])  # and a far island
    sampler = GaussianOnPolygon(poly, (200.0, 0.0), 500.0)
    rng, new, tries = np.random.default_rng(31), [], 0
    while len(new) < 3000:
        tries += 1
        p = sampler.draw(rng)
        if p is not None:
            new.append(p)
    ref = []
    while len(ref) < 3000:
        p = rng.normal((200.0, 0.0), 500.0)
        if poly.contains(Point(p)):
            ref.append(p)
    new, ref = np.array(new), np.array(ref)
    assert all(poly.covers(Point(p)) for p in new[:500])
    for k in range(2):
        assert stats.ks_2samp(new[:, k], ref[:, k]).pvalue > ALPHA / 2
    assert len(new) / tries > 0.3  # about one try in two is kept
    assert GaussianOnPolygon(Polygon(), (0.0, 0.0), 1.0).empty


def test_free_region_keeps_every_position_the_overlap_rule_keeps():
    from sceneforge.scenarios.sampling.conditioned import clearance_radius, free_region
    from sceneforge.scenarios.sampling.rejection import no_overlap
    from shapely.geometry import box

    rng = np.random.default_rng(32)
    fig = AssetShape("fig", "human", np.array([[-25.0, -18.0], [25.0, -18.0], [30.0, 10.0], [0.0, 22.0], [-28.0, 8.0]]), 180.0)
    rho = clearance_radius(fig.footprint)
    assert rho == pytest.approx(18.0)  # the nearest edge: y = -18
    kept = removed = 0
    for _ in range(60):
        square = np.array([[-1, -1], [1, -1], [1, 1], [-1, 1]])
        obstacles = [
            Placed(
                f"o{k}",
                AssetShape("o", "o", rng.uniform(30, 300, 2) * square, 100.0),
                *rng.uniform(-800, 800, 2),
                0.0,
                float(rng.uniform(-180, 180)),
            )
            for k in range(4)
        ]
        region = free_region(box(-1000, -1000, 1000, 1000), [o.polygon() for o in obstacles], 20.0, rho)
        rule = no_overlap(obstacles, 20.0)
        for _ in range(100):
            p = Placed("human", fig, *rng.uniform(-1000, 1000, 2), 0.0, float(rng.uniform(-180, 180)))
            if rule(p):
                kept += 1
                assert region.covers(Point(p.x, p.y)), (p.x, p.y)
            removed += not region.covers(Point(p.x, p.y))
    assert kept > 1000 and removed > 500  # the region does leave places out


@pytest.fixture(scope="module")
def bridge_scene():
    """A bridge scene whose obstacles reject figures for label 'back' (the pond, a ground
    feature, is walkable in both samplers: the reference sees the obstacles only)."""
    import dataclasses

    env = load_env("bridge")
    shapes = ShapeCache(env.library, lambda cls: env.variants(cls, env.library))
    st = sparrta.setting_for(parse_config({"tasks": ["allo"], "envs": ["bridge"]}), env, "allo")
    rng = sample_rng(12345, "bridge", "allo", "tree_truck", 0, 1)
    group = build_group(
        rng, ("k", 0), "tree", "truck", shapes, st, env.ground, lambda r, keep: env.clutter(r, keep, library=shapes.lib)
    )
    human = shapes.pick(rng, "human")
    group = dataclasses.replace(group, clutter=scene.obstacles(group), regions={})
    return env, st, group, human


def test_allo_figure_from_polygon_proposals_has_the_reference_distribution(bridge_scene, monkeypatch):
    env, st, group, human = bridge_scene
    desert_like = (env, None, human)
    ref, ref_counts = _humans(reference_human, 42, desert_like, st, group, "back", N_HUMAN)
    monkeypatch.setattr(scene, "BOX_PROPOSALS", 0)  # every try from the polygon sampler
    new, counts = _humans(scene._sample_human, 41, desert_like, st, group, "back", N_HUMAN)
    assert all(relation(h.location, group.source.location, group.target.location, st.margin_deg) == "back" for h in new)
    pvals = _ks(_human_marginals(new, group), _human_marginals(ref, group))
    assert min(pvals.values()) > ALPHA / len(pvals), pvals
    assert ref_counts["overlap"] > 0.2 * N_HUMAN  # obstacles matter in this scene
    assert counts["overlap"] < 0.1 * ref_counts["overlap"] and counts["proposal"] < 2 * N_HUMAN


def test_screened_cameras_fail_only_what_the_projection_rules_fail():
    """The vectorised screen of camera candidates (screens.screen_aimed_cameras) is a necessary
    condition of the projection rules: every eye it fails, the scalar rules fail too (so drawing
    many candidates at once keeps the distribution); and it does fail most of the bad ones."""
    from sceneforge.scenarios.sampling.rejection import projection_rules
    from sceneforge.scenarios.sampling.screens import screen_aimed_cameras

    rng = np.random.default_rng(33)
    flagged = agree = 0
    for _ in range(40):
        square = np.array([[-1, -1], [1, -1], [1, 1], [-1, 1]])
        objs = [
            Placed(
                f"o{k}",
                AssetShape("o", "o", rng.uniform(10, 150, 2) * square, float(rng.uniform(20, 300))),
                *rng.normal(0, 400, 2),
                0.0,
                float(rng.uniform(-180, 180)),
            )
            for k in range(2)
        ]
        aim = np.mean([o.centre() for o in objs], axis=0)
        eyes = np.column_stack([rng.uniform(-2500, 2500, (60, 2)), rng.uniform(100, 1500, 60)])
        fails = screen_aimed_cameras(eyes, aim, 53.13, 224, [o.corners() for o in objs], 4.48, 12.0)
        rules = projection_rules(objs, 4.48, 12.0)
        for e, f in zip(eyes, fails):
            cam = aimed_camera(*e, tuple(aim), 53.13, 224)
            scalar = next((name for name, ok in rules if not ok(cam)), None)
            if f is not None:
                flagged += 1
                assert scalar is not None, (e, f)
            agree += (f is None) == (scalar is None)
    assert flagged > 200 and agree / 2400 > 0.99
