"""The complete scene record of a sample — enough to render it again — and re-rendering it.

A record holds the world dict the server was given (``vset /sceneforge/world``), every actor in
spawn order (name, asset, location, rotation, scale, tint, instance colour), the camera (pose,
FOV, size), the image encoding, and the metric scene graph. :func:`rerender` replays it on a
render server and returns the encoded image, which must equal the stored file byte for byte
(the server's images are a pure function of the scene).
"""

from __future__ import annotations

import json
from pathlib import Path

from sceneforge.core.errors import ConfigError
from sceneforge.core.paths import check_component, inside
from sceneforge.engine.world import Actor, Camera, Rotator, Transform
from sceneforge.engine import limits
from sceneforge.scenarios.output.writers import dumps, encode_image, nested_json

SCHEMA = "sceneforge.scene_record/1"


def scene_path(out: Path, env: str, i: int) -> Path:
    """Where scene ``i`` of ``env`` records itself in a VQA dataset."""
    return Path(out) / env / f"scene_{i:06d}.json"


def load_scene(out: Path, env: str, i: int) -> dict | None:
    """Scene ``i``'s record if it and every file it names are complete (else None: redo it)."""
    try:
        rec = json.loads(scene_path(out, env, i).read_text())
    except (OSError, ValueError):
        return None
    return rec if all((Path(out) / f).is_file() for f in rec.get("files", {}).values()) else None


def actor_entry(a: Actor, color) -> dict:
    t = a.transform
    return {
        "name": a.name,
        "asset": a.asset_id,
        "location": list(t.location),
        "rotation": list(t.rotation.as_tuple()),
        "scale": list(t.scale),
        "tint": list(a.tint) if a.tint else None,
        "color": list(color),
    }


def camera_entry(cam: Camera) -> dict:
    return {
        "location": list(cam.location),
        "rotation": list(cam.rotation.as_tuple()),
        "fov_deg": cam.fov_deg,
        "width": cam.width,
        "height": cam.height,
    }


def scene_record(
    env: str,
    index: int,
    seed: int,
    world: dict,
    actors,
    colors: dict,
    cam: Camera,
    files: dict,
    image_format: str,
    jpeg_quality: int,
    graph: dict,
) -> dict:
    return {
        "schema": SCHEMA,
        "scenario": "vqa",
        "env": env,
        "index": index,
        "seed": seed,
        "world": world,
        "actors": [actor_entry(a, colors[a.name]) for a in actors],
        "camera": camera_entry(cam),
        "image": {"format": image_format, "jpeg_quality": jpeg_quality},
        "files": files,
        "graph": graph,
    }


def read_record(path: Path) -> tuple[dict, Path]:
    """The record at ``path`` (``<dataset>/<env>/scene_NNNNNN.json``), checked, and its stored image.

    Why the checks: a record is a file anyone can hand over. ``files.image`` must name a file
    inside the dataset (the record's grandparent directory), never ``/etc/hostname``; every field
    the replay uses is checked first (:func:`check_record`), so a record without ``camera`` or with
    ``rotation: [1, 2]`` is one line naming the field, not a KeyError after a server start or a
    silently different scene."""
    path = Path(path)
    try:
        rec = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise ConfigError(f"{path}: not a scene record ({type(e).__name__}: {e})") from None
    check_record(rec, str(path))
    return rec, inside(path.parent.parent, rec["files"]["image"], f"{path}: files.image")


def check_record(rec, where: str) -> None:
    """ConfigError naming ``where``, the field and its value unless ``rec`` has everything
    :func:`rerender` reads, each of the right type and within the server's bounds."""
    rec = _field(rec, dict, where, "the record", "a JSON object (env, world, actors, camera, image, files)")
    try:
        check_component(rec.get("env"), "env")  # a name: never a path to a YAML file elsewhere
    except ConfigError as e:
        raise ConfigError(f"{where}: {e}") from None
    _field(rec.get("world"), dict, where, "world", "a JSON object")
    for k, a in enumerate(_field(rec.get("actors"), list, where, "actors", "a list")):
        _check_actor(a, where, f"actors[{k}]")
    cam = _field(rec.get("camera"), dict, where, "camera", "a JSON object (location, rotation, fov_deg, width, height)")
    _vector(cam.get("location"), where, "camera.location", "location")
    _vector(cam.get("rotation"), where, "camera.rotation", "rotation")
    _number(cam.get("fov_deg"), where, "camera.fov_deg", 1e-3, 179.999)
    for side in ("width", "height"):
        _number(cam.get(side), where, f"camera.{side}", 1, 8192, integer=True)
    image = _field(rec.get("image"), dict, where, "image", "a JSON object (format, jpeg_quality)")
    if image.get("format") not in ("jpg", "jpeg", "png"):
        raise ConfigError(f"{where}: image.format {image.get('format')!r}: expected 'jpg' or 'png'")
    _number(image.get("jpeg_quality", 95), where, "image.jpeg_quality", 1, 100, integer=True)
    files = _field(rec.get("files"), dict, where, "files", "a JSON object with 'image'")
    _field(files.get("image"), str, where, "files.image", "a path relative to the dataset")


def _check_actor(a, where: str, at: str) -> None:
    a = _field(a, dict, where, at, "a JSON object (name, asset, location, rotation, scale, color)")
    for key in ("name", "asset"):
        if not isinstance(a.get(key), str) or not a.get(key):
            raise ConfigError(f"{where}: {at}.{key} {a.get(key)!r}: expected a non-empty string")
    _vector(a.get("location"), where, f"{at}.location", "location")
    _vector(a.get("rotation"), where, f"{at}.rotation", "rotation")
    _vector(a.get("scale", [1, 1, 1]), where, f"{at}.scale", "scale")
    for key, low, high in (("tint", 0, 1e3), ("color", 0, 255)):
        if a.get(key) is not None or key == "color":
            for v in _vector(a.get(key), where, f"{at}.{key}"):
                _number(v, where, f"{at}.{key}", low, high, integer=key == "color")


def _field(value, kind: type, where: str, at: str, expected: str):
    if not isinstance(value, kind) or (kind is str and not value):
        shown = "missing" if value is None else f"{type(value).__name__} {str(value)[:60]}"
        raise ConfigError(f"{where}: {at} is {shown}; expected {expected}")
    return value


def _vector(value, where: str, at: str, bounds: str | None = None) -> list:
    """Three numbers; with ``bounds`` within the server's limits for a location/rotation/scale."""
    if (
        not isinstance(value, list)
        or len(value) != 3
        or not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in value)
    ):
        raise ConfigError(f"{where}: {at} {str(value)[:60]}: expected 3 numbers")
    check = {"location": limits.check_location, "rotation": limits.check_rotation, "scale": limits.check_scale}.get(bounds)
    if check is not None:
        try:
            check(at, tuple(value))
        except ConfigError as e:
            raise ConfigError(f"{where}: {e}") from None
    return value


def _number(value, where: str, at: str, low: float, high: float, *, integer: bool = False) -> None:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and low <= value <= high
    if not ok or (integer and value != int(value)):
        kind = "an integer" if integer else "a number"
        raise ConfigError(f"{where}: {at} {value!r}: expected {kind} in [{low:g}, {high:g}]")


def actors_from_record(rec: dict) -> list[Actor]:
    return [
        Actor(
            a["name"],
            a["asset"],
            Transform(tuple(a["location"]), Rotator(*a["rotation"]), tuple(a["scale"])),
            color=tuple(a["color"]),
            tint=tuple(a["tint"]) if a.get("tint") else None,
        )
        for a in rec["actors"]
    ]


def camera_from_record(rec: dict) -> Camera:
    c = rec["camera"]
    return Camera(tuple(c["location"]), Rotator(*c["rotation"]), c["fov_deg"], c["width"], c["height"])


def rerender(rec: dict, client) -> bytes:
    """Replay the record on a connected :class:`engine.client.RenderClient`; the encoded image."""
    client.set_world(rec["world"])
    client.reset()
    client.spawn(actors_from_record(rec))
    img = client.render(0, ("lit",), camera=camera_from_record(rec))["lit"]
    return encode_image(img, rec["image"]["format"], rec["image"]["jpeg_quality"])


# --- fast JSON of a record's relations -------------------------------------------------------------
_REL_TEMPLATES: dict[int, str] = {}


def _relation_template(level: int) -> str:
    """The text of one relation dict ``level`` containers deep, as ``writers.dumps`` writes it
    (sorted keys, 2-space indent), with a ``{}`` slot per value in sorted-key order."""
    if level not in _REL_TEMPLATES:
        p1, p2, p0 = "\n" + "  " * (level + 1), "\n" + "  " * (level + 2), "\n" + "  " * level

        def block(keys):
            return "{" + p2 + ("," + p2).join(f'"{k}": {{}}' for k in keys) + p1 + "}"

        cam = block(("depth", "farther", "horizontal", "label", "right", "up", "vertical"))
        obj = block(("azimuth_deg", "forward", "label", "right", "up"))
        size = block(("height", "longest", "volume"))
        items = ['"a": {}', '"b": {}', '"camera": ' + cam, '"distance_cm": {}', '"horizontal_cm": {}']
        items += ['"object": ' + obj, '"size_ratio": ' + size]
        _REL_TEMPLATES[level] = (
            ("{" + p1 + ("," + p1).join(items) + p0 + "}")
            .replace("{}", "\x00")
            .replace("{", "{{")
            .replace("}", "}}")
            .replace("\x00", "{}")
        )
    return _REL_TEMPLATES[level]


_REL_KEYS = ("a", "b", "camera", "distance_cm", "horizontal_cm", "object", "size_ratio")


def relations_json(rels: list, level: int) -> str:
    """``writers.nested_json(rels, level)`` for a list of ``scene_graph.relations`` dicts, ~15x
    faster: a city record holds ~5,000 pairs of 22 values, and encoding them value by value was
    half of a VQA image's time. Falls back to the general encoder for anything not of that exact
    shape (so the bytes are always the encoder's: tests/scenarios/test_vqa_scenario.py)."""
    import math
    from json.encoder import encode_basestring_ascii as s

    if not rels:
        return "[]"
    f = float.__repr__
    tpl = _relation_template(level + 1)
    pad = "\n" + "  " * (level + 1)
    out = []
    for r in rels:
        try:
            c, o, z = r["camera"], r["object"], r["size_ratio"]
            if tuple(sorted(r)) != _REL_KEYS or len(c) != 7 or len(o) != 5 or len(z) != 3:
                raise KeyError
            nums = (c["farther"], c["right"], c["up"], r["distance_cm"], r["horizontal_cm"])
            nums += (o["azimuth_deg"], o["forward"], o["right"], o["up"], z["height"], z["longest"], z["volume"])
            if not all(map(math.isfinite, nums)):
                raise TypeError  # NaN / inf: the encoder's error, not a silent 'nan'
            text = tpl.format(
                s(r["a"]), s(r["b"]),
                s(c["depth"]), f(c["farther"]), s(c["horizontal"]), s(c["label"]), f(c["right"]), f(c["up"]), s(c["vertical"]),
                f(r["distance_cm"]), f(r["horizontal_cm"]),
                f(o["azimuth_deg"]), f(o["forward"]), s(o["label"]), f(o["right"]), f(o["up"]),
                f(z["height"]), f(z["longest"]), f(z["volume"]),
            )  # fmt: skip
        except (KeyError, TypeError):  # another shape or type (an int, NaN...): the encoder's own text
            text = nested_json(r, level + 1)
        out.append(text)
    return "[" + pad + ("," + pad).join(out) + "\n" + "  " * level + "]"


def record_json(rec: dict) -> str:
    """``writers.dumps(rec)`` with the graph's relations encoded by :func:`relations_json`."""
    rels = rec["graph"].get("relations")
    if not rels:
        return dumps(rec)
    marker = "\x00sceneforge-relations\x00"
    text = dumps({**rec, "graph": {**rec["graph"], "relations": marker}})
    slot = '"\\u0000sceneforge-relations\\u0000"'
    if text.count(slot) != 1:
        return dumps(rec)
    return text.replace(slot, relations_json(rels, 2))
