"""The plain rejection sampler of SpaRRTa views and target placements, as it was before the
label-conditioned proposals (issue 19), kept verbatim as the reference distribution.

``tests/scenarios/test_conditioned.py`` draws many samples from this and from
``scenarios.sparrta.scene`` on the same scene and checks, marginal by marginal, that they have
the same distribution. Only the draws differ; the rules are the production ones (the
silhouette bound of ``scenarios.sampling.silhouette`` included, added with it on 2026-11-25).
"""

from __future__ import annotations

import math
from collections import Counter

import numpy as np

from sceneforge.scenarios.sampling.relations import angle_and_cross
from sceneforge.scenarios.sampling.silhouette import big_enough_silhouettes
from sceneforge.scenarios.sampling.rejection import (
    Placed,
    big_enough,
    camera_clear,
    in_frame,
    label_rules,
    no_overlap,
    resample_while,
    standing,
    sample_camera,
    sample_object,
    within_distance,
)
from sceneforge.scenarios.sparrta.scene import CAMERA_CLEARANCE_CM, IN_FRAME_MARGIN, OBJECT_GAP_CM, View


def reference_target(rng, source: Placed, tgt_shape, st, ground, counts: Counter) -> Placed:
    """Target: Gaussian around the centre until no overlap with the source and within distance."""
    return resample_while(
        lambda r: sample_object(r, "target", tgt_shape, st.centre, st.sigma_cm, ground),
        [("overlap", no_overlap([source], OBJECT_GAP_CM)), ("distance", within_distance([source], st.max_pair_dist_cm))],
        rng,
        st.max_tries,
        counts,
        what="reference target",
    )


def reference_view(rng, group, task: str, want: str, st, ground, human_shape, counts: Counter) -> View:
    """Camera (ego: with the label rules) and, for allo, the human figure placed for the label."""
    src, tgt = group.source, group.target
    human = None
    if task == "allo":
        human = reference_human(rng, group, want, st, ground, human_shape, counts)
    objects = [src, tgt] + ([human] if human else [])
    rules = []
    if task == "ego":
        rules += label_rules(lambda c: c.location, src.location, tgt.location, st.margin_deg, want)
    rules += [
        ("camera_clear", camera_clear(objects + group.clutter, CAMERA_CLEARANCE_CM)),
        ("in_frame", in_frame(objects, IN_FRAME_MARGIN * st.size)),
        ("small_projection", big_enough(objects, st.min_bbox_px)),
        ("small_projection", big_enough_silhouettes([o.drawable_world() for o in objects], st.min_bbox_px)),
    ]
    centroid = np.mean([o.centre() for o in objects], axis=0)
    base_z = float(np.mean([o.z for o in objects]))
    cam = resample_while(
        lambda r: sample_camera(
            r,
            st.centre,
            st.cam_xy_range_cm,
            st.cam_height_range_cm,
            base_z,
            tuple(centroid),
            st.fov_deg,
            st.size,
            st.aim_jitter_deg,
        ),
        rules,
        rng,
        st.max_tries,
        counts,
        what=f"{task} camera for label {want!r}",
    )
    observer = cam.location if task == "ego" else human.location
    return View(cam, human, angle_and_cross(observer, src.location, tgt.location)[0])


def reference_human(rng, group, want: str, st, ground, shape, counts: Counter) -> Placed:
    """The viewpoint figure: Gaussian around the centre; uniform yaw, or facing the source
    (``st.figure_yaw``)."""
    src, tgt = group.source, group.target

    def draw(r: np.random.Generator) -> Placed:
        if st.figure_yaw == "random":
            return sample_object(r, "human", shape, st.centre, st.sigma_cm, ground)
        p = sample_object(r, "human", shape, st.centre, st.sigma_cm, ground, yaw=0.0)
        yaw = math.degrees(math.atan2(src.y - p.y, src.x - p.x))
        return standing("human", shape, p.x, p.y, yaw, ground)

    rules = label_rules(lambda h: h.location, src.location, tgt.location, st.margin_deg, want)
    rules += [
        ("overlap", no_overlap([src, tgt] + group.clutter, OBJECT_GAP_CM)),
        ("distance", within_distance([src, tgt], st.max_pair_dist_cm)),
    ]
    return resample_while(draw, rules, rng, st.max_tries, counts, what=f"allo viewpoint for label {want!r}")
