"""Stock UnrealCV commands (names, units and reply formats as the UE plugin).

Units: cm, Z up, left-handed X forward / Y right; rotations "pitch yaw roll" in degrees; a
camera's fov is horizontal, degrees. ``vset`` commands reply ``ok``.
"""

from __future__ import annotations

import re
from dataclasses import replace

from sceneforge.core.errors import CommandError
from sceneforge.engine import limits
from sceneforge.engine.server.commands.table import READ, RENDER, command, fmt_vec, help_line, parse_floats, parse_int, templates
from sceneforge.engine.server.state import ServerState
from sceneforge.engine.world import Actor, Rotator, Transform

# What `vget /unrealcv/version` says: the plugin generation whose commands we speak. Clients parse
# it strictly (UnrealCV's own test suite does `[int(v) for v in res.lstrip('v').split('.')]`, the
# official client needs >= 1.1.0 to use `vget /unrealcv/commands`), so nothing else goes in it;
# "sceneforge X.Y.Z" is in `vget /unrealcv/status` and `vget /sceneforge/info`.
UNREALCV_COMPAT = "v1.1.0"
_NAME_RE = re.compile(r"^[A-Za-z0-9_.\-]{1,128}$")
_SETRES_RE = re.compile(r"^(\d{1,5})x(\d{1,5})[wf]?$")


def server_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("sceneforge")
    except PackageNotFoundError:
        return "0.0.0+local"


# --- server ----------------------------------------------------------------------------------
@command("vget /unrealcv/status", access=READ)
def status(state: ServerState, args: list[str]) -> str:
    cam = state.scene.cameras.get(0)
    w, h, fov = (cam.width, cam.height, cam.fov_deg) if cam else (640, 480, 90.0)
    return "\n".join(
        [
            "Is Listening",
            "Client Connected",
            str(state.port),
            "Configuration",
            "Config file: (sceneforge embedded server)",
            f"Port: {state.port}",
            f"Width: {w}",
            f"Height: {h}",
            f"FOV: {fov:.6f}",
            "EnableInput: false",
            "EnableRightEye: false",
            f"Server: sceneforge {server_version()}",
        ]
    )


@command("vget /unrealcv/version", access=READ)
def version_cmd(state: ServerState, args: list[str]) -> str:
    return UNREALCV_COMPAT


@command("vget /unrealcv/echo [message]", access=READ)
def echo(state: ServerState, args: list[str]) -> str:
    """The plugin's debug echo: the first argument back."""
    return args[0]


@command("vget /unrealcv/help", access=READ)
def help_cmd(state: ServerState, args: list[str]) -> str:
    """As the plugin: each template on one line, followed by its help line."""
    return "".join(f"{t}\n{help_line(t)}\n" for t in templates())


@command("vget /scene/name", access=READ)
def scene_name(state: ServerState, args: list[str]) -> str:
    """UE replies with the project name."""
    return "sceneforge"


@command("vget /level/name", access=READ)
def level_name(state: ServerState, args: list[str]) -> str:
    """The level opened with `vset /action/game/level`, else the environment, else `default`."""
    return state.unrealcv.level or state.scene.env or "default"


@command("vget /unrealcv/commands", access=READ)
def commands_cmd(state: ServerState, args: list[str]) -> str:
    return "\n".join(templates())


# --- objects ---------------------------------------------------------------------------------
@command("vget /objects", access=READ)
def objects(state: ServerState, args: list[str]) -> str:
    return " ".join(state.scene.actors)


def check_name(name: str) -> str:
    if not _NAME_RE.match(name):
        raise CommandError(f"object name {name[:40]!r}: use 1-128 letters, digits, '_', '-', '.'")
    return name


def new_actor(state: ServerState, asset: str, name: str | None, transform: Transform) -> Actor:
    """Build (not add) an actor with the next instance colour; name defaults to asset_N."""
    asset_id = state.catalog.resolve(asset)
    if len(state.scene.actors) >= limits.MAX_ACTORS:
        raise CommandError(f"spawn: the scene already holds {limits.MAX_ACTORS} objects (the limit)")
    if name is None:
        n = state.spawned
        while f"{asset_id}_{n}" in state.scene.actors:
            n += 1
        name = f"{asset_id}_{n}"
    if check_name(name) in state.scene.actors:
        raise CommandError(f"object {name!r} already exists")
    return Actor(name=name, asset_id=asset_id, transform=transform, color=state.next_color())


@command("vset /objects/spawn [class]", "vset /objects/spawn [class] [name]", "vset /objects/spawn [class] [name] [x] [y] [z]")
def spawn(state: ServerState, args: list[str]) -> str:
    location = parse_floats(args[2:], "spawn location") if len(args) == 5 else (0.0, 0.0, 0.0)
    actor = new_actor(state, args[0], args[1] if len(args) > 1 else None, Transform(location))
    state.scene.add(actor)
    return actor.name


@command("vset /object/[name]/destroy")
def destroy(state: ServerState, args: list[str], name: str) -> str:
    state.actor(name)
    del state.scene.actors[name]
    return "ok"


@command("vget /object/[name]/location", access=READ)
def get_location(state: ServerState, args: list[str], name: str) -> str:
    return fmt_vec(state.actor(name).transform.location)


@command("vget /object/[name]/rotation", access=READ)
def get_rotation(state: ServerState, args: list[str], name: str) -> str:
    return fmt_vec(state.actor(name).transform.rotation.as_tuple())


@command("vget /object/[name]/scale", access=READ)
def get_scale(state: ServerState, args: list[str], name: str) -> str:
    return fmt_vec(state.actor(name).transform.scale)


def _set_transform(state: ServerState, name: str, **changes) -> str:
    actor = state.actor(name)
    state.scene.replace_actor(name, transform=replace(actor.transform, **changes))
    return "ok"


@command("vset /object/[name]/location [x] [y] [z]")
def set_location(state: ServerState, args: list[str], name: str) -> str:
    return _set_transform(state, name, location=parse_floats(args, "location"))


@command("vset /object/[name]/rotation [pitch] [yaw] [roll]")
def set_rotation(state: ServerState, args: list[str], name: str) -> str:
    return _set_transform(state, name, rotation=Rotator(*parse_floats(args, "rotation")))


@command("vset /object/[name]/scale [x] [y] [z]")
def set_scale(state: ServerState, args: list[str], name: str) -> str:
    return _set_transform(state, name, scale=parse_floats(args, "scale"))


@command("vget /object/[name]/bounds", access=RENDER)
def get_bounds(state: ServerState, args: list[str], name: str) -> str:
    """World-space axis-aligned box of the mesh: "min_x min_y min_z max_x max_y max_z" (cm)."""
    actor = state.actor(name)
    world = actor.transform.apply(state.catalog.mesh(actor.asset_id).vertices)
    return fmt_vec(list(world.min(axis=0)) + list(world.max(axis=0)))


@command("vget /object/[name]/uclass_name", access=READ)
def get_uclass(state: ServerState, args: list[str], name: str) -> str:
    """UE reports the actor's class; ours is the asset id it was spawned from."""
    return state.actor(name).asset_id


@command("vget /object/[name]/color", access=READ)
def get_color(state: ServerState, args: list[str], name: str) -> str:
    """An empty name (``vget /object//color``, what a client asks after splitting the empty
    ``vget /objects`` of an empty scene on ' ') is the background: black in ``object_mask``."""
    r, g, b = state.actor(name).color if name else (0, 0, 0)
    return f"(R={r},G={g},B={b},A=255)"


@command("vset /object/[name]/color [r] [g] [b]")
def set_color(state: ServerState, args: list[str], name: str) -> str:
    color = tuple(parse_int(a, "color") for a in args)
    if color == (0, 0, 0):
        raise CommandError("color (0, 0, 0) is reserved for the background")
    state.actor(name)
    state.scene.replace_actor(name, color=color)
    return "ok"


@command("vset /object/[name]/hide")
def hide(state: ServerState, args: list[str], name: str) -> str:
    state.actor(name)
    state.scene.replace_actor(name, hidden=True)
    return "ok"


@command("vset /object/[name]/show")
def show(state: ServerState, args: list[str], name: str) -> str:
    state.actor(name)
    state.scene.replace_actor(name, hidden=False)
    return "ok"


# --- cameras ---------------------------------------------------------------------------------
@command("vget /cameras", access=READ)
def cameras(state: ServerState, args: list[str]) -> str:
    return " ".join(str(i) for i in sorted(state.scene.cameras))


def _cam_id(text: str) -> int:
    return parse_int(text, "camera id")


@command("vget /camera/[id]/location", access=READ)
def cam_location(state: ServerState, args: list[str], id: str) -> str:
    return fmt_vec(state.camera(_cam_id(id)).location)


@command("vget /camera/[id]/rotation", access=READ)
def cam_rotation(state: ServerState, args: list[str], id: str) -> str:
    return fmt_vec(state.camera(_cam_id(id)).rotation.as_tuple())


@command("vget /camera/[id]/fov", access=READ)
def cam_fov(state: ServerState, args: list[str], id: str) -> str:
    return f"{state.camera(_cam_id(id)).fov_deg:.3f}"


@command("vget /camera/[id]/size", access=READ)
def cam_size(state: ServerState, args: list[str], id: str) -> str:
    cam = state.camera(_cam_id(id))
    return f"{cam.width} {cam.height}"


def _update_camera(state: ServerState, id: str, **changes) -> str:
    cam_id = _cam_id(id)
    state.scene.cameras[cam_id] = replace(state.camera_for_update(cam_id), **changes)
    return "ok"


@command("vget /camera/[id]/pose", access=READ)
def cam_pose(state: ServerState, args: list[str], id: str) -> str:
    cam = state.camera(_cam_id(id))
    return fmt_vec(cam.location + cam.rotation.as_tuple())


@command("vset /camera/[id]/pose [x] [y] [z] [pitch] [yaw] [roll]")
def set_cam_pose(state: ServerState, args: list[str], id: str) -> str:
    v = parse_floats(args, "camera pose")
    return _update_camera(state, id, location=v[:3], rotation=Rotator(*v[3:]))


@command("vset /cameras/spawn")
def spawn_camera(state: ServerState, args: list[str]) -> str:
    """A new camera with camera 0's optics at the origin; replies with its id."""
    new_id = len(state.scene.cameras)
    state.scene.cameras[new_id] = state.camera_for_update(new_id)
    return str(new_id)


@command("vset /camera/[id]/location [x] [y] [z]")
def set_cam_location(state: ServerState, args: list[str], id: str) -> str:
    return _update_camera(state, id, location=parse_floats(args, "camera location"))


@command("vset /camera/[id]/rotation [pitch] [yaw] [roll]")
def set_cam_rotation(state: ServerState, args: list[str], id: str) -> str:
    return _update_camera(state, id, rotation=Rotator(*parse_floats(args, "camera rotation")))


@command("vset /camera/[id]/fov [fov]")
def set_cam_fov(state: ServerState, args: list[str], id: str) -> str:
    return _update_camera(state, id, fov_deg=parse_floats(args, "fov")[0])


@command("vset /camera/[id]/size [width] [height]")
def set_cam_size(state: ServerState, args: list[str], id: str) -> str:
    w, h = (parse_int(a, "camera size") for a in args)
    return _update_camera(state, id, width=w, height=h)


@command("vrun r.setres [resolution]")
def setres_r(state: ServerState, args: list[str]) -> str:
    return setres(state, args)


@command("vrun setres [resolution]")
def setres(state: ServerState, args: list[str]) -> str:
    """UE's ``r.setres 640x480w``: resizes every camera."""
    m = _SETRES_RE.match(args[0])
    if not m:
        raise CommandError(f"setres: expected WxH (e.g. 640x480w), got {args[0][:40]!r}")
    w, h = int(m.group(1)), int(m.group(2))
    new = {i: replace(c, width=w, height=h) for i, c in state.scene.cameras.items()}
    state.scene.cameras.update(new)
    return "ok"
