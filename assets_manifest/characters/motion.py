"""Root motion of a character from its clip's own foot travel (issue 49 item 3).

0 A.D.'s clips walk in place: the body stays at the origin and a planted foot slides backwards
under it. Played while the body moves forward by ``stride`` per cycle, that foot stands still in
the world exactly when ``stride`` equals the ground the clip's planted feet cover per cycle.
:func:`analyse` measures it on the skinned mesh:

1. skin the body at ``SAMPLES`` phases (UE axes, cm, the species' height);
2. the feet are the bone groups that reach the lowest point of the cycle (:func:`feet`), not on
   the body's midplane (a tail or trunk the clip drags on the ground is no foot); a foot
   is in *stance* while its lowest vertex is within ``CONTACT_SHARE`` of the height of its own
   ground (the lowest it reaches), and its vertices in that band are its contact vertices;
3. the root moves forward, between consecutive samples, by minus the mean forward motion of the
   feet planted at both (their lowest vertices): the root travel within a cycle
   (``offset_cm``) follows the clip's own foot travel, not a constant speed; flight intervals
   (no foot planted) move at the cycle's mean; ``stride`` = one cycle's travel;
4. the slide of a step = the largest horizontal world drift of any contact vertex while it is in
   contact, with that root travel; reported per class as the median, 95th percentile and maximum.

A video plays the clip at ``cadence = speed / stride`` cycles per second and puts the mesh at
``root_cm(phase)`` along the heading from where the cycle started, so the body surges and slows
within a step as the feet push (the clip's track gets these few-cm offsets around its constant
speed); the residual slide is the clip's own (a foot that rolls or skates).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from sceneforge.assets_manifest.characters import formats as F

# a model.Character; not imported: model poses walk/run through ik, which builds on this module
Character = Any

SAMPLES = 96
CONTACT_SHARE = 0.008  # a foot vertex within 0.8 % of the figure's height of its foot's ground is planted
FOOT_SHARE = 0.05  # bone groups reaching within 5 % of the height of the lowest point are feet
MIDLINE_SHARE = 0.01  # a bone whose bind origin is within 1 % of the height of the midplane is no foot (a tail, a trunk)
MIN_RUN = 3  # samples


@dataclass(frozen=True)
class ClipMotion:
    """What a clip does to the ground: stride (cm per cycle), natural speed and planted slides."""

    clip: str
    stride_cm: float
    cycle_s: float  # the clip's own cycle length at its frame rate
    slides_cm: np.ndarray  # per planted step: the largest horizontal world drift of a contact vertex
    runs: int
    offset_cm: np.ndarray  # (SAMPLES+1,) root travel at phase k / SAMPLES within one cycle (0 .. stride)

    def root_cm(self, phase: np.ndarray | float) -> np.ndarray:
        """Forward root travel (cm) at clip phase ``phase`` (cycles, any: whole cycles add a stride)."""
        phase = np.asarray(phase, float)
        whole = np.floor(phase)
        grid = np.linspace(0.0, 1.0, len(self.offset_cm))
        return whole * self.stride_cm + np.interp(phase - whole, grid, self.offset_cm)

    @property
    def natural_speed_cms(self) -> float:
        return self.stride_cm / self.cycle_s if self.cycle_s > 0 else 0.0

    def summary(self) -> dict:
        s = self.slides_cm
        return {
            "clip": self.clip,
            "stride_cm": round(self.stride_cm, 2),
            "natural_speed_cms": round(self.natural_speed_cms, 1),
            "planted_runs": int(self.runs),
            "slide_p50_cm": round(float(np.median(s)), 3) if len(s) else None,
            "slide_p95_cm": round(float(np.percentile(s, 95)), 3) if len(s) else None,
            "slide_max_cm": round(float(s.max()), 3) if len(s) else None,
        }


def body_track(ch: Character, clip: str, samples: int = SAMPLES) -> np.ndarray:
    """(samples, N, 3) the body's skinned vertices (UE cm, model frame) over one cycle."""
    body = ch.parts[0].mesh
    out = np.empty((samples, len(body.positions), 3))
    for k in range(samples):
        pos, _ = F.skin(body, F.pose_at(ch.clips[clip], k / samples))
        out[k] = F.to_ue(pos, ch.scale_cm)
    return out


def _runs(flags: np.ndarray) -> list[np.ndarray]:
    """Cyclic runs of True in a 1-D bool array, as index arrays (a run may wrap past the end)."""
    n = len(flags)
    if flags.all():
        return [np.arange(n)]
    start = int(np.argmin(flags))  # a False: no run crosses this index
    order = (np.arange(n) + start) % n
    out, cur = [], []
    for i in order:
        if flags[i]:
            cur.append(i)
        elif cur:
            out.append(np.array(cur))
            cur = []
    if cur:
        out.append(np.array(cur))
    return out


def midline_bones(body: F.SkinnedMesh) -> np.ndarray:
    """Bones whose bind-pose origin lies on the body's plane of symmetry (within ``MIDLINE_SHARE``
    of the bind mesh's height of the middle of its left-right extent).

    Legs come in mirrored pairs off that plane; what hangs on it is the spine, the neck, a tail or
    an elephant's trunk. In the pack every foot bone sits 5-28 % of the height off the plane and the
    lion's tail tip and the elephant's trunk tip exactly on it (0.000), both of which the clips drag
    on the ground: a tail is not a foot."""
    pos = F.to_ue(body.positions, 1.0)
    mid = 0.5 * float(pos[:, 1].max() + pos[:, 1].min())
    height = float(np.ptp(pos[:, 2])) or 1.0
    bind = F.to_ue(body.bind_t, 1.0)
    return np.nonzero(np.abs(bind[:, 1] - mid) <= MIDLINE_SHARE * height)[0]


def feet(ch: Character, track: np.ndarray) -> list[np.ndarray]:
    """Vertex index arrays of the feet: the body's bone groups (vertices by their heaviest bone)
    that come within ``FOOT_SHARE`` of the height to the lowest point of the cycle, except those of
    a bone on the body's midplane (:func:`midline_bones`: a tail or trunk dragged on the ground)
    where the body has feet off it (a figure whose only leg is on the midplane keeps it)."""
    body = ch.parts[0].mesh
    dom = body.bones[np.arange(len(body.bones)), np.argmax(body.weights, 1)]
    z = track[..., 2]
    height = float(z.max() - z.min())

    def reaching(exclude: np.ndarray) -> list[np.ndarray]:
        keep = (dom >= 0) & ~np.isin(dom, exclude)
        if not keep.any():
            return []
        lowest = float(z[:, keep].min())  # the feet's ground, not a dragged tail's
        groups = (np.nonzero(dom == b)[0] for b in np.unique(dom[keep]))
        return [g for g in groups if z[:, g].min() <= lowest + FOOT_SHARE * height]

    return reaching(midline_bones(body)) or reaching(np.zeros(0, int))


def analyse(ch: Character, clip: str, samples: int = SAMPLES) -> ClipMotion:
    """Stride, root offsets and planted-foot slides of ``clip`` (module docstring)."""
    track = body_track(ch, clip, samples)
    z = track[..., 2]
    height = float(z.max() - z.min())
    tol = max(CONTACT_SHARE * height, 0.5)
    foots = feet(ch, track)
    stance = np.zeros((samples, len(foots)), bool)
    low_x = np.zeros((samples, len(foots)))
    grounds = []
    for j, foot in enumerate(foots):
        low = z[:, foot].min(1)
        grounds.append(low.min())
        stance[:, j] = low <= low.min() + tol
        low_x[:, j] = track[np.arange(samples), foot[np.argmin(z[:, foot], axis=1)], 0]
    # root velocity per sample interval: minus the mean forward velocity of the feet planted at
    # both ends of the interval; intervals with no planted foot (flight) get the cycle's mean
    vel = np.full(samples, np.nan)
    for k in range(samples):
        k1 = (k + 1) % samples
        both = stance[k] & stance[k1]
        if both.any():
            vel[k] = -float(np.mean(low_x[k1, both] - low_x[k, both]))
    known = ~np.isnan(vel)
    if not known.any():
        return ClipMotion(clip, 0.0, ch.clips[clip].duration_s, np.zeros(0), 0, np.zeros(samples + 1))
    mean = float(np.mean(vel[known]))
    vel[~known] = mean
    vel = np.maximum(vel, 0.0)  # the body never walks backwards within a cycle
    offset = np.concatenate([[0.0], np.cumsum(vel)])  # root x at sample k (cm), k = 0..samples
    stride = float(offset[-1])
    slides = _slides(track, foots, stance, grounds, tol, offset, stride)
    return ClipMotion(clip, stride, ch.clips[clip].duration_s, np.array(slides), len(slides), offset)


def _slides(track, foots, stance, grounds, tol, offset, stride) -> list[float]:
    """Per planted run of each foot: the largest horizontal world drift of a contact vertex while
    in contact, the root at ``offset`` (cm per sample, ``offset[-1]`` = ``stride``)."""
    samples = len(track)
    z = track[..., 2]
    slides = []
    for j, foot in enumerate(foots):
        for r in _runs(stance[:, j]):
            if not MIN_RUN <= len(r) < samples:
                continue
            root = np.array([offset[k] if k >= r[0] else offset[k] + stride for k in r])
            worst = 0.0
            for n in foot:
                c = z[r, n] <= grounds[j] + tol
                if c.sum() >= 2:
                    w = track[r[c], n, :2] + np.column_stack([root[c], np.zeros(int(c.sum()))])
                    worst = max(worst, float(np.linalg.norm(w - w[0], axis=1).max()))
            slides.append(worst)
    return slides


def slides(ch: Character, clip: str, m: ClipMotion, samples: int, bones=None, legs: dict | None = None) -> np.ndarray:
    """The slide of every planted step of ``clip`` played with ``m``'s root travel, measured as
    :func:`analyse` does at ``samples`` phases on the skinned mesh posed by ``bones(phase)``
    (default: the clip as drawn; ``ik.FootLock.bones``: with the feet locked). The feet, their
    grounds and stance come from that same track (the rule applied to what is drawn). With
    ``legs`` ({foot group's bone: leg}), a group's ground is its whole leg's lowest point, not its
    own: a shin or pastern group that dips near the ground above a hoof that touches it is in
    contact only where it comes as low as the hoof (``ik.leg_of``)."""
    body = ch.parts[0].mesh
    track = np.empty((samples, len(body.positions), 3))
    for k in range(samples):
        pose = bones(k / samples) if bones is not None else F.pose_at(ch.clips[clip], k / samples)
        track[k] = F.to_ue(F.skin(body, pose)[0], ch.scale_cm)
    z = track[..., 2]
    tol = max(CONTACT_SHARE * float(z.max() - z.min()), 0.5)
    foots = feet(ch, track)
    grounds = [float(z[:, f].min()) for f in foots]
    if legs:
        body_bones = body.bones[np.arange(len(body.bones)), np.argmax(body.weights, 1)]
        leg = [legs.get(int(body_bones[f[0]])) for f in foots]
        lowest = {j: min(g for g, k in zip(grounds, leg) if k == j) for j in set(leg) if j is not None}
        grounds = [lowest[k] if k is not None else g for g, k in zip(grounds, leg)]
    stance = (
        np.column_stack([z[:, f].min(1) <= g + tol for f, g in zip(foots, grounds)]) if foots else np.zeros((samples, 0), bool)
    )
    offset = m.root_cm(np.arange(samples + 1) / samples)
    return np.array(_slides(track, foots, stance, grounds, tol, offset, m.stride_cm))
