"""UnrealCV's camera commands beyond pose and images: exposure/lens settings and ``moveto``.

Settings the renderer can honour change the camera model (``exposure_bias`` scales lit pixels,
``lit_source normal`` makes lit return normals); the others (focus, motion blur, GI, reflections)
are stored and reported like the plugin does, without changing images. ``moveto`` sweeps UE's
DefaultPawn sphere against actor bounding boxes and the terrain and stops at the first hit.
Errors use the plugin's wording (see :mod:`engine.server.commands.unrealcv`).
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from sceneforge.core.errors import CommandError, ConfigError
from sceneforge.engine import limits
from sceneforge.engine.server.commands.table import command, parse_floats, parse_int
from sceneforge.engine.server.commands.unrealcv import NOT_IMPLEMENTED
from sceneforge.engine.server.state import ServerState
from sceneforge.engine.server.unrealcv_state import CameraSettings

MOVETO_RADIUS_CM = 35.0  # UE's DefaultPawn collision sphere: what `moveto` sweeps


# --- camera settings -------------------------------------------------------------------------
def _settings(state: ServerState, cam: str) -> CameraSettings:
    cam_id = parse_int(cam, "camera id")
    state.camera(cam_id)  # "Invalid sensor id" as the plugin
    return state.unrealcv.camera(cam_id)


def _choice(value: str, options: tuple[str, ...], message: str) -> str:
    key = value.lower()
    if key not in options:
        raise CommandError(message % value)
    return key


def _finite(args: list[str], what: str) -> tuple[float, ...]:
    values = parse_floats(args, what)
    if not all(math.isfinite(v) for v in values):
        raise CommandError(f"{what}: expected finite numbers, got {limits.shown(' '.join(args), 80)}")
    return values


@command("vset /camera/[id]/exposure_bias [bias]")
def exposure_bias(state: ServerState, args: list[str], id: str) -> str:
    """Set camera exposure bias in EV: lit pixels are scaled by 2**bias in linear light"""
    (bias,) = _finite(args, "exposure_bias")
    _settings(state, id).exposure_bias = max(-15.0, min(15.0, bias))
    return "ok"


@command("vset /camera/[id]/exposure_method [method]")
def exposure_method(state: ServerState, args: list[str], id: str) -> str:
    """Set camera exposure method: histogram, basic or manual (the renderer's exposure is fixed)"""
    _settings(state, id).exposure_method = _choice(
        args[0],
        ("histogram", "basic", "manual"),
        "Can not support auto exposure mode %s, available options are histogram, basic and manual",
    )
    return "ok"


@command("vset /camera/[id]/auto_speed [down] [up]")
def auto_speed(state: ServerState, args: list[str], id: str) -> str:
    """Set camera auto-exposure speed down and speed up (stored; no auto exposure here)"""
    _settings(state, id).auto_speed = _finite(args, "auto_speed")
    return "ok"


@command("vset /camera/[id]/auto_brightness [min] [max]")
def auto_brightness(state: ServerState, args: list[str], id: str) -> str:
    """Set camera auto-exposure min max brightness (stored; no auto exposure here)"""
    _settings(state, id).auto_brightness = _finite(args, "auto_brightness")
    return "ok"


@command("vset /camera/[id]/physical_exposure [enabled]")
def physical_exposure(state: ServerState, args: list[str], id: str) -> str:
    """Set camera apply physical camera exposure (stored)"""
    _settings(state, id).physical_exposure = parse_int(args[0], "physical_exposure")
    return "ok"


@command("vset /camera/[id]/focal [distance] [range]")
def focal(state: ServerState, args: list[str], id: str) -> str:
    """Set camera focus distance and range (stored; the pinhole camera has no depth of field)"""
    _settings(state, id).focal = _finite(args, "focal")
    return "ok"


@command("vset /camera/[id]/motion_blur [amount] [max] [per_object] [fps]")
def motion_blur(state: ServerState, args: list[str], id: str) -> str:
    """Set camera motion blur amount, max, per object, fps (stored; stills have no blur)"""
    amount, maximum, per_object = _finite(args[:3], "motion_blur")
    _settings(state, id).motion_blur = (amount, maximum, per_object, parse_int(args[3], "motion_blur fps"))
    return "ok"


_LIT_SOURCES = ("ftc_hdr", "fc_hdr", "sc_hdr", "scna_hdr", "ldr", "base", "color_depth", "scene_depth", "device_depth", "normal")


@command("vset /camera/[id]/lit_source [source]")
def lit_source(state: ServerState, args: list[str], id: str) -> str:
    """Set the capture source of the lit camera (normal makes lit return normals)"""
    _settings(state, id).lit_source = _choice(
        args[0], _LIT_SOURCES, "Can not support lit source %s, available options are " + ", ".join(_LIT_SOURCES)
    )
    return "ok"


@command("vset /camera/[id]/reflection [method]")
def reflection(state: ServerState, args: list[str], id: str) -> str:
    """Set camera reflection method: None, Lumen, ScreenSpace (stored; no reflections here)"""
    _settings(state, id).reflection = _choice(
        args[0],
        ("none", "lumen", "screen_space"),
        "Can not support reflection method %s, available options are none, lumen, screen_space.",
    )
    return "ok"


@command("vset /camera/[id]/illumination [method]")
def illumination(state: ServerState, args: list[str], id: str) -> str:
    """Set camera global illumination method: None, Lumen, ScreenSpace, Plugin (stored)"""
    _settings(state, id).illumination = _choice(
        args[0],
        ("none", "lumen", "screen_space", "plugin"),
        "Can not support global illumination method %s, available options are none, lumen, screen_space, plugin.",
    )
    return "ok"


@command("vset /camera/[id]/projection_type [type]")
def projection_type(state: ServerState, args: list[str], id: str) -> str:
    """Set camera projection type: perspective (orthographic is Not Implemented here)"""
    settings = _settings(state, id)
    mode = _choice(
        args[0],
        ("perspective", "orthographic"),
        "Can not support camera mode %s, available options are perspective and orthographic",
    )
    if mode == "orthographic":
        raise CommandError(NOT_IMPLEMENTED)
    settings.projection_type = mode
    return "ok"


@command("vset /camera/[id]/ortho_width [width]")
def ortho_width(state: ServerState, args: list[str], id: str) -> str:
    """Set ortho width of the camera (stored; used only by orthographic projection)"""
    (_settings(state, id).ortho_width,) = _finite(args, "ortho_width")
    return "ok"


def _segment_hits_box(p0: np.ndarray, p1: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> float | None:
    """Entry parameter t in [0, 1] of segment p0→p1 into box [lo, hi] (slab test), else None."""
    d = p1 - p0
    t0, t1 = 0.0, 1.0
    for a in range(3):
        if abs(d[a]) < 1e-12:
            if p0[a] < lo[a] or p0[a] > hi[a]:
                return None
            continue
        ta, tb = sorted(((lo[a] - p0[a]) / d[a], (hi[a] - p0[a]) / d[a]))
        t0, t1 = max(t0, ta), min(t1, tb)
        if t0 > t1:
            return None
    return t0


def _ground_hit(state: ServerState, start: np.ndarray, target: np.ndarray, r: float) -> float:
    """First t in [0, 1] where the swept sphere would dip into the terrain (5 cm steps), else 1."""
    dist = float(np.linalg.norm(target - start))
    t = np.linspace(0.0, 1.0, max(2, min(4000, int(dist / 5.0) + 2)))
    p = start[None, :] + t[:, None] * (target - start)[None, :]
    below = p[:, 2] - r < np.asarray(state.scene.ground.height(p[:, 0], p[:, 1])) - 1e-6
    if below[0] or not below.any():
        return 1.0  # starting inside the ground: let it out, as a sweep from an overlap
    return float(t[max(0, int(np.argmax(below)) - 1)])


@command("vset /camera/[id]/moveto [x] [y] [z]")
def moveto(state: ServerState, args: list[str], id: str) -> str:
    """Move camera to location [x, y, z], will be blocked by objects (a 35 cm sphere swept
    against every visible actor's bounding box and the terrain; it stops where it first touches)"""
    if id != "0":
        raise CommandError("MoveTo only supports the player camera with id 0")
    try:  # 1e300 is finite, but its sweep overflowed ("cannot convert float infinity to integer")
        limits.check_location("moveto", _finite(args, "moveto"))
    except ConfigError as e:
        raise CommandError(str(e)) from None
    target = np.array(_finite(args, "moveto"))
    cam = state.camera(0)
    start = np.array(cam.location, dtype=np.float64)
    r = MOVETO_RADIUS_CM
    hit = _ground_hit(state, start, target, r)
    for actor in state.scene.actors.values():
        if actor.hidden:
            continue
        world = actor.transform.apply(state.catalog.mesh(actor.asset_id).vertices)
        lo, hi = world.min(axis=0) - r, world.max(axis=0) + r
        if np.all(start > lo) and np.all(start < hi):
            continue  # already overlapping: UE lets a sweep move out of an initial overlap
        t = _segment_hits_box(start, target, lo, hi)
        if t is not None:
            hit = min(hit, t)
    dist = float(np.linalg.norm(target - start))
    if hit < 1.0 and dist > 0:
        hit = max(0.0, hit - 0.01 / dist)  # stop just short of contact
    end = start + hit * (target - start)
    state.scene.cameras[0] = replace(cam, location=tuple(float(v) for v in end))
    return "ok"


# --- objects ---------------------------------------------------------------------------------
