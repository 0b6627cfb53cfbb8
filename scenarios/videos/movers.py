"""Distractor movers: other people, animals and vehicles with their own motions in a clip.

DSI-Bench's point is that models confuse *who* moved; a clip whose only moving thing is the
subject can be passed by tracking one blob. With ``distractors: N`` (opt-in, default 0) each clip
gets up to N movers that walk or drive at their own speed, facing their heading, on the terrain.
How they move is one of :data:`MOVER_MOTIONS`, drawn per mover from ``distractor_motions``
(default ``straight`` only, the motion of the first release, so such jobs keep their bytes):

* ``straight``: constant speed along a fixed heading;
* ``curve``: a circular arc (``CURVE_DPS``, either sense), facing along it, like a car steering;
* ``stop_and_go``: straight, but it eases to a standstill, waits and eases off again (the speed
  is ``v * g(t)`` with a smoothstep ``g``, 0 for the wait);
* ``turn``: a stop-and-go whose wait is spent turning in place by ``TURN_DEG`` (a corner).

The questions stay about the named subject, so:

* a distractor never has the subject's class (``the taxi`` must name one thing);
* its swept footprint keeps ``pad_cm`` clear of the subject's swept footprint, of the camera
  path and of the other distractors (no collisions, never "in the subject's path");
* it never enters the camera→subject sight corridor in any frame (a geometric pre-check; the
  rendered per-frame visibility rule, which counts occlusion by every actor, is the final word).

Starts are drawn inside the camera's initial view (bearing within 80 % of the half FOV, range
0.5-2x the subject distance) so distractors are on screen. Draws come from the clip's own
``DISTRACTOR_STREAM`` so the subject's motion and everything DSI asks are unchanged by them.
Units: cm, degrees, UE axes (scenarios/videos/motion.py).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from sceneforge.engine.world import Transform
from sceneforge.scenarios.videos import motion as mo

DISTRACTOR_STREAM = 3  # the clip's seed stream for distractors (0 motion, 1 questions)
MAX_DISTRACTORS = 6
TRIES_PER_MOVER = 60
MOVER_MOTIONS = ("straight", "curve", "stop_and_go", "turn")
CURVE_DPS = (15.0, 45.0)  # |turn rate| of a curving mover, deg/s
TURN_DEG = (45.0, 120.0)  # |heading change| of a turning mover's corner, deg


@dataclass(frozen=True, eq=False)
class Mover:
    """A moving actor besides the subject: its name, asset, class, size and per-frame track."""

    name: str
    asset_id: str
    cls: str
    size: tuple[float, float, float]
    track: mo.Track
    motion: str = "straight"

    def transform(self, t: int) -> Transform:
        return Transform(tuple(float(v) for v in self.track.location[t]), self.track.rotator(t))

    def radius(self) -> float:
        return math.hypot(self.size[0], self.size[1]) / 2.0

    def to_record(self) -> dict:
        """The record entry (``motion`` only when not straight: older records keep their bytes)."""
        d = {
            "name": self.name,
            "asset": self.asset_id,
            "class": self.cls,
            "size_cm": list(self.size),
            "location": self.track.location.tolist(),
            "yaw": self.track.yaw.tolist(),
        }
        return d if self.motion == "straight" else {**d, "motion": self.motion}

    @classmethod
    def from_record(cls, d: dict) -> "Mover":
        loc, yaw = np.asarray(d["location"], float), np.asarray(d["yaw"], float)
        return cls(
            d["name"],
            d["asset"],
            d["class"],
            tuple(d["size_cm"]),
            mo.Track(loc, yaw, np.zeros_like(yaw)),
            d.get("motion", "straight"),
        )


def _min_gap(a: np.ndarray, b: np.ndarray) -> float:
    """Smallest XY distance between any point of polyline samples ``a`` (N,2+) and ``b`` (M,2+)."""
    return float(np.linalg.norm(a[:, None, :2] - b[None, :, :2], axis=-1).min())


def _in_corridor(clip: mo.ClipMotion, loc: np.ndarray, r: float) -> bool:
    """True when ``loc`` (T,3) comes within ``r`` + the subject's radius of the sight segment
    camera→subject in some frame (it could occlude the subject)."""
    r_s = math.hypot(*clip.subject_size[:2]) / 2.0
    cam, sub = clip.camera.location[:, :2], clip.subject.location[:, :2]
    d = sub - cam
    s = np.clip(((loc[:, :2] - cam) * d).sum(-1) / np.maximum((d * d).sum(-1), 1e-9), 0.0, 1.0)
    gap = np.linalg.norm(loc[:, :2] - (cam + s[:, None] * d), axis=-1)
    return bool((gap < r + r_s).any())


def _draw_track(
    rng: np.random.Generator, clip: mo.ClipMotion, speed_cms: float, height_fn, hfov: float, motion: str = "straight"
) -> mo.Track:
    """A walk/drive of kind ``motion`` starting inside the camera's initial view."""
    cam0, yaw0 = clip.camera.location[0], float(clip.camera.yaw[0])
    dist0 = float(np.linalg.norm(clip.subject.location[0, :2] - cam0[:2]))
    bearing = yaw0 + float(rng.uniform(-0.8, 0.8)) * hfov / 2.0
    start = cam0[:2] + float(rng.uniform(0.5, 2.0)) * dist0 * mo.heading(bearing)
    head = float(rng.uniform(-180.0, 180.0))
    t = np.arange(clip.n_frames, dtype=float) / clip.fps
    if motion == "straight":
        xy, yaw = start + speed_cms * t[:, None] * mo.heading(head), np.full(clip.n_frames, head)
    else:
        xy, yaw = _shaped_path(rng, motion, start, head, speed_cms, t)
    loc = np.column_stack([xy, height_fn(xy[:, 0], xy[:, 1])])
    return mo.Track(loc, yaw, np.zeros(clip.n_frames))


def smoothstep(x: np.ndarray) -> np.ndarray:
    x = np.clip(x, 0.0, 1.0)
    return x * x * (3.0 - 2.0 * x)


def _shaped_path(
    rng: np.random.Generator, motion: str, start: np.ndarray, head: float, speed_cms: float, t: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """XY and yaw of a curving, stop-and-go or turning mover (faces its heading throughout)."""
    if motion == "curve":
        rate = float(rng.choice([-1.0, 1.0])) * float(rng.uniform(*CURVE_DPS))
        return mo.arc_path(start, head, speed_cms, rate, t), head + rate * t
    dur = max(float(t[-1]), 1e-9)
    hold = dur * float(rng.uniform(*((0.3, 0.45) if motion == "turn" else (0.15, 0.3))))  # the wait
    ramp = 0.15 * dur  # each ease
    margin = hold / 2.0 + ramp + 0.1 * dur  # at full speed before and after
    centre = float(rng.uniform(margin, dur - margin))
    gait = smoothstep((np.abs(t - centre) - hold / 2.0) / ramp)  # 1 walking, 0 standing
    yaw = np.full_like(t, head)
    if motion == "turn":  # the corner is turned between standing frames only (no step is taken)
        turn = float(rng.choice([-1.0, 1.0])) * float(rng.uniform(*TURN_DEG))
        if not (gait == 0.0).any():
            gait[int(np.argmin(gait))] = 0.0
        standing = np.cumsum(gait == 0.0)
        yaw = head + turn * smoothstep(standing / standing[-1])
    dt = np.diff(t, prepend=t[0])
    step = (speed_cms * gait * dt)[:, None] * mo.heading(yaw)  # frame k-1 -> k, at frame k's pose
    return np.asarray(start, float) + np.cumsum(step, axis=0), yaw


def sample_movers(
    rng: np.random.Generator,
    clip: mo.ClipMotion,
    n: int,
    candidates: list[tuple[str, str, tuple]],
    speed_cms: tuple[float, float],
    height_fn,
    hfov: float,
    pad_cm: float = 100.0,
    cam_clear_cm: float = 150.0,
    motions: tuple[str, ...] = ("straight",),
) -> list[Mover]:
    """Up to ``n`` distractors; ``candidates`` are ``(asset_id, class, size_cm)`` not of the
    subject's class, each moving one of ``motions`` (drawn per mover; no draw when there is one).
    A distractor that finds no valid track in ``TRIES_PER_MOVER`` is dropped."""
    if not candidates:
        return []
    out: list[Mover] = []
    r_subject = math.hypot(*clip.subject_size[:2]) / 2.0
    for k in range(n):
        asset_id, cls, size = candidates[int(rng.integers(len(candidates)))]
        motion = motions[int(rng.integers(len(motions)))] if len(motions) > 1 else motions[0]
        r = math.hypot(size[0], size[1]) / 2.0
        scale = float(np.clip(max(size[0], size[1]) / 450.0, 0.25, 1.5))
        for _ in range(TRIES_PER_MOVER):
            track = _draw_track(rng, clip, scale * float(rng.uniform(*speed_cms)), height_fn, hfov, motion)
            if (
                _min_gap(track.location, clip.subject.location) >= r + r_subject + pad_cm
                and _min_gap(track.location, clip.camera.location) >= r + cam_clear_cm
                and all(_min_gap(track.location, m.track.location) >= r + m.radius() + pad_cm for m in out)
                and not _in_corridor(clip, track.location, r)
            ):
                out.append(Mover(f"mover{k}", asset_id, cls, tuple(float(s) for s in size), track, motion))
                break
    return out


def keep_out(movers: list[Mover], pad_cm: float = 100.0) -> list[tuple[float, float, float]]:
    """Keep-out circles along every distractor's path (clutter must not touch them)."""
    return [c for m in movers for c in mo.swept_circles(m.track.location, m.radius() + pad_cm)]
