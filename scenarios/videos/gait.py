"""Gait cycles for articulated subjects: when each foot is planted, and where.

A gait is a phase that advances at ``cadence_hz`` cycles per second; foot ``i`` is in *stance*
(planted) while ``frac(phase + offset_i) < duty`` and swings forward otherwise. Stride length
(ground covered per cycle) follows Alexander's dynamic-similarity rule
``stride = 2.3 * Froude**0.3 * leg``, ``Froude = v**2 / (g * leg)``, clipped to what the leg can
reach, and ``cadence = v / stride``, so stride x cadence = ground speed by construction.

No foot slides: a planted foot is pinned to one *world* point, the foot's neutral spot (below
its hip) at the middle of its stance, expressed in the body's frame at every instant of the
stance (``inverse(root(t)) @ W``). This holds for any root path (straight, curved, turning in
place, both), so a subject that turns in place steps round with its feet instead of spinning on
them (the *turning gait*): the feet's ground speed is the arc speed of the neutral foot points.
Swing interpolates (smoothstep) from lift-off to the next touchdown in the body frame, with a
sine lift. Everything is a pure function of the root track, the gait parameters and ``phase0``.

The phase advances with the ground the feet cover (``adaptive`` gaits, all new clips): its rate is
the ground speed of the fastest neutral foot point / stride, at least ``MIN_RATE_SHARE`` of the
nominal cadence. A constant-speed track keeps the constant cadence; a track whose speed varies (a
stop-and-go, a corner turned in place at 300 deg/s) steps faster where the feet travel faster, so
a stance never covers more than ``stride x duty`` of ground and every planted foot stays within
the leg's reach. (With a constant cadence chosen from the mean speed, a quick corner asked a
planted hoof to follow the body further than the leg reaches: the IK fell short, so the foot slid
up to 27 cm and rose up to 22 cm while "planted": issue 49 item 5.) Records without the flag
(older clips) keep the constant cadence.

Units: cm, s, degrees, UE axes (X forward, Y right, Z up; yaw + turns clockwise from above).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np

G_CMS2 = 981.0
# duty factor (share of the cycle a foot is planted) and foot phase offsets, per gait
GAITS = {
    "stand": (1.0, None),
    "walk2": (0.62, (0.0, 0.5)),  # biped walk: double support
    "run2": (0.38, (0.0, 0.5)),  # biped run: flight phase
    "walk4": (0.65, (0.25, 0.75, 0.0, 0.5)),  # lateral-sequence walk (feet LF, RF, LH, RH)
    "trot4": (0.45, (0.0, 0.5, 0.5, 0.0)),  # diagonal pairs LF+RH, RF+LH
}
# Froude number above which a biped runs / a quadruped trots (Alexander 1989: ~0.5 for both)
FROUDE_SWITCH = {2: 0.5, 4: 0.4}
MIN_SPEED_CMS = 2.0  # below this the subject stands
MAX_DUTY_REACH = 0.9  # a stance may use at most this share of the leg's horizontal reach
MIN_RATE_SHARE = 0.5  # an adaptive phase never slows below this share of the nominal cadence
PHASE_SUBSTEPS = 16  # integration samples of an adaptive phase per frame interval


@dataclass(frozen=True)
class Gait:
    """Parameters of one clip's gait (recorded with the clip)."""

    name: str
    duty: float
    offsets: tuple[float, ...]
    stride_cm: float  # ground covered by the feet per cycle (at the effective speed)
    cadence_hz: float  # cycles per second (0 when standing)
    phase0: float  # phase at t = 0
    lift_cm: float  # swing height
    adaptive: bool = False  # the phase follows the feet's ground travel (module docstring)

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> "Gait":
        return cls(
            d["name"],
            float(d["duty"]),
            tuple(float(v) for v in d["offsets"]),
            float(d["stride_cm"]),
            float(d["cadence_hz"]),
            float(d["phase0"]),
            float(d["lift_cm"]),
            bool(d.get("adaptive", False)),
        )

    def phase(self, t: np.ndarray | float) -> np.ndarray:
        """The constant-cadence phase (a non-adaptive gait's; see :class:`PhaseMap` otherwise)."""
        return self.phase0 + self.cadence_hz * np.asarray(t, float)


def choose_gait(n_legs: int, speed_cms: float, leg_cm: float, reach_cm: float, phase0: float) -> Gait:
    """Walk or run/trot by Froude number; stride by Alexander's rule, clipped to the reach."""
    offsets = tuple(0.0 for _ in range(n_legs))
    if speed_cms < MIN_SPEED_CMS:
        return Gait("stand", 1.0, offsets, 0.0, 0.0, float(phase0), 0.0)
    froude = speed_cms**2 / (G_CMS2 * leg_cm)
    fast = froude > FROUDE_SWITCH[n_legs]
    name = ("run2" if fast else "walk2") if n_legs == 2 else ("trot4" if fast else "walk4")
    duty, offsets = GAITS[name]
    stride = 2.3 * froude**0.3 * leg_cm
    stride = min(stride, 2.0 * MAX_DUTY_REACH * reach_cm / duty)  # a planted foot stays within reach
    stride = max(stride, 0.15 * leg_cm)  # tiny steps: at most ~ speed / 0.15 leg
    lift = (0.12 if fast else 0.08) * leg_cm
    return Gait(name, duty, offsets, float(stride), float(speed_cms / stride), float(phase0), float(lift), True)


@dataclass(frozen=True, eq=False)
class RootPath:
    """A body's pose between and beyond its frames: XY, Z and yaw linearly interpolated in time
    (the clips' motions are constant-velocity, so linear extrapolation past the ends is exact)."""

    times: np.ndarray  # (T,) s
    xyz: np.ndarray  # (T,3) cm
    yaw: np.ndarray  # (T,) deg, unwrapped

    @classmethod
    def from_track(cls, location: np.ndarray, yaw: np.ndarray, fps: float) -> "RootPath":
        n = len(yaw)
        return cls(np.arange(n, dtype=float) / fps, np.asarray(location, float), np.asarray(yaw, float))

    def at(self, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(N,3) location and (N,) yaw at times ``t`` (any, s)."""
        t = np.atleast_1d(np.asarray(t, float))
        T = self.times
        if len(T) == 1:
            return np.repeat(self.xyz[:1], len(t), 0), np.repeat(self.yaw[:1], len(t))
        i = np.clip(np.searchsorted(T, t, side="right") - 1, 0, len(T) - 2)
        w = (t - T[i]) / (T[i + 1] - T[i])
        xyz = self.xyz[i] + w[:, None] * (self.xyz[i + 1] - self.xyz[i])
        yaw = self.yaw[i] + w * (self.yaw[i + 1] - self.yaw[i])
        return xyz, yaw


def to_world(xyz: np.ndarray, yaw: np.ndarray, local: np.ndarray) -> np.ndarray:
    """Body-frame points (N,3) at root poses (N,3)/(N,) to world (yaw only: bodies stay level)."""
    c, s = np.cos(np.radians(yaw)), np.sin(np.radians(yaw))
    x, y = local[:, 0], local[:, 1]
    return np.column_stack([xyz[:, 0] + c * x - s * y, xyz[:, 1] + s * x + c * y, xyz[:, 2] + local[:, 2]])


def to_local(xyz: np.ndarray, yaw: np.ndarray, world: np.ndarray) -> np.ndarray:
    c, s = np.cos(np.radians(yaw)), np.sin(np.radians(yaw))
    d = world - xyz
    return np.column_stack([c * d[:, 0] + s * d[:, 1], -s * d[:, 0] + c * d[:, 1], d[:, 2]])


def effective_speed(path: RootPath, neutral: np.ndarray) -> float:
    """Mean ground speed of the fastest neutral foot point (cm/s): translation and turning."""
    if len(path.times) < 2:
        return 0.0
    best = 0.0
    for p in neutral:
        w = to_world(path.xyz, path.yaw, np.repeat(p[None], len(path.times), 0))
        v = np.linalg.norm(np.diff(w[:, :2], axis=0), axis=1) / np.diff(path.times)
        best = max(best, float(v.mean()))
    return best


class PhaseMap:
    """Gait phase as a function of time along one root path, and its inverse.

    Non-adaptive (or standing) gaits: ``phase0 + cadence x t``. Adaptive: the integral of
    ``max(v(t) / stride, MIN_RATE_SHARE x cadence)``, ``v`` the ground speed of the fastest neutral
    foot point, sampled ``PHASE_SUBSTEPS`` times per frame interval; before the first and after the
    last sample the rate of the end interval continues (the path extrapolates linearly too). The
    rate is > 0, so the map is strictly increasing and :meth:`time_of` inverts it."""

    def __init__(self, path: RootPath, gait: Gait, neutral: np.ndarray):
        self.gait = gait
        self.t = self.p = None
        if not gait.adaptive or gait.cadence_hz <= 0.0 or len(path.times) < 2:
            return
        T = path.times
        sub = np.linspace(0.0, 1.0, PHASE_SUBSTEPS + 1)[:-1]
        tt = np.append((T[:-1, None] + sub[None, :] * np.diff(T)[:, None]).ravel(), T[-1])
        xyz, yaw = path.at(tt)
        v = np.zeros(len(tt) - 1)
        for p in np.asarray(neutral, float):
            w = to_world(xyz, yaw, np.repeat(p[None], len(tt), 0))
            v = np.maximum(v, np.linalg.norm(np.diff(w[:, :2], axis=0), axis=1) / np.diff(tt))
        rate = np.maximum(v / gait.stride_cm, MIN_RATE_SHARE * gait.cadence_hz)
        self.t, self.rate = tt, rate
        self.p = gait.phase0 + np.concatenate([[0.0], np.cumsum(rate * np.diff(tt))])

    def phase(self, t: np.ndarray | float) -> np.ndarray:
        """Phase (cycles) at times ``t`` (s)."""
        t = np.asarray(t, float)
        if self.t is None:
            return self.gait.phase(t)
        out = np.interp(t, self.t, self.p)
        out = np.where(t < self.t[0], self.p[0] + (t - self.t[0]) * self.rate[0], out)
        return np.where(t > self.t[-1], self.p[-1] + (t - self.t[-1]) * self.rate[-1], out)

    def time_of(self, phase: np.ndarray | float) -> np.ndarray:
        """Time (s) at which the phase is ``phase`` (the inverse of :meth:`phase`)."""
        phase = np.asarray(phase, float)
        if self.t is None:
            return (phase - self.gait.phase0) / self.gait.cadence_hz
        out = np.interp(phase, self.p, self.t)
        out = np.where(phase < self.p[0], self.t[0] + (phase - self.p[0]) / self.rate[0], out)
        return np.where(phase > self.p[-1], self.t[-1] + (phase - self.p[-1]) / self.rate[-1], out)


def foot_targets(
    path: RootPath, gait: Gait, neutral: np.ndarray, times: np.ndarray, ground, phases: PhaseMap | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Body-frame foot targets (T,F,3), stance flags (T,F) and stance ids (T,F) (the cycle a
    planted foot belongs to; -1 in swing). ``neutral`` (F,3) are the feet's rest points (z = the
    foot point's height above the ground); ``phases`` the gait's :class:`PhaseMap` on ``path``."""
    T, F = len(times), len(neutral)
    out, stance, ids = np.zeros((T, F, 3)), np.zeros((T, F), bool), np.full((T, F), -1, np.int64)
    xyz, yaw = path.at(times)
    if gait.cadence_hz <= 0.0:
        for f, p in enumerate(neutral):
            w = to_world(xyz, yaw, np.repeat(p[None], T, 0))
            w[:, 2] = ground(w[:, 0], w[:, 1]) + p[2]
            out[:, f] = to_local(xyz, yaw, w)
        return out, np.ones((T, F), bool), np.zeros((T, F), np.int64)
    pm = phases if phases is not None else PhaseMap(path, gait, neutral)

    def planted(f: int, k: np.ndarray) -> np.ndarray:
        """World point of foot f in stance cycle k (neutral point at mid-stance, on the ground)."""
        t_mid = pm.time_of(k + gait.duty / 2.0 - gait.offsets[f])
        r_xyz, r_yaw = path.at(t_mid)
        w = to_world(r_xyz, r_yaw, np.repeat(neutral[f][None], len(k), 0))
        w[:, 2] = ground(w[:, 0], w[:, 1]) + neutral[f][2]  # the foot point's height above its ground
        return w

    for f in range(F):
        ph = pm.phase(times) + gait.offsets[f]
        k = np.floor(ph).astype(np.int64)
        frac = ph - k
        st = frac < gait.duty
        stance[:, f], ids[:, f] = st, np.where(st, k, -1)
        local_st = to_local(xyz, yaw, planted(f, k))
        # swing: from lift-off of cycle k (in the body frame then) to touchdown of cycle k+1
        t_off = pm.time_of(k + gait.duty - gait.offsets[f])
        t_on = pm.time_of(k + 1 - gait.offsets[f])
        a = to_local(*path.at(t_off), planted(f, k))
        b = to_local(*path.at(t_on), planted(f, k + 1))
        s = np.clip((frac - gait.duty) / max(1.0 - gait.duty, 1e-9), 0.0, 1.0)
        e = s * s * (3.0 - 2.0 * s)
        sw = a + e[:, None] * (b - a)
        sw[:, 2] += gait.lift_cm * np.sin(math.pi * s)
        out[:, f] = np.where(st[:, None], local_st, sw)
    return out, stance, ids
