"""Camera paths people film with: orbit, follow (tracking shot), zoom, and handheld shake.

These extend DSI-Bench's three camera modes (static / translate / rotate, :mod:`.motion`). They
are opt-in: a pattern such as ``cam_orbit-obj_static`` is only drawn when listed in
``motion.patterns``, and shake only when ``motion.shake_cm`` / ``motion.shake_deg`` > 0, so
DSI's nine patterns give byte-identical clips with the defaults.

* **orbit**: the camera circles the subject's start point at a constant radius and height,
  always facing it (``cam_orbit_dps``, signed: + = yaw increasing = clockwise from above).
  It translates *and* turns, which DSI's camera answer space cannot name: the camera question
  (cate 2/3) is not asked. The subject stays in the same direction (cate 5 "same direction")
  at the same distance (cate 4 "same"), while the background sweeps: the conflation trap.
* **follow**: a tracking dolly. The camera keeps its heading and moves with the subject's
  velocity (subject must translate); camera answer = the subject's direction (forward / left /
  ...), distance and direction stay the same, the subject moves relative to the ground (cate 1).
* **zoom**: camera pose fixed, focal length changes geometrically by ``zoom_ratio`` (> 1 zooms
  in) over the clip. The camera does not move, and DSI has no "zooms" answer: the camera
  question is not asked. The subject's distance and direction are unaffected by a zoom (cate 4/5
  answered from geometry: a zoom-in is *not* an approach); the subject question is cate 0.
* **shake**: any camera mode plus a small smooth perturbation of position (± ``shake_cm``)
  and yaw / pitch (± ``shake_deg``): three sinusoids per axis at 0.4-1.5 Hz from the clip's own
  seed (``MotionSpec.shake_seed``). Answers are computed from the shaken poses, so the bounds
  (≤ 1.5 cm, ≤ 0.4°) keep "still" and "turns" answers clear of their thresholds.

The patterns are ``motion.EXTRA_PATTERNS`` (follow pairs only with a translating subject, orbit
with a static or turning one); the questions not asked are ``dsi.EXCLUDED_KINDS``. All functions
are pure: trajectories come from a :class:`motion.MotionSpec` alone.
"""

from __future__ import annotations

import numpy as np

SHAKE_MAX_CM, SHAKE_MAX_DEG = 1.5, 0.4
SHAKE_HZ = (0.4, 1.5)  # hand sway band; the per-frame step is at most 2*pi*1.5/fps x amplitude
_SHAKE_AXES = ("x", "y", "z", "yaw", "pitch")


def orbit_paths(
    start: np.ndarray, distance_cm: float, yaw0: float, rate_dps: float, t: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Camera XY and yaw on a circle of radius ``distance_cm`` about ``start``, facing it.

    At t=0 the camera is ``distance_cm`` behind ``start`` along heading ``yaw0``; the heading
    then turns by ``rate_dps * t`` and the camera keeps facing the centre."""
    yaw = yaw0 + rate_dps * t
    r = np.radians(yaw)  # motion.heading, inline: motion imports this module, not the reverse
    return start - distance_cm * np.stack([np.cos(r), np.sin(r)], axis=-1), yaw


def zoom_track(ratio: float, n_frames: int) -> np.ndarray:
    """(T,) focal-length factor, geometric from 1 to ``ratio`` (a constant zoom speed)."""
    return ratio ** (np.arange(n_frames, dtype=float) / max(1, n_frames - 1))


def shake_offsets(seed: int, n_frames: int, fps: float, amp_cm: float, amp_deg: float) -> dict[str, np.ndarray]:
    """Smooth handheld jitter per axis (x, y, z in cm; yaw, pitch in deg), |offset| ≤ amplitude."""
    rng = np.random.default_rng(seed)
    t = np.arange(n_frames, dtype=float) / fps
    out = {}
    for axis in _SHAKE_AXES:
        freq, phase = rng.uniform(SHAKE_HZ[0], SHAKE_HZ[1], 3), rng.uniform(0.0, 2 * np.pi, 3)
        w = rng.uniform(0.5, 1.0, 3)
        wave = (w[:, None] * np.sin(2 * np.pi * freq[:, None] * t + phase[:, None])).sum(0) / w.sum()
        out[axis] = wave * (amp_cm if axis in ("x", "y", "z") else amp_deg)
    return out
