"""The rest of the UnrealCV plugin's command set (``docs/reference/command_schema.json``).

Each command does what the plugin does where a renderer can honour it, with the plugin's reply
(``ok``, ``true``/``false``, names...), or answers with the plugin's own error wording where the
feature does not exist here (``Not Implemented``, ``Argument Invalid``, ``Can not find actor with
id ...``). Game-only actions (pause, input, keyboard) are accepted no-ops: there is no game clock
or pawn, so "paused" is simply remembered. Coverage table: docs/server.md.

This module is imported last: ``vrun``/``vexec``/``vbp`` are catch-alls.
"""

from __future__ import annotations

from dataclasses import replace

from sceneforge.core.errors import CommandError
from sceneforge.engine.server.commands.stock import check_name, new_actor
from sceneforge.engine.server.commands.table import READ, RENDER, command, parse_floats, parse_int
from sceneforge.engine.server.state import ServerState
from sceneforge.engine.world import Transform

NOT_IMPLEMENTED = "Not Implemented"  # FExecStatus::NotImplemented
ARGUMENT_INVALID = "Argument Invalid"  # FExecStatus::InvalidArgument
LEVEL_SCRIPT_ACTOR = "SceneforgeLevelScriptActor"
PERSISTENT_LEVEL = "PersistentLevel"


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


@command("vget /action/game/is_paused", access=READ)
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
VIEWMODES = (
    "depth",
    "normal",
    "optical_flow",
    "object_mask",
    "lit",
    "unlit",
    "base_color",
    "debug",
    "wireframe",
    "vertex_color",
    "no_transparency",
)


@command("vset /viewmode [mode]")
def set_viewmode(state: ServerState, args: list[str]) -> str:
    """Set ViewMode to (lit, normal, depth, object_mask, ...): what vget /screenshot shows"""
    mode = args[0].lower()
    if mode not in VIEWMODES:
        raise CommandError(f"Can not set ViewMode to {mode}")
    state.unrealcv.viewmode = mode
    return "ok"


@command("vget /viewmode", access=READ)
def get_viewmode(state: ServerState, args: list[str]) -> str:
    """Get current ViewMode"""
    return state.unrealcv.viewmode


@command("vget /object/[name]/label", access=READ)
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
    state.actor(name)  # the plugin's "Cannot find object" when it does not exist
    new = check_name(args[0])
    if new == name:
        return "The name has already been set"
    if new in state.scene.actors:
        raise CommandError(f"Renaming an object to overwrite an existing object is not allowed: {new}")
    state.scene.actors = {
        (new if n == name else n): (replace(a, name=new) if n == name else a) for n, a in state.scene.actors.items()
    }
    if name in state.unrealcv.labels:
        state.unrealcv.labels[new] = state.unrealcv.labels.pop(name)
    return "ok"


@command("vget /object/[name]/mobility", access=READ)
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


@command("vget /object/[name]/material", access=RENDER)
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


@command("vget /object/[name]/vertex_location", access=RENDER)
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
@command("vget /persistent_level/id", access=READ)
def persistent_level_id(state: ServerState, args: list[str]) -> str:
    """Get persistent level id, so that we can call BP function defined in it"""
    return PERSISTENT_LEVEL


@command("vget /persistent_level/level_script_actor/id", access=READ)
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
