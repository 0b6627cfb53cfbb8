"""The world model: plain, validated data in UnrealCV units.

Conventions (the same as Unreal Engine / UnrealCV, and used at every boundary of sceneforge):

* lengths in **centimetres**;
* **left-handed**, **X forward, Y right, Z up** (seen from above, +Y is to the right of +X);
* rotations as ``Rotator(pitch, yaw, roll)`` in **degrees**: positive yaw turns from +X towards
  +Y (clockwise seen from above), positive pitch lifts the nose towards +Z, roll about forward;
* a camera's ``fov_deg`` is the **horizontal** field of view, as ``vset /camera/{i}/fov``.

The only place that converts to the renderer's frame (OpenGL eye space: right-handed, x right,
y up, looking down -z) is :meth:`Camera.view_matrix`. :meth:`Camera.project` implements the same
pinhole model on the CPU, so a test can check that a known point lands on the known pixel.

Nothing here imports a renderer; the render server reads these objects.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass, field, replace
from typing import Iterable

import numpy as np

from sceneforge.core.errors import ConfigError
from sceneforge.engine import limits

Vec3 = tuple[float, float, float]
RGB = tuple[int, int, int]


def _finite3(name: str, v: Iterable[float]) -> Vec3:
    if type(v) is tuple and len(v) == 3:  # already three floats (every actor placed): as they are
        x, y, z = v
        if type(x) is float and type(y) is float and type(z) is float and math.isfinite(x + y + z):
            return v  # a finite sum: none is inf or nan (an overflowing sum takes the long way)
    try:
        t = tuple(float(x) for x in v)
    except (TypeError, ValueError, OverflowError) as e:
        raise ConfigError(f"{name} must be 3 numbers, got {limits.shown(v, 80)}") from e
    if len(t) != 3 or not all(math.isfinite(x) for x in t):
        raise ConfigError(f"{name} must be 3 finite numbers, got {v!r}")
    return t  # type: ignore[return-value]


@dataclass(frozen=True)
class Rotator:
    """UE rotator in degrees. ``matrix()`` has columns (forward, right, up) in world axes."""

    pitch: float = 0.0
    yaw: float = 0.0
    roll: float = 0.0

    def __post_init__(self) -> None:
        limits.check_rotation("rotation", _finite3("rotation", (self.pitch, self.yaw, self.roll)))

    def matrix(self) -> np.ndarray:
        """3x3 rotation whose columns are the local X (forward), Y (right), Z (up) axes.

        Same numbers as UE's ``FRotationMatrix`` (which stores them as rows).
        """
        p, y, r = (math.radians(a) for a in (self.pitch, self.yaw, self.roll))
        sp, cp, sy, cy, sr, cr = math.sin(p), math.cos(p), math.sin(y), math.cos(y), math.sin(r), math.cos(r)
        forward = (cp * cy, cp * sy, sp)
        right = (sr * sp * cy - cr * sy, sr * sp * sy + cr * cy, -sr * cp)
        up = (-(cr * sp * cy + sr * sy), cy * sr - cr * sp * sy, cr * cp)
        return np.array([forward, right, up], dtype=np.float64).T

    def as_tuple(self) -> Vec3:
        return (self.pitch, self.yaw, self.roll)


@dataclass(frozen=True)
class Transform:
    """Location (cm), rotation, and per-axis scale of an actor."""

    location: Vec3 = (0.0, 0.0, 0.0)
    rotation: Rotator = Rotator()
    scale: Vec3 = (1.0, 1.0, 1.0)

    def __post_init__(self) -> None:
        object.__setattr__(self, "location", _finite3("location", self.location))
        object.__setattr__(self, "scale", _finite3("scale", self.scale))
        if isinstance(self.rotation, (tuple, list)):
            object.__setattr__(self, "rotation", Rotator(*self.rotation))
        if any(s == 0 for s in self.scale):
            raise ConfigError(f"scale must be non-zero, got {self.scale}")
        limits.check_location("location", self.location)
        limits.check_scale("scale", self.scale)

    def matrix(self) -> np.ndarray:
        """4x4 local→world matrix (column vectors): world = R @ (scale * local) + location."""
        m = np.eye(4)
        m[:3, :3] = self.rotation.matrix() * np.asarray(self.scale)[None, :]
        m[:3, 3] = self.location
        return m

    def apply(self, points: np.ndarray) -> np.ndarray:
        """Transform ``(N, 3)`` local points (cm) to world (cm)."""
        p = np.asarray(points, dtype=np.float64)
        return p * np.asarray(self.scale) @ self.rotation.matrix().T + np.asarray(self.location)


@dataclass(frozen=True)
class Actor:
    """A placed asset. ``color`` is the instance colour used by ``object_mask``."""

    name: str
    asset_id: str
    transform: Transform = Transform()
    color: RGB = (255, 255, 255)
    hidden: bool = False
    tint: RGB | None = None  # optional albedo override (e.g. a yellow taxi)

    def __post_init__(self) -> None:
        if not self.name or any(c.isspace() for c in self.name):
            raise ConfigError(f"actor name must be non-empty without spaces, got {self.name!r}")
        for label, c in (("color", self.color), ("tint", self.tint)):
            if c is not None and (len(c) != 3 or not all(0 <= int(x) <= 255 for x in c)):
                raise ConfigError(f"actor {self.name}: {label} must be 3 ints in 0..255, got {c!r}")


@dataclass(frozen=True)
class Camera:
    """Pinhole camera: pose in UE units, horizontal FOV, output resolution in pixels."""

    location: Vec3 = (0.0, 0.0, 0.0)
    rotation: Rotator = Rotator()
    fov_deg: float = 90.0
    width: int = 640
    height: int = 480

    def __post_init__(self) -> None:
        object.__setattr__(self, "location", _finite3("camera location", self.location))
        limits.check_location("camera location", self.location)
        if isinstance(self.rotation, (tuple, list)):
            object.__setattr__(self, "rotation", Rotator(*self.rotation))
        fov = limits.finite_float("camera fov_deg", self.fov_deg)  # a 400-digit int: one line, not OverflowError
        if not (limits.MIN_FOV_DEG <= fov < 180.0):  # 1e-300 made every render fail
            raise ConfigError(f"camera fov_deg must be in [{limits.MIN_FOV_DEG:g}, 180), got {self.fov_deg}")
        if not (1 <= int(self.width) <= 8192 and 1 <= int(self.height) <= 8192):
            raise ConfigError(f"camera resolution must be 1..8192, got {self.width}x{self.height}")

    # --- intrinsics -------------------------------------------------------------------------
    @property
    def focal_px(self) -> float:
        """Focal length in pixels (same for x and y: square pixels)."""
        return (self.width / 2.0) / math.tan(math.radians(self.fov_deg) / 2.0)

    @property
    def vfov_deg(self) -> float:
        return math.degrees(2.0 * math.atan(self.height / 2.0 / self.focal_px))

    def intrinsics(self) -> np.ndarray:
        """3x3 K with the principal point at the image centre; pixel (0,0) is the top-left
        pixel's top-left corner, so the centre of pixel (u, v) is at (u + 0.5, v + 0.5)."""
        f = self.focal_px
        return np.array([[f, 0, self.width / 2.0], [0, f, self.height / 2.0], [0, 0, 1.0]])

    # --- extrinsics: the single UE → renderer conversion --------------------------------------
    def view_matrix(self) -> np.ndarray:
        """4x4 from UE world (cm) to OpenGL eye space (x right, y up, looking down -z), in cm.

        Rows are the camera's right, up and -forward axes, so the determinant of the 3x3 part is
        -1: this is where the left-handed UE world becomes the right-handed GL frame. Renderers
        must therefore not rely on triangle winding (cull nothing, or flip the front face).
        """
        axes = self.rotation.matrix()
        forward, right, up = axes[:, 0], axes[:, 1], axes[:, 2]
        rot = np.stack([right, up, -forward])
        m = np.eye(4)
        m[:3, :3] = rot
        m[:3, 3] = -rot @ np.asarray(self.location)
        return m

    def projection_matrix(self, near: float, far: float) -> np.ndarray:
        """OpenGL perspective matrix (NDC z in [-1, 1]) matching :meth:`intrinsics`."""
        f = self.focal_px
        w, h = float(self.width), float(self.height)
        return np.array(
            [
                [2 * f / w, 0, 0, 0],
                [0, 2 * f / h, 0, 0],
                [0, 0, (far + near) / (near - far), 2 * far * near / (near - far)],
                [0, 0, -1, 0],
            ]
        )

    def to_camera(self, points: np.ndarray) -> np.ndarray:
        """World points (N,3) → camera frame (N,3) as (forward, right, up) in cm."""
        d = np.asarray(points, dtype=np.float64).reshape(-1, 3) - np.asarray(self.location)
        return d @ self.rotation.matrix()

    def project(self, points: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Project world points (N,3) to pixel coordinates.

        Returns ``(uv, depth)``: ``uv`` (N,2) in pixels (x to the right, y down, continuous
        coordinates where the top-left corner of the image is (0,0)); ``depth`` (N,) is the
        planar depth along the optical axis in cm (<= 0 means behind the camera).
        """
        c = self.to_camera(points)
        depth = c[:, 0]
        with np.errstate(divide="ignore", invalid="ignore"):
            u = self.width / 2.0 + self.focal_px * c[:, 1] / depth
            v = self.height / 2.0 - self.focal_px * c[:, 2] / depth
        return np.stack([u, v], axis=1), depth

    def with_pose(self, location: Vec3 | None = None, rotation: Rotator | None = None) -> "Camera":
        return replace(
            self,
            location=location if location is not None else self.location,
            rotation=rotation if rotation is not None else self.rotation,
        )


def look_at_rotation(eye: Vec3, target: Vec3) -> Rotator:
    """Rotator (roll 0) that points a camera at ``eye`` towards ``target`` (UE units)."""
    d = np.asarray(target, float) - np.asarray(eye, float)
    horiz = math.hypot(d[0], d[1])
    if horiz == 0 and d[2] == 0:
        raise ConfigError("look_at: eye and target coincide")
    return Rotator(pitch=math.degrees(math.atan2(d[2], horiz)), yaw=math.degrees(math.atan2(d[1], d[0])), roll=0.0)


@dataclass(frozen=True)
class Sun:
    """Directional light. ``pitch`` is the sun's elevation (degrees above the horizon),
    ``yaw`` the direction the sun is *in* (same convention as a rotator's yaw).

    ``intensity`` scales the sun's irradiance: 1 lights a white surface facing the sun to
    radiance 1 before exposure. ``angular_diameter_deg`` sizes the sun disk drawn in the sky.
    """

    pitch: float = 50.0
    yaw: float = -30.0
    intensity: float = 1.0
    color: RGB = (255, 250, 240)
    angular_diameter_deg: float = 0.53

    def direction_to_sun(self) -> np.ndarray:
        p, y = math.radians(self.pitch), math.radians(self.yaw)
        return np.array([math.cos(p) * math.cos(y), math.cos(p) * math.sin(y), math.sin(p)])


@dataclass(frozen=True)
class Sky:
    """The sky: a procedural gradient (``zenith``/``horizon``, sRGB) or an HDRI by id.

    ``ambient`` is sky light relative to sun light (the mean radiance of the upper sky, in units
    of the sun's): the same meaning for the procedural sky and for an HDRI, which the renderer
    normalises to it, so HDRIs are interchangeable under randomisation. ``intensity`` scales the
    sky (background and image-based light) further; ``rotation_deg`` turns the HDRI about Z
    (UE yaw). ``align_sun`` (default): an HDRI with a clear sun of its own is instead turned so
    that its sun stands at the ``Sun``'s yaw, where the shadows say it is (``rotation_deg`` then
    only applies to HDRIs without a clear sun: overcast, clipped). ``turbidity`` (2 = clear ..
    10 = hazy) widens the glow around the sun.
    """

    zenith: RGB = (110, 160, 225)
    horizon: RGB = (200, 220, 240)
    ambient: float = 0.35
    hdri: str | None = None
    intensity: float = 1.0
    rotation_deg: float = 0.0
    turbidity: float = 3.0
    align_sun: bool = True


@dataclass(frozen=True)
class Ground:
    """The ground plane at ``z = 0`` plus an optional relief (heights in cm).

    ``texture`` names a procedural pattern (grass, sand, asphalt, snow, noise; "flat" for none);
    ``surface`` a ground material id of the asset library (``AssetLibrary.surface``), repeated
    every ``tile_cm`` (the renderer falls back to the procedural pattern when the id is unknown).
    """

    color: RGB = (120, 140, 90)
    texture: str | None = None  # optional texture id/path understood by the renderer
    relief_amplitude: float = 0.0  # cm
    relief_wavelength: float = 3000.0  # cm
    extent: float = 20000.0  # half-size of the ground square, cm
    surface: str | None = None  # asset-library surface id (textured PBR ground)
    tile_cm: float = 300.0  # world size of one repeat of the surface texture

    def height(self, x: np.ndarray | float, y: np.ndarray | float) -> np.ndarray | float:
        """Terrain height (cm) at world XY: a smooth sum of sines, 0 when amplitude is 0."""
        if self.relief_amplitude == 0:
            return np.zeros_like(np.asarray(x, dtype=float)) if np.ndim(x) else 0.0
        k = 2 * math.pi / self.relief_wavelength
        h = 0.5 * (
            np.sin(k * np.asarray(x)) * np.cos(0.7 * k * np.asarray(y))
            + 0.5 * np.sin(1.9 * k * np.asarray(x) + 1.3 * k * np.asarray(y))
        )
        return self.relief_amplitude * h


@dataclass(frozen=True)
class Fog:
    """Height fog / aerial perspective: extinction ``density`` per km at z = 0, thinning
    exponentially with height (``height_falloff_m``: the height over which it falls by e).
    ``color`` None = the sky's horizon colour. 0 density = no fog."""

    density: float = 0.0
    height_falloff_m: float = 150.0
    color: RGB | None = None


LOOKS = ("pbr", "flat")


@dataclass(frozen=True)
class Look:
    """How ``lit`` is shaded. ``style`` "pbr" (default): linear HDR, GGX materials, image-based
    light, fog, ACES tone mapping at ``exposure_ev``, FXAA when ``fxaa``; "flat": the original
    Lambert + gradient look (kept for speed comparisons). Never changes masks, ids or depth."""

    style: str = "pbr"
    exposure_ev: float = 0.0
    fxaa: bool = True

    def __post_init__(self) -> None:
        if self.style not in LOOKS:
            raise ConfigError(f"look.style must be one of {', '.join(LOOKS)}, got {self.style!r}")


@dataclass
class Scene:
    """Mutable container the server edits in response to ``vset`` commands."""

    actors: dict[str, Actor] = field(default_factory=dict)
    cameras: dict[int, Camera] = field(default_factory=lambda: {0: Camera()})
    sun: Sun = field(default_factory=Sun)
    sky: Sky = field(default_factory=Sky)
    ground: Ground = field(default_factory=Ground)
    fog: Fog = field(default_factory=Fog)
    look: Look = field(default_factory=Look)
    env: str | None = None

    def add(self, actor: Actor) -> None:
        if actor.name in self.actors:
            raise ConfigError(f"actor {actor.name!r} already exists")
        self.actors[actor.name] = actor

    def replace_actor(self, name: str, **changes) -> Actor:
        if name not in self.actors:
            raise ConfigError(f"no actor named {name!r}")
        self.actors[name] = replace(self.actors[name], **changes)
        return self.actors[name]


def instance_color(index: int) -> RGB:
    """Deterministic, well-separated instance colour for the ``index``-th object (0-based).

    Colours are distinct for the first 2**18 indices and never pure black (the background).
    """
    if index < 0:
        raise ConfigError(f"instance index must be >= 0, got {index}")
    # Spread bits of (index + 1) over the three channels, then scramble with a fixed odd
    # multiplier so consecutive objects get very different colours.
    n = (index + 1) * 2654435761 % (1 << 24)
    if n == 0:
        n = 1
    return ((n >> 16) & 255, (n >> 8) & 255, n & 255)


def class_color(cls: str) -> RGB:
    """The colour of class ``cls`` in a ``class_mask`` (engine/render_kinds.py): the first three
    bytes of its name's SHA-256, never pure black (the background). A function of the name alone,
    so a client computes it without asking the server, and a class keeps its colour across
    scenes, datasets and asset packs."""
    r, g, b = hashlib.sha256(str(cls).encode("utf-8")).digest()[:3]
    return (r, g, b) if (r, g, b) != (0, 0, 0) else (1, 1, 1)
