"""Camera policies of the SpaRRTa scenario: where the camera aims (config field ``camera_policy``).

``decorrelated`` (default since 0.6.0)
    No single labelled object's image box says the label (issue 46). The label is fixed first
    (the sample's place in its label rotation); then a screen point is drawn uniformly in
    ``DECORRELATED_WINDOW`` from the sample's own seed stream (``BALANCE_STREAM``), *independently
    of the label*, and the camera (drawn as every policy draws it: ego inside the label's sector)
    is aimed so that an *anchor* lands on it: on **ego** the midpoint of the source's and the
    target's centres, so each box sits half the pair's image offset away from a label-independent
    point (under ``balanced`` the target carried the whole offset, and with it the label); on
    **allo** the centroid of source, target and figure (``ANCHORS``): the camera does not depend
    on the label there, so the boxes' offsets from it point in directions the label does not fix.
    Checked against a plain rejection reference (tests/scenarios/test_decorrelated_reference.py). Exact
    independence is impossible on a bounded image (a "right" pair has the target right of the
    source, so under a shared marginal both cannot stay inside the frame); what is left is the
    frame's edge, measured per dataset by the card's layout baselines (docs/validation.md). Ego
    samples must also clear the margin around the camera's *heading* (:func:`relations.heading_relation`),
    not only around the camera→source line, and the perceptual veto reads the image-space bearing
    (:func:`consistency.ego_bearing_disagrees`). Allo: every labelled object, the figure included,
    at least ``ALLO_MIN_BOX_PX`` (16 px at 224², one ViT patch) on its longest box side.
    **Layout quotas** (allo, since 0.7.0; ``quotas.py``): a view that passed every rule is kept
    with a probability fitted by raking on a render-free pilot so that each box's image cell
    (centre x × y, centre y × log area) has the same distribution under every label; city's
    figure box alone fell from 0.47 to 0.35 (1,000 rendered, CV). Not on ego: there the image offset of the pair *is*
    the label, and the sum of the two boxes' label-dependent mean shifts equals the pair's mean
    offset, so equal cells only push the shift inside the cells (measured: source/target 0.48/0.49
    before, 0.47/0.49 after at 18 % acceptance; docs/validation.md).
``jitter`` (the default before 0.6.0)
    Aim at the labelled objects' centroid turned by a uniform yaw and pitch offset in
    ``±aim_jitter_deg`` (15°). Breaks most of the "one object's position gives the label away"
    shortcut; a source-box-only MLP still reaches ~0.59 on desert ego (chance 0.25, issue 34).
``sparrta``
    Aimed exactly at the centroid, no jitter: the framing SpaRRTa's paper describes (the camera
    looks at the placed objects). The source box alone predicts the ego label at ~0.95.
``balanced``
    Layout-controlled: the camera is aimed so the source's centre lands on an image position
    drawn *independently of the label*. Each sample gets a cell of a ``CELLS × CELLS`` grid over
    the central window ``WINDOW`` of the image by a quota: along every (env, task) label rotation
    (labels cycle with period 4), cell ``k`` takes the samples ``4k .. 4k+3``, so every (cell,
    label) pair is equally frequent (±1), and the position inside the cell is uniform from the
    sample's own seed stream (``BALANCE_STREAM``). The label is then independent of where the
    source box sits, and a source-box-only baseline falls towards chance; the target box, which
    must sit on the label's side of the source, still carries the label (as it must: that is the
    relation).

Every policy keeps the label rules, the in-frame, size and visibility checks: labels stay exact.
"""

from __future__ import annotations

import math

import numpy as np

CAMERA_POLICIES = ("decorrelated", "jitter", "sparrta", "balanced")
DEFAULT_POLICY = "decorrelated"
# decorrelated: the anchor's screen point, uniform in this window (fractions of the image, both
# axes); the in-frame rule then keeps the views whose boxes fit
DECORRELATED_WINDOW = (0.15, 0.85)
ALLO_MIN_BOX_PX = 16.0  # decorrelated allo: min longest box side at 224² (scaled with the image size)
ANCHORS = {"ego": "pair", "allo": "all"}  # decorrelated: what lands on the drawn screen point
CELLS = 3  # balanced: a CELLS x CELLS grid of source-position cells ...
WINDOW = (0.3, 0.7)  # ... over this central window of the image (fractions of its size)
BALANCE_STREAM = 7927  # seed stream of a sample's source position (LOOK_STREAM is 7919)
LABEL_PERIOD = 4  # labels rotate through relations.LABELS along each (env, task) group
# balanced: a sample still without a view after this many placements (of scene_budget's 24) puts its
# source at the image centre instead (a (cell, label) pair that a scene's geometry cannot frame:
# 1 of 2,500 desert ego samples; without it the job could never finish)
RELAX_AFTER = 12


def anchor_screen(rng: np.random.Generator) -> tuple[float, float]:
    """Decorrelated policy: the anchor's screen point, (x, y) fractions (x right, y down),
    uniform in ``DECORRELATED_WINDOW`` from the sample's own stream: a function of its seed and
    index only, never of its label."""
    lo, hi = DECORRELATED_WINDOW
    u, v = rng.uniform(lo, hi, 2)
    return float(u), float(v)


def effective_jitter(policy: str, aim_jitter_deg: float) -> float:
    """The aim jitter a policy uses: ``jitter`` the configured one, the others none."""
    return float(aim_jitter_deg) if policy == "jitter" else 0.0


def source_cell(position: int) -> int:
    """Balanced policy: the cell of the sample at ``position`` in its (env, task) label rotation
    (``Unit.label_offset + i``). Four consecutive positions (one of each label) share a cell."""
    return (int(position) // LABEL_PERIOD) % (CELLS * CELLS)


def source_screen(position: int, rng: np.random.Generator) -> tuple[float, float]:
    """Balanced policy: where the source's centre should appear, as (x, y) fractions of the image
    (x right, y down): uniform in the sample's cell (:func:`source_cell`)."""
    cell = source_cell(position)
    lo, hi = WINDOW
    step = (hi - lo) / CELLS
    cx, cy = cell % CELLS, cell // CELLS
    u, v = rng.uniform(0.0, 1.0, 2)
    return lo + (cx + float(u)) * step, lo + (cy + float(v)) * step


def aims_at_screen(eyes: np.ndarray, point, screen: tuple[float, float], fov_deg: float) -> np.ndarray:
    """Aim points (n, 3) of roll-0 cameras at ``eyes`` (n, 3) that put ``point`` at image position
    ``screen`` ((x, y) fractions, x right, y down) of a square image with horizontal ``fov_deg``.

    Exact for the pinhole model of ``engine.world.Camera.project``: the camera-frame direction of
    the pixel, (1, a, b) with a = right/forward and b = up/forward, is turned by pitch φ and yaw ψ
    onto the direction from the eye to ``point``; with roll 0 its elevation fixes φ and then its
    bearing fixes ψ. Where the point is too steep for the requested offset (|elevation| near 90°)
    the pitch is clipped (the in-frame rule then decides)."""
    eyes = np.asarray(eyes, float).reshape(-1, 3)
    t = math.tan(math.radians(fov_deg) / 2.0)
    a = (2.0 * screen[0] - 1.0) * t  # right / forward
    b = (1.0 - 2.0 * screen[1]) * t  # up / forward (image y runs down)
    d = np.asarray(point, float)[None, :] - eyes
    dist = np.linalg.norm(d, axis=1)
    el = np.arctan2(d[:, 2], np.hypot(d[:, 0], d[:, 1]))
    s = np.clip(np.sin(el) * math.sqrt(1.0 + a * a + b * b), -math.sqrt(1.0 + b * b), math.sqrt(1.0 + b * b))
    h = np.sqrt(np.maximum(1.0 + b * b - s * s, 0.0))
    pitch = np.clip(np.arctan2(s, h) - math.atan(b), -math.radians(89.0), math.radians(89.0))
    yaw = np.arctan2(d[:, 1], d[:, 0]) - np.arctan2(a, np.cos(pitch) - b * np.sin(pitch))
    fwd = np.stack([np.cos(pitch) * np.cos(yaw), np.cos(pitch) * np.sin(yaw), np.sin(pitch)], axis=1)
    return eyes + dist[:, None] * fwd
