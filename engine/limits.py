"""Bounds on every world / actor / camera value a client or a config file can set.

Why: a value the renderer accepts but cannot handle turns into memory or time, not an error. A
ground ``extent`` of 1e30 cm made the ground grid allocation fail and, before the renderer
recovered from failed renders, left every later render of every client broken; an extent of
1e6 cm with relief took 5.6 GB and 50 s for one frame. The limits are generous for real scenes
(SpaRRTa's scenes are ~100 m across; a camera at 100 km sees nothing useful) and are checked at
the boundaries: the server's ``vset`` commands and the environment loader, so a bad value is one
``error ...`` line naming the field, never a broken server.

Units: cm, degrees (as everywhere, see :mod:`engine.world`).
"""

from __future__ import annotations

import math

from sceneforge.core.errors import ConfigError

MAX_COORD_CM = 1.0e7  # |x|, |y|, |z| of actors and cameras: 100 km
MAX_ANGLE_DEG = 36000.0  # |pitch|, |yaw|, |roll|: 100 turns (angles wrap; bigger is a bug)
SCALE_RANGE = (1.0e-3, 1.0e3)  # |scale| per axis (negative = mirrored, still allowed)
MAX_SPAWN_BATCH = 4096  # actors per ``vset /sceneforge/spawn`` request
MAX_ACTORS = 65536  # actors in one scene
MAX_GROUND_CELLS = 1024  # ground grid cells per side (the renderer coarsens the grid beyond)
MAX_TOKEN_LEN = 256  # characters of a render_if_visible ``unless_passed`` token
MAX_NAME_LEN = 256  # characters of a world string (env name, sky.hdri, ground.surface/texture)
WORLD_CONTENT_KEPT = 8  # HDRIs / ground surfaces a server keeps loaded (least recently used dropped)
MAX_LOGGED_CHARS = 200  # characters of one client-given value quoted in a log line
MIN_FOV_DEG = 0.01  # camera horizontal FOV lower bound (1e-300: an infinite focal length)
MAX_CYCLES_SAMPLES = 4096  # ``--renderer cycles:samples=N`` (1e6 took > 90 s for a 32² frame)
MAX_CYCLES_SEED = 2**31 - 1  # Blender's seed is a 32-bit int
MAX_LOG_RECORD = 4000  # characters of one server log message (tracebacks: 4x); the rest is cut
MAX_REQUEST_PIXELS = 2**26  # pixels x passes of one render request (``--max-request-pixels``):
# 8192² x 1 kind, 4096² x 4; 8192² x 4 lit passes took 17.8 s and kept 1.4 GB
MAX_SCENE_TRIANGLES = 2**24  # triangles of the visible actors at full detail when a render is asked for
# (``--max-scene-triangles``): 65,536 actors took 17.5 s a frame; the largest
# shipped environment has ~0.5 M (forest), so the default is 30x that

# (section, field) -> (low, high), inclusive; checked for the world dict / environment files.
WORLD_BOUNDS: dict[tuple[str, str], tuple[float, float]] = {
    ("sun", "pitch"): (-90.0, 90.0),
    ("sun", "yaw"): (-MAX_ANGLE_DEG, MAX_ANGLE_DEG),
    ("sun", "intensity"): (0.0, 100.0),
    ("sky", "ambient"): (0.0, 10.0),
    ("ground", "relief_amplitude"): (-1.0e5, 1.0e5),  # 1 km
    ("ground", "relief_wavelength"): (10.0, 1.0e7),
    ("ground", "extent"): (100.0, 1.0e6),  # half-size 1 m .. 10 km
    ("ground", "tile_cm"): (1.0, 1.0e5),
    ("sun", "angular_diameter_deg"): (0.0, 30.0),
    ("sky", "intensity"): (0.0, 100.0),
    ("sky", "rotation_deg"): (-MAX_ANGLE_DEG, MAX_ANGLE_DEG),
    ("sky", "turbidity"): (1.0, 20.0),
    ("fog", "density"): (0.0, 1000.0),  # extinction per km at z = 0
    ("fog", "height_falloff_m"): (1.0, 1.0e5),
    ("look", "exposure_ev"): (-20.0, 20.0),
}


def finite_float(where: str, value) -> float:
    """``value`` as a float if it is a finite number (not a bool), else ConfigError naming ``where``.

    Why: JSON and YAML integers have no size limit, and ``float()``/``math.isfinite`` of a
    400-digit one raise OverflowError (issue 48: ``error internal OverflowError`` replies and
    31-53-line tracebacks for env files and ``--config``). Every number from outside that becomes
    a float goes through here or :func:`check_range`."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ConfigError(f"{where}: expected a finite number, got {shown(value, 60)}")
    try:
        f = float(value)
    except OverflowError:
        raise ConfigError(f"{where}: {shown(value, 40)} is too large (expected a finite number)") from None
    if not math.isfinite(f):
        raise ConfigError(f"{where}: expected a finite number, got {shown(value, 60)}")
    return f


def check_range(where: str, value: float, low: float, high: float) -> float:
    """``value`` as a float if finite and within ``[low, high]``, else ConfigError naming ``where``."""
    if type(value) is float and low <= value <= high and math.isfinite(value):  # the common case
        return value
    f = finite_float(where, value)
    if not low <= f <= high:
        raise ConfigError(f"{where}: {shown(value, 40)} is outside the allowed range [{low:g}, {high:g}]")
    return f


def shown(value, limit: int = MAX_LOGGED_CHARS) -> str:
    """``repr(value)`` cut to ``limit`` characters (with the full length): how a client-given value
    is quoted in logs and error replies, so a 1 MiB id costs a line, not a megabyte.

    >>> shown("x" * 1000, 10)
    "'xxxxxxxx... (1000 characters)"
    """
    text = repr(value)
    if len(text) <= limit:
        return text
    n = len(value) if isinstance(value, (str, bytes)) else len(text)
    return f"{text[: limit - 1]}... ({n} characters)"


def check_world_field(section: str, name: str, value):
    """Bounds-check one world value when the field has bounds; other values pass unchanged."""
    bounds = WORLD_BOUNDS.get((section, name))
    return value if bounds is None else check_range(f"world.{section}.{name}", value, *bounds)


def _floats_within(values, low: float, high: float, magnitude: bool = False) -> bool:
    """Three plain floats (their absolute values with ``magnitude``) within the finite
    ``[low, high]``, so finite too: nothing to report (every actor placed). Anything else, nan
    included, takes the per-value checks and their messages."""
    if type(values) is not tuple or len(values) != 3:
        return False
    x, y, z = values
    if type(x) is not float or type(y) is not float or type(z) is not float:
        return False
    if magnitude:
        x, y, z = abs(x), abs(y), abs(z)
    return low <= x <= high and low <= y <= high and low <= z <= high


def check_location(where: str, xyz) -> None:
    if _floats_within(xyz, -MAX_COORD_CM, MAX_COORD_CM):
        return
    for axis, v in zip("xyz", xyz):
        check_range(f"{where}.{axis}", v, -MAX_COORD_CM, MAX_COORD_CM)


def check_rotation(where: str, pyr) -> None:
    if _floats_within(pyr, -MAX_ANGLE_DEG, MAX_ANGLE_DEG):
        return
    for axis, v in zip(("pitch", "yaw", "roll"), pyr):
        check_range(f"{where}.{axis}", v, -MAX_ANGLE_DEG, MAX_ANGLE_DEG)


def check_scale(where: str, scale) -> None:
    if _floats_within(scale, *SCALE_RANGE, magnitude=True):
        return
    for axis, v in zip("xyz", scale):
        check_range(f"{where}.{axis} (absolute value)", abs(v), *SCALE_RANGE)
