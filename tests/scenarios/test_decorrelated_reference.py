"""The ``decorrelated`` camera policy (the default since 0.6.0) against a plain rejection
reference: the fast sampler (``scene.sample_view``: eyes drawn uniformly on the label's sector ∩
the useful discs, screened in vectorised batches) must draw the same views as drawing the camera
from the policy's prior and keeping it only if every rule holds.

The reference below is written from the policy's docstrings (``camera_policy.py``, ``scene.py``),
not from the fast path: per sample a screen point uniform in ``DECORRELATED_WINDOW`` (drawn once,
before any camera, as ``setting.sample_setting`` does: the point is the sample's, never redrawn
with the camera); then, until every rule holds, an eye uniform in ``centre ± cam_xy_range`` at
``base_z + uniform(cam_height_range)``, aimed so the anchor (ego: the source-target midpoint; allo:
the centroid of source, target and figure) lands on that point; rules: the label and its
ambiguity margin around the camera→source line (ego), the same label read along the camera's
heading (ego), every labelled object in frame and at least ``min_bbox_px`` (allo: 16 px) by its
prism and its silhouette, the camera clear of the labelled objects and the standing clutter. The
allo figure comes from the plain reference of ``reference_sampler.py`` (its own equality is
``test_conditioned.py``'s). A sample whose screen point no camera frames within the budget is
dropped in both samplers (ego budget: ``max_tries`` candidates on the label's side, where the fast
sampler's ``max_tries`` all lie).

Statistical design (as ``test_conditioned.py``): one fixed desert scene per task, independent
seeded streams, a two-sample Kolmogorov-Smirnov test per marginal (camera x, y, z, yaw, pitch,
the anchor's projected screen x and y, the label angle), family-wise α = 0.01 per test,
Bonferroni-split over the marginals. Seeds are fixed, so the outcome is deterministic; the power
tests show the same check rejects a reference that forgets the heading rule and (``-m slow``:
~3 min, the shifted window's edge points exhaust their budgets) one whose screen point comes from
a window shifted by 0.1. Allo runs without a layout quota by default and, with ``-m slow``, with
the shipped desert quota (``reference_quota_view``: whole reference views kept by the quota's
probability). ~55 s by default under load (N_EGO = 1000, N_ALLO = 400).
"""

from collections import Counter
from dataclasses import replace

import numpy as np
import pytest
from scipy import stats

from reference_sampler import reference_human
from sceneforge.core.errors import PlacementError
from sceneforge.engine.world import Camera, look_at_rotation
from sceneforge.scenarios.sampling.rejection import big_enough, camera_clear, in_frame, label_rules, sample_rng
from sceneforge.scenarios.sampling.relations import angle_and_cross, heading_relation, relation
from sceneforge.scenarios.sampling.shapes import ShapeCache
from sceneforge.scenarios.sampling.silhouette import big_enough_silhouettes
from sceneforge.scenarios.sparrta import scenario as sparrta
from sceneforge.scenarios.sparrta.camera_policy import DECORRELATED_WINDOW, aims_at_screen
from sceneforge.scenarios.sparrta import scene
from sceneforge.scenarios.sparrta.config import parse_config
from sceneforge.scenarios.sparrta.quotas import view_features
from sceneforge.scenarios.sparrta.scene import CAMERA_CLEARANCE_CM, IN_FRAME_MARGIN, View, build_group, obstacles, sample_view
from sceneforge.scenarios.world.environments import load_env

ALPHA = 0.01
N_EGO = 1000
N_ALLO = 400


@pytest.fixture(scope="module")
def desert():
    env = load_env("desert")
    shapes = ShapeCache(env.library)
    return env, shapes, shapes.pick(np.random.default_rng(0), "human")


def _scene(desert, task):
    env, shapes, _ = desert
    st = sparrta.setting_for(parse_config({"tasks": [task]}), env, task)  # the default policy: decorrelated
    assert st.anchor == {"ego": "pair", "allo": "all"}[task] and st.heading_margin == (task == "ego") and st.quota is None
    group = build_group(
        sample_rng(5, "desert", task, "rock_truck", 0, 1), ("k", 0), "rock", "truck", shapes, st, env.ground, env.clutter
    )
    return st, group


def _anchor(task, objects):
    pts = [o.centre() for o in (objects[:2] if task == "ego" else objects)]
    return np.mean(pts, axis=0)


def reference_camera(rng, group, task, want, st, human, screen, counts, heading_rule=True):
    """The plain rejection reference of the decorrelated camera (see the module docstring)."""
    src, tgt = group.source, group.target
    objects = [src, tgt] + ([human] if human is not None else [])
    anchor = _anchor(task, objects)
    base_z = float(np.mean([o.z for o in objects]))
    labels = label_rules(lambda c: c.location, src.location, tgt.location, st.margin_deg, want) if task == "ego" else []
    rules = []
    if task == "ego" and heading_rule:
        rules += [("heading", lambda c: heading_relation(c.rotation.yaw, src.location, tgt.location, st.margin_deg) == want)]
    rules += [
        ("in_frame", in_frame(objects, IN_FRAME_MARGIN * st.size)),
        ("small_projection", big_enough(objects, st.min_bbox_px)),
        ("small_projection", big_enough_silhouettes([o.drawable_world() for o in objects], st.min_bbox_px)),
        ("camera_clear", camera_clear(objects + obstacles(group), CAMERA_CLEARANCE_CM)),
    ]
    lo, hi = st.cam_height_range_cm
    budget = 0
    while budget < st.max_tries:
        eye = np.array(
            [
                rng.uniform(st.centre[0] - st.cam_xy_range_cm, st.centre[0] + st.cam_xy_range_cm),
                rng.uniform(st.centre[1] - st.cam_xy_range_cm, st.centre[1] + st.cam_xy_range_cm),
                base_z + rng.uniform(lo, hi),
            ]
        )
        aim = aims_at_screen(eye[None, :], anchor, screen, st.fov_deg)[0]
        cam = Camera(tuple(eye), look_at_rotation(tuple(eye), tuple(aim)), st.fov_deg, st.size, st.size)
        failed = next((name for name, ok in labels if not ok(cam)), None)
        if failed is not None:  # outside the label's sector: never counted by the fast sampler either
            counts[failed] += 1
            continue
        budget += 1
        failed = next((name for name, ok in rules if not ok(cam)), None)
        if failed is None:
            observer = cam.location if task == "ego" else human.location
            return View(cam, human, angle_and_cross(observer, src.location, tgt.location)[0])
        counts[failed] += 1
    raise PlacementError("reference: no camera frames this screen point", rule="in_frame", tries=budget)


def reference_view(rng, group, task, want, st, ground, human_shape, counts, **kw):
    human = reference_human(rng, group, want, st, ground, human_shape, counts) if task == "allo" else None
    return reference_camera(rng, group, task, want, st, human, st.anchor_screen, counts, **kw)


def _draw(fn, seed, desert, st, group, task, want, n, window=DECORRELATED_WINDOW, **kw):
    """n views, each from its own screen point uniform in ``window``; (views, screens, dropped)."""
    env, _, human = desert
    rng, counts, out, dropped = np.random.default_rng(seed), Counter(), [], 0
    while len(out) < n:
        screen = tuple(float(v) for v in rng.uniform(window[0], window[1], 2))
        try:
            out.append(fn(rng, group, task, want, replace(st, anchor_screen=screen), env.ground, human, counts, **kw))
        except PlacementError:
            dropped += 1
    return out, dropped


def _marginals(views, group, task):
    rows = []
    for v in views:
        objects = [group.source, group.target] + ([v.human] if v.human is not None else [])
        ((u, w),), _ = v.camera.project(_anchor(task, objects)[None, :])
        c = v.camera
        rows.append((*c.location, c.rotation.yaw, c.rotation.pitch, u / c.width, w / c.height, v.angle_deg))
    a = np.array(rows)
    names = ("cam_x", "cam_y", "cam_z", "cam_yaw", "cam_pitch", "anchor_u", "anchor_v", "angle")
    return {k: a[:, i] for i, k in enumerate(names)}


def _pvalues(a, b):
    return {k: stats.ks_2samp(a[k], b[k]).pvalue for k in a}


@pytest.fixture(scope="module")
def ego_reference(desert):
    st, group = _scene(desert, "ego")
    views, dropped = _draw(reference_view, 12, desert, st, group, "ego", "front", N_EGO)
    return st, group, _marginals(views, group, "ego"), dropped


def test_ego_views_have_the_reference_distribution(desert, ego_reference):
    st, group, ref, ref_dropped = ego_reference
    new, dropped = _draw(sample_view, 11, desert, st, group, "ego", "front", N_EGO)
    src, tgt = group.source.location, group.target.location
    for v in new:  # the label, in both frames, on the final poses
        assert relation(v.camera.location, src, tgt, st.margin_deg) == "front"
        assert heading_relation(v.camera.rotation.yaw, src, tgt, st.margin_deg) == "front"
    got = _marginals(new, group, "ego")
    lo, hi = DECORRELATED_WINDOW
    assert got["anchor_u"].min() >= lo - 1e-6 and got["anchor_u"].max() <= hi + 1e-6  # the aim is exact
    pvals = _pvalues(got, ref)
    print({k: round(float(p), 4) for k, p in pvals.items()})  # shown with -s
    assert min(pvals.values()) > ALPHA / len(pvals), pvals
    print("dropped (fast, reference):", dropped, ref_dropped)
    assert abs(dropped - ref_dropped) < 0.1 * N_EGO, (dropped, ref_dropped)


def test_allo_views_have_the_reference_distribution(desert):
    st, group = _scene(desert, "allo")
    new, _ = _draw(sample_view, 11, desert, st, group, "allo", "back", N_ALLO)
    ref, _ = _draw(reference_view, 12, desert, st, group, "allo", "back", N_ALLO)
    pvals = _pvalues(_marginals(new, group, "allo"), _marginals(ref, group, "allo"))
    print({k: round(float(p), 4) for k, p in pvals.items()})  # shown with -s
    assert min(pvals.values()) > ALPHA / len(pvals), pvals


def test_the_check_rejects_a_reference_without_the_heading_rule(desert, ego_reference):
    st, group, ref, _ = ego_reference
    bad, _ = _draw(reference_view, 13, desert, st, group, "ego", "front", N_EGO, heading_rule=False)
    pvals = _pvalues(_marginals(bad, group, "ego"), ref)
    print({k: round(float(p), 4) for k, p in pvals.items()})  # shown with -s
    assert min(pvals.values()) < ALPHA / len(pvals), pvals


@pytest.mark.slow
def test_the_check_rejects_a_shifted_screen_window(desert, ego_reference):
    st, group, ref, _ = ego_reference
    lo, hi = DECORRELATED_WINDOW
    bad, _ = _draw(reference_view, 13, desert, st, group, "ego", "front", N_EGO, window=(lo + 0.1, hi + 0.1))
    pvals = _pvalues(_marginals(bad, group, "ego"), ref)
    print({k: round(float(p), 4) for k, p in pvals.items()})  # shown with -s
    assert min(pvals.values()) < ALPHA / len(pvals), pvals


def reference_quota_view(rng, group, task, want, st, ground, human_shape, counts):
    """With a layout quota (quotas.py): a whole reference view, figure included, kept with the
    quota's acceptance probability of its boxes' features, else drawn again (``QUOTA_TRIES``)."""
    for _ in range(scene.QUOTA_TRIES):
        view = reference_view(rng, group, task, want, st, ground, human_shape, counts)
        objects = [group.source, group.target, view.human]
        if rng.uniform() < st.quota.accept_prob(want, view_features(view.camera, objects)):
            return view
        counts["quota"] += 1
    raise PlacementError("reference: the quota kept no view", rule="quota", tries=scene.QUOTA_TRIES)


@pytest.mark.slow
def test_allo_views_with_the_layout_quota_have_the_reference_distribution(desert):
    """0.7.0's allo layout quota on top (the shipped desert rock_truck table): ~1 min under load."""
    st, group = _scene(desert, "allo")
    st = replace(st, quota=parse_config({"tasks": ["allo"]}).quota("desert", "allo", "rock_truck"))
    assert st.quota is not None
    new, _ = _draw(sample_view, 11, desert, st, group, "allo", "back", N_ALLO)
    ref, _ = _draw(reference_quota_view, 12, desert, st, group, "allo", "back", N_ALLO)
    pvals = _pvalues(_marginals(new, group, "allo"), _marginals(ref, group, "allo"))
    print({k: round(float(p), 4) for k, p in pvals.items()})  # shown with -s
    assert min(pvals.values()) > ALPHA / len(pvals), pvals
