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

from core.errors import ConfigError
from core.paths import inside
from engine.world import Actor, Camera, Rotator, Transform

SCHEMA = "sceneforge.scene_record/1"


def actor_entry(a: Actor, color) -> dict:
    t = a.transform
    return {"name": a.name, "asset": a.asset_id, "location": list(t.location), "rotation": list(t.rotation.as_tuple()),
            "scale": list(t.scale), "tint": list(a.tint) if a.tint else None, "color": list(color)}


def camera_entry(cam: Camera) -> dict:
    return {"location": list(cam.location), "rotation": list(cam.rotation.as_tuple()), "fov_deg": cam.fov_deg,
            "width": cam.width, "height": cam.height}


def scene_record(env: str, index: int, seed: int, world: dict, actors, colors: dict, cam: Camera, files: dict,
                 image_format: str, jpeg_quality: int, graph: dict) -> dict:
    return {"schema": SCHEMA, "scenario": "vqa", "env": env, "index": index, "seed": seed, "world": world,
            "actors": [actor_entry(a, colors[a.name]) for a in actors], "camera": camera_entry(cam),
            "image": {"format": image_format, "jpeg_quality": jpeg_quality}, "files": files, "graph": graph}


def read_record(path: Path) -> tuple[dict, Path]:
    """The record at ``path`` (``<dataset>/<env>/scene_NNNNNN.json``) and its stored image.

    Why the check: a record is a file anyone can hand over; ``files.image`` must name a file
    inside the dataset (the record's grandparent directory), never ``/etc/hostname``."""
    path = Path(path)
    try:
        rec = json.loads(path.read_text(encoding="utf-8"))
        image = rec["files"]["image"]
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise ConfigError(f"{path}: not a scene record ({type(e).__name__}: {e})") from None
    return rec, inside(path.parent.parent, image, f"{path}: files.image")


def actors_from_record(rec: dict) -> list[Actor]:
    return [Actor(a["name"], a["asset"], Transform(tuple(a["location"]), Rotator(*a["rotation"]), tuple(a["scale"])),
                  color=tuple(a["color"]), tint=tuple(a["tint"]) if a.get("tint") else None) for a in rec["actors"]]


def camera_from_record(rec: dict) -> Camera:
    c = rec["camera"]
    return Camera(tuple(c["location"]), Rotator(*c["rotation"]), c["fov_deg"], c["width"], c["height"])


def rerender(rec: dict, client) -> bytes:
    """Replay the record on a connected :class:`engine.client.RenderClient`; the encoded image."""
    from scenarios.writers import encode_image

    client.set_world(rec["world"])
    client.reset()
    client.spawn(actors_from_record(rec))
    img = client.render(0, ("lit",), camera=camera_from_record(rec))["lit"]
    return encode_image(img, rec["image"]["format"], rec["image"]["jpeg_quality"])
