"""The rest of the UnrealCV plugin's command set (``docs/reference/command_schema.json``).

Each command does what the plugin does where a renderer can honour it, with the plugin's reply
(``ok``, ``true``/``false``, names...), or answers with the plugin's own error wording where the
feature does not exist here (``Not Implemented``, ``Argument Invalid``, ``Can not find actor with
id ...``). Game-only actions (pause, input, keyboard) are accepted no-ops: there is no game clock
or pawn, so "paused" is simply remembered. Coverage table: docs/server.md.

This module is imported last: ``vrun``/``vexec``/``vbp`` are catch-alls.
"""
from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from core.errors import CommandError
from engine.server.commands.stock import check_name, new_actor
from engine.server.commands.table import command, fmt_vec, parse_floats, parse_int
from engine.server.state import ServerState
from engine.server.unrealcv_state import CameraSettings
from engine.world import Transform

NOT_IMPLEMENTED = "Not Implemented"       # FExecStatus::NotImplemented
ARGUMENT_INVALID = "Argument Invalid"     # FExecStatus::InvalidArgument
LEVEL_SCRIPT_ACTOR = "SceneforgeLevelScriptActor"
PERSISTENT_LEVEL = "PersistentLevel"
MOVETO_RADIUS_CM = 35.0  # UE's DefaultPawn collision sphere: what `moveto` sweeps


# --- /action ---------------------------------------------------------------------------------
@command("vset /action/game/pause")
def pause(state: ServerState, args: list[str]) -> str:
    """Pause the game (no game clock here: remembered, nothing moves on its own anyway)"""
    state.unrealcv.paused = True
    return "ok"


@command("vset /action/game/resume")
def resume(state: ServerState, args: list[str]) -> str:
    """Resume the game"""
    state.unrealcv.paused = False
    return "ok"


@command("vget /action/game/is_paused")
def is_paused(state: ServerState, args: list[str]) -> str:
    """Whether the game is paused: true or false"""
    return "true" if state.unrealcv.paused else "false"


@command("vset /action/game/level [level]")
def open_level(state: ServerState, args: list[str]) -> str:
    """Open a level: destroys every actor (a new level starts empty) and names the level"""
    state.reset()
    state.unrealcv.level = args[0]
    return "ok"


@command("vset /action/input/enable")
def input_enable(state: ServerState, args: list[str]) -> str:
    """Enable player input (no pawn here: remembered)"""
    state.unrealcv.input_enabled = True
    return "ok"


@command("vset /action/input/disable")
def input_disable(state: ServerState, args: list[str]) -> str:
    """Disable player input (no pawn here: remembered)"""
    state.unrealcv.input_enabled = False
    return "ok"


@command("vset /action/keyboard [key] [duration]")
def keyboard(state: ServerState, args: list[str]) -> str:
    """Press a key for [duration] seconds (no game input here: accepted, no effect)"""
    parse_floats(args[1:], "keyboard duration")
    return "ok"


@command("vset /action/eyes_distance [distance]")
def eyes_distance(state: ServerState, args: list[str]) -> str:
    """Stereo eye distance: Not Implemented, as in the plugin"""
    raise CommandError(NOT_IMPLEMENTED)


# --- view mode -------------------------------------------------------------------------------
VIEWMODES = ("depth", "normal", "optical_flow", "object_mask", "lit", "unlit", "base_color",
             "debug", "wireframe", "vertex_color", "no_transparency")


@command("vset /viewmode [mode]")
def set_viewmode(state: ServerState, args: list[str]) -> str:
    """Set ViewMode to (lit, normal, depth, object_mask, ...): what vget /screenshot shows"""
    mode = args[0].lower()
    if mode not in VIEWMODES:
        raise CommandError(f"Can not set ViewMode to {mode}")
    state.unrealcv.viewmode = mode
    return "ok"


@command("vget /viewmode")
def get_viewmode(state: ServerState, args: list[str]) -> str:
    """Get current ViewMode"""
    return state.unrealcv.viewmode


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
        raise CommandError(f"{what}: expected finite numbers, got {' '.join(args)!r}")
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
        args[0], ("histogram", "basic", "manual"),
        "Can not support auto exposure mode %s, available options are histogram, basic and manual")
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


_LIT_SOURCES = ("ftc_hdr", "fc_hdr", "sc_hdr", "scna_hdr", "ldr", "base", "color_depth",
                "scene_depth", "device_depth", "normal")


@command("vset /camera/[id]/lit_source [source]")
def lit_source(state: ServerState, args: list[str], id: str) -> str:
    """Set the capture source of the lit camera (normal makes lit return normals)"""
    _settings(state, id).lit_source = _choice(
        args[0], _LIT_SOURCES,
        "Can not support lit source %s, available options are " + ", ".join(_LIT_SOURCES))
    return "ok"


@command("vset /camera/[id]/reflection [method]")
def reflection(state: ServerState, args: list[str], id: str) -> str:
    """Set camera reflection method: None, Lumen, ScreenSpace (stored; no reflections here)"""
    _settings(state, id).reflection = _choice(
        args[0], ("none", "lumen", "screen_space"),
        "Can not support reflection method %s, available options are none, lumen, screen_space.")
    return "ok"


@command("vset /camera/[id]/illumination [method]")
def illumination(state: ServerState, args: list[str], id: str) -> str:
    """Set camera global illumination method: None, Lumen, ScreenSpace, Plugin (stored)"""
    _settings(state, id).illumination = _choice(
        args[0], ("none", "lumen", "screen_space", "plugin"),
        "Can not support global illumination method %s, available options are none, lumen, screen_space, plugin.")
    return "ok"


@command("vset /camera/[id]/projection_type [type]")
def projection_type(state: ServerState, args: list[str], id: str) -> str:
    """Set camera projection type: perspective (orthographic is Not Implemented here)"""
    settings = _settings(state, id)
    mode = _choice(args[0], ("perspective", "orthographic"),
                   "Can not support camera mode %s, available options are perspective and orthographic")
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
@command("vget /object/[name]/label")
def get_label(state: ServerState, args: list[str], name: str) -> str:
    """Get the object's label (the editor's display name; defaults to its name)"""
    state.actor(name)
    return state.unrealcv.labels.get(name, name)


@command("vset /object/[name]/label [label]")
def set_label(state: ServerState, args: list[str], name: str) -> str:
    """Set the object's label"""
    state.actor(name)
    state.unrealcv.labels[name] = args[0]
    return "ok"


@command("vset /object/[name]/name [new_name]")
def rename(state: ServerState, args: list[str], name: str) -> str:
    """Rename an object (its colour, pose and place in vget /objects stay)"""
    actor = state.actor(name)
    new = check_name(args[0])
    if new == name:
        return "The name has already been set"
    if new in state.scene.actors:
        raise CommandError(f"Renaming an object to overwrite an existing object is not allowed: {new}")
    state.scene.actors = {(new if n == name else n): (replace(a, name=new) if n == name else a)
                          for n, a in state.scene.actors.items()}
    if name in state.unrealcv.labels:
        state.unrealcv.labels[new] = state.unrealcv.labels.pop(name)
    return "ok"


@command("vget /object/[name]/mobility")
def mobility(state: ServerState, args: list[str], name: str) -> str:
    """Get the object's mobility: every spawned actor can be moved (Movable)"""
    state.actor(name)
    return "Movable"


def _material_names(state: ServerState, asset_id: str) -> list[str]:
    mesh = state.catalog.mesh(asset_id)
    materials = getattr(mesh, "materials", None) or ()
    if not materials:
        return [f"/sceneforge/{asset_id}/VertexColor"]
    return [f"/sceneforge/{asset_id}/{getattr(m, 'name', None) or f'Material_{i}'}" for i, m in enumerate(materials)]


@command("vget /object/[name]/material")
def get_material(state: ServerState, args: list[str], name: str) -> str:
    """Get the object's material slots as '[slot] path ' (paths under /sceneforge/<asset>/)"""
    actor = state.actor(name)
    return "".join(f"[{i}] {p} " for i, p in enumerate(_material_names(state, actor.asset_id)))


@command("vset /object/[name]/material [slot] [path]")
def set_material(state: ServerState, args: list[str], name: str) -> str:
    """Set a material slot: only an object's own materials exist here (else Can not load material)"""
    actor = state.actor(name)
    slot = parse_int(args[0], "material slot")
    names = _material_names(state, actor.asset_id)
    if not 0 <= slot < len(names):
        raise CommandError("Invalid material slot")
    if args[1] != names[slot]:
        raise CommandError("Can not load material")
    return "ok"


@command("vget /object/[name]/vertex_location")
def vertex_location(state: ServerState, args: list[str], name: str) -> str:
    """Get the world location of every mesh vertex, one 'x y z' line each (cm)"""
    actor = state.actor(name)
    world = actor.transform.apply(state.catalog.mesh(actor.asset_id).vertices)
    return "".join(f"{x:.5f}     {y:.5f}     {z:.5f}\n" for x, y, z in world)


@command("vset /objects/spawn_cube", "vset /objects/spawn_cube [name]")
def spawn_cube(state: ServerState, args: list[str]) -> str:
    """Spawn a 100 cm cube (primitive_cube) at the origin; replies with its name"""
    name = args[0] if args else None
    if name is None:
        n = 0
        while f"CubeActor_{n}" in state.scene.actors:
            n += 1
        name = f"CubeActor_{n}"
    actor = new_actor(state, "primitive_cube", name, Transform())
    state.scene.add(actor)
    return actor.name


# --- levels and blueprints -------------------------------------------------------------------
@command("vget /persistent_level/id")
def persistent_level_id(state: ServerState, args: list[str]) -> str:
    """Get persistent level id, so that we can call BP function defined in it"""
    return PERSISTENT_LEVEL


@command("vget /persistent_level/level_script_actor/id")
def level_script_actor_id(state: ServerState, args: list[str]) -> str:
    """Get the level script actor's id (it defines no blueprint functions here)"""
    return LEVEL_SCRIPT_ACTOR


def _blueprint(state: ServerState, obj: str, func: str | None) -> str:
    """vexec/vbp: objects exist, but no object has blueprint functions here."""
    if obj not in state.scene.actors and obj not in (PERSISTENT_LEVEL, LEVEL_SCRIPT_ACTOR):
        raise CommandError(f"Can not find actor with id '{obj}'")
    if func is None:
        raise CommandError("The blueprint function name can not be empty.")
    raise CommandError(ARGUMENT_INVALID)  # the plugin's reply when FindFunction fails


@command(*("vexec [object] [function]" + " [arg]" * n for n in range(6)))
def vexec(state: ServerState, args: list[str], object: str) -> str:
    """Run UE5 blueprint function: no blueprints here, so the plugin's 'Argument Invalid'"""
    return _blueprint(state, object, args[0] if args else None)


@command(*("vbp [object] [function]" + " [arg]" * n for n in range(10)))
def vbp(state: ServerState, args: list[str], object: str) -> str:
    """Run UE5 blueprint function with output: no blueprints here ('Argument Invalid')"""
    return _blueprint(state, object, args[0] if args else None)


@command(*("vrun [console_command]" + " [arg]" * n for n in range(6)))
def vrun(state: ServerState, args: list[str], console_command: str) -> str:
    """Run UE5 built-in console commands: setres resizes the cameras, others are accepted
    (UE's console ignores commands it does not know, so the plugin replies ok)"""
    return "ok"
