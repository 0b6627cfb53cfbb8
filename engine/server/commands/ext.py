"""``/sceneforge/...`` extensions: batched edits and the queries a dataset generator needs.

They live under one prefix so a client can tell our server from a real UE5+UnrealCV one (where
it falls back to stock commands). JSON arguments are one token-free blob after the path; the
client sends compact JSON (spaces inside strings escaped as ``\\u0020``) so the official client's
capability check matches the ``[json]`` template. Batched edits are all-or-nothing: everything is
validated before the scene changes.
"""

from __future__ import annotations

import json
from dataclasses import replace

from sceneforge.core.errors import CommandError, SceneforgeError
from sceneforge.core.visibility import check_gate, visibility_failure
from sceneforge.engine import limits, render_kinds
from sceneforge.engine.protocol import pack_arrays
from sceneforge.engine.server.commands.table import READ, RENDER, command, parse_int
from sceneforge.engine.server.commands.stock import new_actor, server_version
from sceneforge.engine.server.derived import render_served
from sceneforge.engine.server.state import ServerState
from sceneforge.engine.world import Rotator, Transform
from sceneforge.engine.world_dict import apply_world


def _json(text: str, what: str):
    try:
        return json.loads(text)
    except (ValueError, RecursionError) as e:
        raise CommandError(f"{what}: invalid JSON ({e})") from None


def _as_dict(value, what: str) -> dict:
    if not isinstance(value, dict):
        raise CommandError(f"{what}: expected a JSON object, got {type(value).__name__}")
    return value


@command("vset /sceneforge/world [json]", raw=True)
def set_world(state: ServerState, args: list[str]) -> str:
    """Replace env and every world section (sun, sky, ground, fog, look); sections not given get
    their defaults (deterministic). Validation lives with the types (``engine.world_dict.world_from_dict``)."""
    data = _as_dict(_json(args[0], "world"), "world")
    try:  # ids the catalogue does not know are refused before anything is loaded or cached
        apply_world(state.scene, data, check=lambda w: state.catalog.check_world_ids(w["sky"].hdri, w["ground"].surface))
    except SceneforgeError as e:
        raise CommandError(str(e)) from None
    return "ok"


@command("vset /sceneforge/reset")
def reset(state: ServerState, args: list[str]) -> str:
    state.reset()
    return "ok"


def _vec(item: dict, key: str, default, where: str) -> tuple[float, ...]:
    value = item.get(key, default)
    if not (isinstance(value, (list, tuple)) and len(value) == 3):
        raise CommandError(f"{where}.{key}: expected 3 numbers, got {value!r}")
    try:
        return tuple(limits.finite_float(f"{where}.{key}", v) for v in value)
    except SceneforgeError as e:
        raise CommandError(str(e)) from None


def _transform(item: dict, where: str, base: Transform | None = None) -> Transform:
    base = base or Transform()
    try:
        return Transform(
            _vec(item, "location", base.location, where),
            Rotator(*_vec(item, "rotation", base.rotation.as_tuple(), where)),
            _vec(item, "scale", base.scale, where),
        )
    except SceneforgeError as e:
        raise CommandError(f"{where}: {e}") from None


_SPAWN_KEYS = {"name", "asset", "location", "rotation", "scale", "tint"}


def _spawn_actor(state: ServerState, item, i: int):
    where = f"spawn[{i}]"
    item = _as_dict(item, where)
    unknown = sorted(set(item) - _SPAWN_KEYS)
    if unknown or "asset" not in item or "name" not in item:
        raise CommandError(f"{where}: needs 'name' and 'asset'; unknown field(s) {unknown}")
    if not isinstance(item["asset"], str) or not isinstance(item["name"], str):
        raise CommandError(f"{where}: 'name' and 'asset' must be strings")
    actor = new_actor(state, item["asset"], item["name"], _transform(item, where))
    tint = item.get("tint")
    if tint is not None:
        if not (isinstance(tint, list) and len(tint) == 3 and all(isinstance(v, int) and 0 <= v <= 255 for v in tint)):
            raise CommandError(f"{where}.tint: expected [r, g, b] ints in 0..255 or null, got {tint!r}")
        actor = replace(actor, tint=tuple(tint))
    return actor


@command("vset /sceneforge/spawn [json]", raw=True)
def spawn_batch(state: ServerState, args: list[str]) -> str:
    items = _json(args[0], "spawn")
    if not isinstance(items, list):
        raise CommandError("spawn: expected a JSON list of objects")
    if len(items) > limits.MAX_SPAWN_BATCH:
        raise CommandError(f"spawn: {len(items)} objects in one batch; at most {limits.MAX_SPAWN_BATCH} (send several batches)")
    if len(state.scene.actors) + len(items) > limits.MAX_ACTORS:
        raise CommandError(
            f"spawn: the scene would hold {len(state.scene.actors) + len(items)} objects; at most {limits.MAX_ACTORS}"
        )
    spawned_before, actors, names = state.spawned, [], set()
    try:
        for i, item in enumerate(items):
            actor = _spawn_actor(state, item, i)
            if actor.name in names:  # a set: the check stays linear in the batch size
                raise CommandError(f"spawn[{i}]: duplicate name {actor.name!r} in this batch")
            names.add(actor.name)
            actors.append(actor)
    except SceneforgeError:
        state.spawned = spawned_before  # all-or-nothing, colours included
        raise
    for actor in actors:
        state.scene.add(actor)
    return "ok"


@command("vset /sceneforge/poses [json]", raw=True)
def set_poses(state: ServerState, args: list[str]) -> str:
    data = _as_dict(_json(args[0], "poses"), "poses")
    updates = {}
    for name, pose in data.items():
        pose = _as_dict(pose, f"poses.{name}")
        unknown = sorted(set(pose) - {"location", "rotation", "scale"})
        if unknown:
            raise CommandError(f"poses.{name}: unknown field(s) {unknown}")
        updates[name] = _transform(pose, f"poses.{name}", state.actor(name).transform)
    for name, transform in updates.items():
        state.scene.replace_actor(name, transform=transform)
    return "ok"


_CAMERA_KEYS = {"location", "rotation", "fov", "size"}


def _apply_camera(state: ServerState, cam_id: int, text: str) -> None:
    """Set camera ``cam_id`` from ``{"location", "rotation", "fov", "size": [w, h]}`` (any subset)."""
    data = _as_dict(_json(text, "camera"), "camera")
    unknown = sorted(set(data) - _CAMERA_KEYS)
    if unknown:
        raise CommandError(f"camera: unknown field(s) {unknown} (known: {sorted(_CAMERA_KEYS)})")
    cam = state.camera_for_update(cam_id)
    t = _transform(data, "camera", Transform(cam.location, cam.rotation))
    size = data.get("size", [cam.width, cam.height])
    if not (isinstance(size, list) and len(size) == 2 and all(isinstance(v, int) for v in size)):
        raise CommandError(f"camera.size: expected [width, height] integers, got {size!r}")
    fov = data.get("fov", cam.fov_deg)
    try:
        fov = limits.finite_float("camera.fov", fov)
        state.scene.cameras[cam_id] = replace(
            cam, location=t.location, rotation=t.rotation, fov_deg=fov, width=size[0], height=size[1]
        )
    except SceneforgeError as e:
        raise CommandError(f"camera: {e}") from None


@command("vset /sceneforge/camera [id] [json]", raw=True)
def set_camera(state: ServerState, args: list[str]) -> str:
    """Pose, fov and size in one round trip."""
    _apply_camera(state, parse_int(args[0], "camera id"), args[1])
    return "ok"


def _names(state: ServerState, text: str | None) -> list[str]:
    if text is None:
        return list(state.scene.actors)
    names = [n for n in text.split(",") if n]
    for n in names:
        state.actor(n)
    return names


def _counts(state: ServerState, cam_id: int, names: list[str]) -> dict:
    cam = state.camera(cam_id)
    state.check_budget(cam, 1, "visibility")
    return state.with_backend(lambda b: b.pixel_counts(state.scene, cam, names))


def _counts_json(counts: dict) -> dict:
    return {
        n: {
            "visible": int(c.visible),
            "unoccluded": int(c.unoccluded),
            "bbox": list(map(int, c.bbox)) if c.bbox is not None else None,
        }
        for n, c in counts.items()
    }


@command(
    "vget /sceneforge/visibility [cam]",
    "vget /sceneforge/visibility [cam] [names]",
    "vget /sceneforge/visibility [cam] [names] [camera]",
    access=RENDER,
)
def visibility(state: ServerState, args: list[str]) -> str:
    """Optional third argument: camera JSON applied first (saves a round trip per frame)."""
    cam_id = parse_int(args[0], "camera id")
    if len(args) > 2:
        _apply_camera(state, cam_id, args[2])
    names = _names(state, args[1] if len(args) > 1 else None)
    return json.dumps(_counts_json(_counts(state, cam_id, names)), separators=(",", ":"))


def _kinds(text: str, what: str) -> tuple[str, ...]:
    kinds = tuple(k for k in text.split(",") if k)
    known = render_kinds.served()  # the table's rows: rendered, and derived from them (engine/server/derived.py)
    bad = [k for k in kinds if k not in known]
    if bad or not kinds:
        raise CommandError(f"{what}: unknown kind(s) {bad} (known: {', '.join(known)})")
    return kinds


GATE_FIELDS = {"min_visible_ratio", "min_bbox_px", "unless_passed"}


@command(
    "vget /sceneforge/render_if_visible [cam] [names] [kinds] [gate]",
    "vget /sceneforge/render_if_visible [cam] [names] [kinds] [gate] [camera]",
    access=RENDER,
)
def render_if_visible(state: ServerState, args: list[str]) -> bytes:
    """Pixel counts of ``names``; when they pass the visibility rule (core/visibility.py) with
    ``gate`` = ``{"min_visible_ratio", "min_bbox_px"}``, the images of ``kinds`` too, in one round
    trip (a sampler's accepted view is rendered without waiting for the client to ask). Reply: an
    array bundle whose header's ``meta`` holds ``visibility`` (as ``/sceneforge/visibility``) and
    ``failure`` (the rule broken, or null: then the arrays are the images). ``gate.unless_passed``:
    a token naming the sample; when an earlier request with that token passed, this one does
    nothing and answers ``meta = {"skipped": true}`` (a sampler queues its next candidate before
    reading the previous one's reply, and that candidate costs nothing once one has passed)."""
    cam_id = parse_int(args[0], "camera id")
    kinds = _kinds(args[2], "render_if_visible")
    gate = _as_dict(_json(args[3], "gate"), "gate")
    unknown = sorted(set(gate) - GATE_FIELDS)
    if unknown:
        raise CommandError(f"gate: unknown field(s) {unknown} (known: {', '.join(sorted(GATE_FIELDS))})")
    try:
        ratio, px = check_gate(gate.get("min_visible_ratio", 0.0), gate.get("min_bbox_px", 0.0))
    except ValueError as e:
        raise CommandError(f"gate.{e}") from None
    token = gate.get("unless_passed")
    if token is not None and not (isinstance(token, str) and 0 < len(token) <= limits.MAX_TOKEN_LEN):
        raise CommandError(
            f"gate.unless_passed: expected a string of 1-{limits.MAX_TOKEN_LEN} characters, got {str(token)[:80]!r}"
        )
    names = _names(state, args[1])
    if not names:
        raise CommandError("render_if_visible: name at least one actor")
    if token is not None and token in state.passed:  # an earlier candidate of the same sample passed
        return pack_arrays({}, meta={"skipped": True})
    if len(args) > 4:
        _apply_camera(state, cam_id, args[4])
    state.check_budget(state.camera(cam_id), len(kinds) + 1, "render_if_visible")  # the count + the kinds
    counts = _counts(state, cam_id, names)
    failure = visibility_failure(counts, names, ratio, px)
    arrays = render_served(state, cam_id, kinds) if failure is None else {}
    if failure is None and token is not None:
        state.mark_passed(token)
    return pack_arrays(
        {k: arrays[k] for k in kinds} if arrays else {}, meta={"visibility": _counts_json(counts), "failure": failure}
    )


@command("vget /sceneforge/colors", "vget /sceneforge/colors [names]", access=READ)
def colors(state: ServerState, args: list[str]) -> str:
    """Instance colours of the named actors (every actor without names) as JSON
    ``{name: [r, g, b]}``: one round trip instead of one ``vget /object/[name]/color`` each."""
    names = _names(state, args[0] if args else None)
    return json.dumps({n: list(map(int, state.actor(n).color)) for n in names}, separators=(",", ":"))


@command("vget /sceneforge/render [cam] [kinds]", "vget /sceneforge/render [cam] [kinds] [camera]", access=RENDER)
def render_batch(state: ServerState, args: list[str]) -> bytes:
    """Optional third argument: camera JSON applied first (saves a round trip per frame)."""
    kinds = _kinds(args[1], "render")
    cam_id = parse_int(args[0], "camera id")
    if len(args) > 2:
        _apply_camera(state, cam_id, args[2])
    arrays = render_served(state, cam_id, kinds)  # derived kinds too, from one render of their sources
    return pack_arrays({k: arrays[k] for k in kinds})


@command("vget /sceneforge/assets", access=RENDER)
def assets(state: ServerState, args: list[str]) -> str:
    return json.dumps(state.catalog.listing(), separators=(",", ":"))


@command("vget /sceneforge/info", access=RENDER)
def info(state: ServerState, args: list[str]) -> str:
    out = {
        "version": server_version(),
        "actors": len(state.scene.actors),
        "env": state.scene.env,
        "packs": [],
        "licenses": None,
        "renderer": "gl",
        "busy_s": round(state.busy_s, 6),
        **state.serving,
    }
    try:  # with_backend: a 65,536-actor count or the first context does not hold reads up
        out.update(state.with_backend(lambda b: {"backend": b.name, "triangles": int(b.triangle_count(state.scene)), **b.info()}))
    except SceneforgeError as e:
        out.update({"backend": None, "error": str(e)})
    return json.dumps(out, separators=(",", ":"))
