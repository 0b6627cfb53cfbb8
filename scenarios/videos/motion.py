"""Trajectories for dynamic clips: the 9 decoupled observer/object motion patterns.

A clip has one *camera* and one *subject* (the object the questions are about). Each moves in
one of three ways, giving DSI-Bench's 3 x 3 decoupled patterns::

    camera  in {static, translate (dolly/truck, no rotation), rotate (pan in place)}
    subject in {static, translate (drives in a straight line, facing its heading),
                rotate (turns in place about its vertical axis)}

Why this set: translation and rotation are the two independent rigid-motion components, and
"static" is the control that exposes conflation (a model that sees pixels move must decide *who*
moved). Keeping each actor to one component keeps every answer well defined, and every answer
has a clean mirror / time-reversal image (see :func:`hflip_motion`, :func:`reverse_motion`).

Opt-in *mixed* patterns (``MIXED_PATTERNS``; their answer rules are in dsi.py): a
``mixed`` subject translates *and* turns (drives or walks along a circular arc, facing its path),
a ``mixed`` camera translates *and* pans (dollies or trucks along a straight line while its yaw
turns at a constant rate). They are drawn only when listed in ``motion.patterns``.

Units are UnrealCV's: cm, left-handed X forward / Y right / Z up, yaw in degrees with positive
yaw turning clockwise seen from above. Times are ``frame / fps`` seconds. Everything is a pure
function of a :class:`MotionSpec` (sampled scalars) so a clip is reproducible from its record.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, replace
from typing import Callable

import numpy as np

from sceneforge.core.errors import ConfigError
from sceneforge.scenarios.config import option
from sceneforge.engine.world import Camera, Rotator, Transform
from sceneforge.scenarios.videos.camera_paths import SHAKE_MAX_CM, SHAKE_MAX_DEG, orbit_paths, shake_offsets, zoom_track

CAM_MODES = ("static", "translate", "rotate")
OBJ_MODES = ("static", "translate", "rotate")
PATTERNS = tuple(f"cam_{c}-obj_{o}" for c in CAM_MODES for o in OBJ_MODES)
# Opt-in camera paths people film with (orbit, follow, zoom): scenarios/videos/camera_paths.py
EXTRA_PATTERNS = (
    "cam_orbit-obj_static",
    "cam_orbit-obj_rotate",
    "cam_follow-obj_translate",
    "cam_zoom-obj_static",
    "cam_zoom-obj_translate",
    "cam_zoom-obj_rotate",
)
# Opt-in mixed patterns: the subject translates *and* turns (an arc), the camera translates *and*
# pans, and the combinations with the other modes that DSI defines none for (answer rules: dsi.py)
MIXED_PATTERNS = (
    "cam_static-obj_mixed",
    "cam_translate-obj_mixed",
    "cam_rotate-obj_mixed",
    "cam_zoom-obj_mixed",
    "cam_mixed-obj_static",
    "cam_mixed-obj_translate",
    "cam_mixed-obj_rotate",
    "cam_mixed-obj_mixed",
)
ALL_PATTERNS = PATTERNS + EXTRA_PATTERNS + MIXED_PATTERNS
# Base direction angles (deg) relative to the camera's initial heading.
CAM_DIRS = {"forward": 0.0, "right": 90.0, "backward": 180.0, "left": -90.0}
OBJ_DIRS = {"away": 0.0, "right": 90.0, "toward": 180.0, "left": -90.0}

HeightFn = Callable[[np.ndarray, np.ndarray], np.ndarray]


def parse_pattern(name: str) -> tuple[str, str]:
    """``"cam_rotate-obj_static"`` -> ``("rotate", "static")``; ConfigError on anything else."""
    if name not in ALL_PATTERNS:
        raise ConfigError(f"unknown motion pattern {name!r}; choose from {', '.join(ALL_PATTERNS)}")
    cam, obj = name.split("-")
    return cam[4:], obj[4:]


def _number(name: str, value, integer: bool = False) -> float:
    """A finite number from a config value (YAML may give ``ten``), else ConfigError naming the field."""
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not math.isfinite(value)
        or (integer and float(value) != int(value))
    ):
        kind = "an integer" if integer else "a finite number"
        raise ConfigError(f"motion.{name} must be {kind}, got {value!r}")
    return int(value) if integer else float(value)


@dataclass(frozen=True)
class MotionConfig:
    """Ranges the sampler draws from (all ``(lo, hi)`` uniform). Validated on construction."""

    n_frames: int = option(16, flag="--frames", help="frames per clip (motion.n_frames)")
    fps: float = option(8.0, help="frames per second (motion.fps)")
    cam_distance_cm: tuple[float, float] = (700.0, 1300.0)
    cam_height_cm: tuple[float, float] = (150.0, 450.0)
    cam_speed_cms: tuple[float, float] = (80.0, 180.0)
    cam_pan_dps: tuple[float, float] = (5.0, 11.0)
    obj_speed_cms: tuple[float, float] = (80.0, 220.0)
    obj_turn_dps: tuple[float, float] = (40.0, 110.0)
    dir_jitter_deg: float = 12.0
    patterns: tuple[str, ...] = option(
        PATTERNS,
        help="subset of the 9 motion patterns (cam_X-obj_Y), or the opt-in "
        "camera paths cam_orbit-/cam_follow-/cam_zoom-obj_Y and mixed patterns "
        "cam_mixed-/obj_mixed (translate and turn at once; docs/videos.md)",
    )
    # opt-in camera paths (camera_paths.py); left out of the job's identity while at these defaults
    cam_orbit_dps: tuple[float, float] = (4.0, 10.0)
    zoom_ratio: tuple[float, float] = (1.3, 1.8)
    shake_cm: float = 0.0
    shake_deg: float = 0.0
    obj_arc_dps: tuple[float, float] = (15.0, 35.0)  # a mixed subject's turn rate along its arc

    def __post_init__(self) -> None:
        n_frames = _number("n_frames", self.n_frames, integer=True)
        if not (2 <= n_frames <= 10000):
            raise ConfigError(f"motion.n_frames must be in 2..10000, got {self.n_frames}")
        object.__setattr__(self, "n_frames", n_frames)
        if not (0 < _number("fps", self.fps) <= 240):
            raise ConfigError(f"motion.fps must be in (0, 240], got {self.fps}")
        _number("dir_jitter_deg", self.dir_jitter_deg)
        for name in (
            "cam_distance_cm",
            "cam_height_cm",
            "cam_speed_cms",
            "cam_pan_dps",
            "obj_speed_cms",
            "obj_turn_dps",
            "cam_orbit_dps",
            "zoom_ratio",
            "obj_arc_dps",
        ):
            value = getattr(self, name)
            if isinstance(value, (str, bytes)) or not hasattr(value, "__iter__"):
                raise ConfigError(f"motion.{name} must be [lo, hi] numbers, got {value!r}")
            lo_hi = tuple(_number(name, x) for x in value)
            if len(lo_hi) != 2 or not (0 < lo_hi[0] <= lo_hi[1]) or not all(map(math.isfinite, lo_hi)):
                raise ConfigError(f"motion.{name} must be [lo, hi] with 0 < lo <= hi, got {lo_hi}")
            object.__setattr__(self, name, lo_hi)
        if not (0 <= float(self.dir_jitter_deg) < 30):
            raise ConfigError(f"motion.dir_jitter_deg must be in [0, 30), got {self.dir_jitter_deg}")
        if isinstance(self.patterns, (str, bytes)) or not isinstance(self.patterns, (list, tuple)) or not self.patterns:
            raise ConfigError(f"motion.patterns must be a non-empty list of patterns, got {self.patterns!r}")
        for p in self.patterns:
            parse_pattern(p)
        object.__setattr__(self, "patterns", tuple(self.patterns))
        self._check_extras()

    def _check_extras(self) -> None:
        if not 1.0 < self.zoom_ratio[0] <= self.zoom_ratio[1] <= 4.0:
            raise ConfigError(f"motion.zoom_ratio must be [lo, hi] with 1 < lo <= hi <= 4, got {self.zoom_ratio}")
        for name, hi in (("shake_cm", SHAKE_MAX_CM), ("shake_deg", SHAKE_MAX_DEG)):
            value = _number(name, getattr(self, name))
            if not 0.0 <= value <= hi:  # larger shake would blur the "still" / "turns" answers
                raise ConfigError(f"motion.{name} must be in [0, {hi}], got {value}")
            object.__setattr__(self, name, value)

    def identity(self) -> dict:
        """The fields as a dict, without the opt-in fields still at their defaults (so jobs made
        before they existed keep their fingerprint)."""
        d, default = asdict(self), MotionConfig()
        for name in ("cam_orbit_dps", "zoom_ratio", "shake_cm", "shake_deg", "obj_arc_dps"):
            if d[name] == getattr(default, name):
                del d[name]
        return d

    @classmethod
    def from_dict(cls, d: dict | None) -> "MotionConfig":
        """``d`` is the config's ``motion`` mapping; ``motion: [1, 2]`` is one line, not a
        TypeError from ``dict([1, 2])``."""
        if d is not None and not isinstance(d, dict):
            raise ConfigError(
                f"motion must be a mapping of fields ({', '.join(cls.__dataclass_fields__)}), "
                f"got {type(d).__name__} {str(d)[:60]}"
            )
        d = dict(d or {})
        unknown = set(d) - set(cls.__dataclass_fields__)
        if unknown:
            raise ConfigError(f"motion: unknown field(s) {sorted(unknown)}")
        return cls(**d)


@dataclass(frozen=True)
class MotionSpec:
    """The sampled scalars of one clip; :func:`build_clip` turns them into trajectories."""

    pattern: str
    n_frames: int
    fps: float
    anchor: tuple[float, float]  # subject start XY, cm
    bearing_deg: float  # camera-to-subject heading at t=0 (before centring)
    distance_cm: float  # horizontal camera-subject distance at t=0
    height_cm: float  # camera height above the ground under it
    cam_dir_deg: float = 0.0  # translation direction rel. camera heading
    cam_speed_cms: float = 0.0
    cam_pan_dps: float = 0.0  # signed: + pans right (yaw increases)
    obj_dir_deg: float = 0.0  # translation direction rel. camera heading
    obj_speed_cms: float = 0.0
    obj_yaw_deg: float = 0.0  # subject's initial yaw (static/rotate)
    obj_turn_dps: float = 0.0  # signed: + turns clockwise seen from above
    subject_size: tuple[float, float, float] = (400.0, 200.0, 150.0)  # cm, local X/Y/Z extent
    scale: float = 1.0  # size factor applied to distance, height and speeds
    # opt-in camera paths (camera_paths.py); left out of to_dict() while at these defaults
    cam_orbit_dps: float = 0.0  # signed: + = heading (and orbit angle) increasing
    zoom_ratio: float = 1.0  # final / initial focal length (> 1 zooms in)
    shake_cm: float = 0.0
    shake_deg: float = 0.0
    shake_seed: int = 0

    def to_dict(self) -> dict:
        d = asdict(self)
        for name, default in _SPEC_EXTRAS.items():
            if d[name] == default:
                del d[name]
        return d


_SPEC_EXTRAS = {"cam_orbit_dps": 0.0, "zoom_ratio": 1.0, "shake_cm": 0.0, "shake_deg": 0.0, "shake_seed": 0}


@dataclass(frozen=True, eq=False)
class Track:
    """Per-frame poses: ``location`` (T,3) cm, ``yaw``/``pitch`` (T,) degrees (yaw unwrapped)."""

    location: np.ndarray
    yaw: np.ndarray
    pitch: np.ndarray

    def rotator(self, t: int) -> Rotator:
        return Rotator(float(self.pitch[t]), float(self.yaw[t]), 0.0)

    def allclose(self, other: "Track", atol: float = 1e-6) -> bool:
        return all(
            np.allclose(a, b, atol=atol)
            for a, b in ((self.location, other.location), (self.yaw, other.yaw), (self.pitch, other.pitch))
        )


@dataclass(frozen=True, eq=False)
class ClipMotion:
    """Camera and subject trajectories of one clip, plus what produced them."""

    pattern: str
    fps: float
    camera: Track
    subject: Track
    subject_size: tuple[float, float, float]
    spec: MotionSpec | None = field(default=None, compare=False)
    zoom: np.ndarray | None = None  # (T,) focal-length factor (cam_zoom); None = fixed focal

    @property
    def n_frames(self) -> int:
        return int(len(self.camera.yaw))

    def allclose(self, other: "ClipMotion", atol: float = 1e-6) -> bool:
        zooms = (self.zoom is None) == (other.zoom is None) and (
            self.zoom is None or np.allclose(self.zoom, other.zoom, atol=atol)
        )
        return self.camera.allclose(other.camera, atol) and self.subject.allclose(other.subject, atol) and zooms


# --- geometry helpers ------------------------------------------------------------------------
def heading(deg: np.ndarray | float) -> np.ndarray:
    """Unit XY vector(s) for a yaw angle in degrees (UE: +yaw towards +Y)."""
    r = np.radians(deg)
    return np.stack([np.cos(r), np.sin(r)], axis=-1)


def wrap_deg(a: np.ndarray | float) -> np.ndarray:
    """Wrap angles to (-180, 180]."""
    return -((-np.asarray(a, dtype=float) + 180.0) % 360.0 - 180.0)


def subject_center(clip: ClipMotion) -> np.ndarray:
    """(T,3) centre of the subject's box (cm): base location lifted by half its height."""
    return clip.subject.location + np.array([0.0, 0.0, clip.subject_size[2] / 2.0])


def in_camera_frame(points: np.ndarray, cam_loc: np.ndarray, cam_yaw: np.ndarray) -> np.ndarray:
    """World points (T,2|3) → horizontal (forward, right) components in a yaw-only camera frame."""
    d = np.asarray(points, float)[..., :2] - np.asarray(cam_loc, float)[..., :2]
    f, r = heading(cam_yaw), heading(np.asarray(cam_yaw) + 90.0)
    return np.stack([(d * f).sum(-1), (d * r).sum(-1)], axis=-1)


def bearings(clip: ClipMotion) -> np.ndarray:
    """(T,) horizontal angle (deg) of the subject centre in the current camera frame, + = right."""
    fr = in_camera_frame(subject_center(clip), clip.camera.location, clip.camera.yaw)
    return np.degrees(np.arctan2(fr[:, 1], fr[:, 0]))


def distances(clip: ClipMotion) -> np.ndarray:
    """(T,) 3-D distance camera centre → subject centre, cm."""
    return np.linalg.norm(subject_center(clip) - clip.camera.location, axis=1)


# --- building trajectories -------------------------------------------------------------------
def _paths(spec: MotionSpec, yaw0: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Camera XY, camera yaw, subject XY over time for an initial camera heading ``yaw0``."""
    cam_mode, obj_mode = parse_pattern(spec.pattern)
    t = np.arange(spec.n_frames, dtype=float)[:, None] / spec.fps
    start = np.asarray(spec.anchor, float)
    cam0 = start - spec.distance_cm * heading(spec.bearing_deg)
    v_cam = spec.cam_speed_cms * heading(yaw0 + spec.cam_dir_deg) if cam_mode in ("translate", "mixed") else 0.0
    v_obj = spec.obj_speed_cms * heading(yaw0 + spec.obj_dir_deg) if obj_mode == "translate" else 0.0
    cam_yaw = yaw0 + (spec.cam_pan_dps * t[:, 0] if cam_mode in ("rotate", "mixed") else 0.0 * t[:, 0])
    if obj_mode == "mixed":  # an arc: heading yaw0 + obj_dir_deg, turning at obj_turn_dps
        return cam0 + v_cam * t, cam_yaw, arc_path(start, yaw0 + spec.obj_dir_deg, spec.obj_speed_cms, spec.obj_turn_dps, t[:, 0])
    if cam_mode == "follow":  # a tracking dolly: the subject's velocity, heading kept
        v_cam = v_obj
    elif cam_mode == "orbit":  # about the subject's start, facing it (camera_paths.py)
        cam_xy, cam_yaw = orbit_paths(start, spec.distance_cm, yaw0, spec.cam_orbit_dps, t[:, 0])
        return cam_xy, cam_yaw, start + v_obj * t
    return cam0 + v_cam * t, cam_yaw, start + v_obj * t


def arc_path(start: np.ndarray, heading0_deg: float, speed_cms: float, turn_dps: float, t: np.ndarray) -> np.ndarray:
    """(T,2) positions along a circular arc from ``start``: initial heading ``heading0_deg``,
    constant speed, heading turning at ``turn_dps`` (closed form; straight when the rate is 0)."""
    w = math.radians(turn_dps)
    if w == 0.0:
        return np.asarray(start, float) + speed_cms * t[:, None] * heading(heading0_deg)
    h0, h = math.radians(heading0_deg), math.radians(heading0_deg) + w * t
    r = speed_cms / w
    return np.asarray(start, float) + r * np.stack([np.sin(h) - math.sin(h0), math.cos(h0) - np.cos(h)], axis=-1)


def _centred_yaw(spec: MotionSpec, iterations: int = 5) -> float:
    """Initial camera yaw that centres the subject's bearing range in the view.

    Directions are defined relative to the camera heading, so shifting the heading shifts the
    paths too; a few fixed-point steps converge (the shift is a few degrees).
    """
    yaw0 = spec.bearing_deg
    for _ in range(iterations):
        cam_xy, cam_yaw, obj_xy = _paths(spec, yaw0)
        b = wrap_deg(np.degrees(np.arctan2(*(obj_xy - cam_xy).T[::-1])) - cam_yaw)
        yaw0 += (b.max() + b.min()) / 2.0
    return float(yaw0)


def build_clip(spec: MotionSpec, ground_height: HeightFn) -> ClipMotion:
    """Trajectories for ``spec``: constant velocities / rates (smooth), subject on the terrain,
    camera at a constant height, pitch aiming at the subject's mean elevation."""
    _, obj_mode = parse_pattern(spec.pattern)
    yaw0 = _centred_yaw(spec)
    cam_xy, cam_yaw, obj_xy = _paths(spec, yaw0)
    cam_z = float(ground_height(cam_xy[:1, 0], cam_xy[:1, 1])[0]) + spec.height_cm
    cam_loc = np.column_stack([cam_xy, np.full(len(cam_xy), cam_z)])
    obj_loc = np.column_stack([obj_xy, ground_height(obj_xy[:, 0], obj_xy[:, 1])])
    t = np.arange(spec.n_frames, dtype=float) / spec.fps
    if obj_mode == "translate":
        obj_yaw = np.full_like(t, yaw0 + spec.obj_dir_deg)
    elif obj_mode == "mixed":  # faces along its arc
        obj_yaw = yaw0 + spec.obj_dir_deg + spec.obj_turn_dps * t
    else:
        obj_yaw = spec.obj_yaw_deg + (spec.obj_turn_dps * t if obj_mode == "rotate" else 0.0 * t)
    centre = obj_loc + np.array([0.0, 0.0, spec.subject_size[2] / 2.0])
    d = centre - cam_loc
    pitch = float(np.degrees(np.arctan2(d[:, 2], np.hypot(d[:, 0], d[:, 1]))).mean())
    camera = Track(cam_loc, np.asarray(cam_yaw, float), np.full_like(t, pitch))
    subject = Track(obj_loc, np.asarray(obj_yaw, float), np.zeros_like(t))
    if spec.shake_cm > 0 or spec.shake_deg > 0:
        camera = _shaken(camera, spec)
    zoom = None
    if spec.zoom_ratio != 1.0:
        zoom = zoom_track(spec.zoom_ratio, spec.n_frames)
    return ClipMotion(spec.pattern, spec.fps, camera, subject, tuple(spec.subject_size), spec, zoom)


def _shaken(camera: Track, spec: MotionSpec) -> Track:
    """The camera track plus the spec's handheld jitter (camera_paths.shake_offsets)."""
    o = shake_offsets(spec.shake_seed, spec.n_frames, spec.fps, spec.shake_cm, spec.shake_deg)
    loc = camera.location + np.column_stack([o["x"], o["y"], o["z"]])
    return Track(loc, camera.yaw + o["yaw"], camera.pitch + o["pitch"])


def _uniform(rng: np.random.Generator, lo_hi: tuple[float, float]) -> float:
    return float(rng.uniform(lo_hi[0], lo_hi[1]))


def sample_spec(
    rng: np.random.Generator,
    cfg: MotionConfig,
    pattern: str,
    anchor: tuple[float, float],
    subject_size: tuple[float, float, float],
    scale: float = 1.0,
) -> MotionSpec:
    """Draw one clip's scalars for ``pattern`` (directions: a base direction + jitter).

    ``scale`` multiplies the camera distance, height (not below 60 cm) and both translation
    speeds, so a fox is filmed from closer and moves slower than a truck while keeping a similar
    on-screen size and motion."""
    cam_mode, obj_mode = parse_pattern(pattern)
    jit = lambda: float(rng.uniform(-cfg.dir_jitter_deg, cfg.dir_jitter_deg))  # noqa: E731
    sign = lambda: float(rng.choice([-1.0, 1.0]))  # noqa: E731
    spec = MotionSpec(
        pattern=pattern,
        n_frames=int(cfg.n_frames),
        fps=float(cfg.fps),
        anchor=(float(anchor[0]), float(anchor[1])),
        bearing_deg=float(rng.uniform(-180, 180)),
        distance_cm=scale * _uniform(rng, cfg.cam_distance_cm),
        height_cm=max(60.0, scale * _uniform(rng, cfg.cam_height_cm)),
        obj_yaw_deg=float(rng.uniform(-180, 180)),
        subject_size=tuple(float(s) for s in subject_size),
        scale=float(scale),
    )
    if cam_mode == "translate":
        base = CAM_DIRS[str(rng.choice(list(CAM_DIRS)))]
        spec = replace(spec, cam_dir_deg=base + jit(), cam_speed_cms=scale * _uniform(rng, cfg.cam_speed_cms))
    elif cam_mode == "rotate":
        spec = replace(spec, cam_pan_dps=sign() * _uniform(rng, cfg.cam_pan_dps))
    if obj_mode == "translate":
        base = OBJ_DIRS[str(rng.choice(list(OBJ_DIRS)))]
        spec = replace(spec, obj_dir_deg=base + jit(), obj_speed_cms=scale * _uniform(rng, cfg.obj_speed_cms))
    elif obj_mode == "rotate":
        spec = replace(spec, obj_turn_dps=sign() * _uniform(rng, cfg.obj_turn_dps))
    if "mixed" in (cam_mode, obj_mode):
        spec = _sample_mixed(rng, cfg, spec, cam_mode, obj_mode)
    return _sample_extras(rng, cfg, spec, cam_mode)


def _sample_mixed(rng: np.random.Generator, cfg: MotionConfig, spec: MotionSpec, cam_mode: str, obj_mode: str) -> MotionSpec:
    """Scalars of a mixed camera (translate + pan) or subject (arc). Directions are centred so
    the net displacement (the chord) points along the base direction ± jitter both in the
    camera's initial frame and in its final one (what the reversed clip's answer uses): a
    mixed camera's dolly direction leans by half its pan, a mixed subject's initial heading by
    minus half its turn plus half the camera's pan."""
    jit = lambda: float(rng.uniform(-cfg.dir_jitter_deg, cfg.dir_jitter_deg))  # noqa: E731
    sign = lambda: float(rng.choice([-1.0, 1.0]))  # noqa: E731
    dur = (spec.n_frames - 1) / spec.fps
    if cam_mode == "mixed":
        pan = sign() * _uniform(rng, cfg.cam_pan_dps)
        spec = replace(
            spec,
            cam_pan_dps=pan,
            cam_speed_cms=spec.scale * _uniform(rng, cfg.cam_speed_cms),
            cam_dir_deg=CAM_DIRS[str(rng.choice(list(CAM_DIRS)))] + pan * dur / 2.0 + jit(),
        )
    if obj_mode == "mixed":
        turn = sign() * _uniform(rng, cfg.obj_arc_dps)
        lean = spec.cam_pan_dps * dur / 2.0 if cam_mode in ("rotate", "mixed") else 0.0
        spec = replace(
            spec,
            obj_turn_dps=turn,
            obj_speed_cms=spec.scale * _uniform(rng, cfg.obj_speed_cms),
            obj_dir_deg=OBJ_DIRS[str(rng.choice(list(OBJ_DIRS)))] - turn * dur / 2.0 + lean + jit(),
        )
    return spec


def _sample_extras(rng: np.random.Generator, cfg: MotionConfig, spec: MotionSpec, cam_mode: str) -> MotionSpec:
    """The opt-in camera paths' scalars, drawn after everything else (DSI's nine patterns
    without shake draw nothing here, so their clips are unchanged)."""
    if cam_mode == "orbit":
        spec = replace(spec, cam_orbit_dps=float(rng.choice([-1.0, 1.0])) * _uniform(rng, cfg.cam_orbit_dps))
    elif cam_mode == "zoom":
        ratio = _uniform(rng, cfg.zoom_ratio)
        spec = replace(spec, zoom_ratio=ratio if rng.random() < 0.5 else 1.0 / ratio)
    if cfg.shake_cm > 0 or cfg.shake_deg > 0:
        spec = replace(spec, shake_cm=cfg.shake_cm, shake_deg=cfg.shake_deg, shake_seed=int(rng.integers(0, 2**31 - 1)))
    return spec


# --- variant transforms on the motion --------------------------------------------------------
def reverse_motion(clip: ClipMotion) -> ClipMotion:
    """Time reversal: the same poses played backwards (frame t ← frame T-1-t)."""
    rev = lambda tr: Track(tr.location[::-1].copy(), tr.yaw[::-1].copy(), tr.pitch[::-1].copy())  # noqa: E731
    zoom = None if clip.zoom is None else clip.zoom[::-1].copy()
    return replace(clip, camera=rev(clip.camera), subject=rev(clip.subject), spec=None, zoom=zoom)


def mirror_plane(clip: ClipMotion) -> tuple[np.ndarray, float]:
    """The camera's initial vertical plane: a point on it and its heading (deg)."""
    return clip.camera.location[0].copy(), float(clip.camera.yaw[0])


def mirror_points(points: np.ndarray, origin: np.ndarray, yaw_deg: float) -> np.ndarray:
    """Reflect world points (...,3) about the vertical plane through ``origin`` with heading
    ``yaw_deg`` (the plane contains the camera's forward and up axes)."""
    n = np.array([*heading(yaw_deg + 90.0), 0.0])
    p = np.asarray(points, float)
    return p - 2.0 * ((p - origin) @ n)[..., None] * n


def mirror_yaw(yaw: np.ndarray | float, plane_yaw: float) -> np.ndarray:
    """A heading reflected about a vertical plane of heading ``plane_yaw``: 2·plane − yaw."""
    return 2.0 * plane_yaw - np.asarray(yaw, float)


def hflip_motion(clip: ClipMotion) -> ClipMotion:
    """Mirror the whole world about the camera's initial vertical plane.

    Rendering the mirrored world from the mirrored camera gives exactly the horizontally
    flipped frames (pixel columns u ↔ W-1-u), which is what the hflip variant shows. Any vertical
    plane would do (they differ by a rigid motion, which no label depends on).
    """
    origin, plane_yaw = mirror_plane(clip)
    mir = lambda tr: Track(
        mirror_points(tr.location, origin, plane_yaw),  # noqa: E731
        mirror_yaw(tr.yaw, plane_yaw),
        tr.pitch.copy(),
    )
    return replace(clip, camera=mir(clip.camera), subject=mir(clip.subject), spec=None)


def transform_motion(clip: ClipMotion, aug: str) -> ClipMotion:
    """The motion a viewer of variant ``aug`` sees (std, hflip, reverse, reverse_hflip)."""
    if aug == "std":
        return clip
    if aug == "hflip":
        return hflip_motion(clip)
    if aug == "reverse":
        return reverse_motion(clip)
    if aug == "reverse_hflip":
        return hflip_motion(reverse_motion(clip))
    raise ConfigError(f"unknown video variant {aug!r}")


def mirror_transform(tf: Transform, origin: np.ndarray, plane_yaw: float) -> Transform:
    """Mirror an actor's transform: reflected location, reflected yaw, local Y scale negated.

    Valid for actors with pitch = roll = 0 (everything on the ground here)."""
    loc = mirror_points(np.asarray(tf.location), origin, plane_yaw)
    rot = Rotator(tf.rotation.pitch, float(mirror_yaw(tf.rotation.yaw, plane_yaw)), -tf.rotation.roll)
    sx, sy, sz = tf.scale
    return Transform(tuple(float(v) for v in loc), rot, (sx, -sy, sz))


# --- geometric pre-checks (cheap, before any rendering) --------------------------------------
def box_corners(size: tuple[float, float, float]) -> np.ndarray:
    """(8,3) local corners of an asset box: centred in XY, base on z=0 (RenderMesh convention)."""
    sx, sy, sz = size
    return np.array([[x, y, z] for x in (-sx / 2, sx / 2) for y in (-sy / 2, sy / 2) for z in (0.0, sz)])


def camera_at(clip: ClipMotion, t: int, fov_deg: float, width: int, height: int) -> Camera:
    """The engine Camera of frame ``t`` (``fov_deg`` is the unzoomed horizontal FOV)."""
    loc = tuple(float(v) for v in clip.camera.location[t])
    if clip.zoom is not None:  # focal length x zoom[t]
        fov_deg = math.degrees(2.0 * math.atan(math.tan(math.radians(fov_deg) / 2.0) / float(clip.zoom[t])))
    return Camera(loc, clip.camera.rotator(t), fov_deg, width, height)


def subject_transform(clip: ClipMotion, t: int) -> Transform:
    loc = tuple(float(v) for v in clip.subject.location[t])
    return Transform(loc, clip.subject.rotator(t))


def min_edge_margin_px(clip: ClipMotion, fov_deg: float, width: int, height: int) -> float:
    """Smallest distance (px) from the subject's projected box to the image border over all
    frames; negative when it leaves the view (or goes behind the camera)."""
    corners = box_corners(clip.subject_size)
    worst = math.inf
    for t in range(clip.n_frames):
        uv, depth = camera_at(clip, t, fov_deg, width, height).project(subject_transform(clip, t).apply(corners))
        if (depth <= 10.0).any():
            return -math.inf
        m = min(uv[:, 0].min(), uv[:, 1].min(), width - uv[:, 0].max(), height - uv[:, 1].max())
        worst = min(worst, float(m))
    return worst


def min_clearance_cm(clip: ClipMotion) -> float:
    """Smallest horizontal gap between the camera and the subject's footprint circle."""
    r = math.hypot(clip.subject_size[0], clip.subject_size[1]) / 2.0
    gap = np.linalg.norm(clip.subject.location[:, :2] - clip.camera.location[:, :2], axis=1) - r
    return float(gap.min())


def keep_out(clip: ClipMotion, pad_cm: float = 100.0, step_cm: float = 100.0) -> list[tuple[float, float, float]]:
    """Circles ``(x, y, r)`` covering the swept subject footprint and the camera path, so
    clutter placed outside them never interpenetrates a moving actor."""
    r_obj = math.hypot(clip.subject_size[0], clip.subject_size[1]) / 2.0 + pad_cm
    out = []
    for loc, r in ((clip.subject.location, r_obj), (clip.camera.location, pad_cm + 50.0)):
        if clip.pattern not in PATTERNS:  # curved (orbit) or opt-in paths: along every frame
            out += swept_circles(loc, r, step_cm)
            continue
        length = float(np.linalg.norm(loc[-1, :2] - loc[0, :2]))
        for s in np.linspace(0.0, 1.0, max(2, int(length / step_cm) + 2)):
            x, y = loc[0, :2] + s * (loc[-1, :2] - loc[0, :2])
            out.append((float(x), float(y), float(r)))
    return out


def swept_circles(loc: np.ndarray, r: float, step_cm: float = 100.0) -> list[tuple[float, float, float]]:
    """Circles of radius ``r`` every ≤ ``step_cm`` along the polyline through ``loc`` (T,2|3)."""
    out = []
    for a, b in zip(loc[:-1, :2], loc[1:, :2]):
        n = max(1, int(np.linalg.norm(b - a) / step_cm) + 1)
        out += [(float(x), float(y), float(r)) for x, y in (a + s * (b - a) for s in np.arange(n) / n)]
    x, y = loc[-1, :2]
    return out + [(float(x), float(y), float(r))]
