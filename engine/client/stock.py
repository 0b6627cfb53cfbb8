"""Stock-UnrealCV fallbacks for :class:`engine.client.RenderClient` (a real UE5 server).

Each function takes the client (its ``text``/``binary`` requests, ``object_color``, ``spawned``
and ``ue_classes``) as its first argument; this module imports nothing of the client's but its
decoders (engine/client/codec.py), so the client imports it and not the other way round.

Used only when the server lacks our ``/sceneforge/`` extensions:

* spawn: ``vset /objects/spawn [class] [name]`` then location/rotation/scale, one actor at a time
  (``class`` = ``client.ue_classes[asset_id]`` or the asset id itself: it must be a UE
  class/blueprint the level can spawn; tints are not applied);
* render: one ``vget /camera/[id]/<kind> <format>`` per kind, in the format of the kind's
  ``ue_format`` in the render-kind table (engine/render_kinds.py); a kind without one
  (``instance_id``) is refused;
* visibility: ``visible`` from the object mask by matching each actor's ``vget
  /object/[name]/color`` (±3 per channel: UE's mask may be gamma-encoded); ``unoccluded`` by
  hiding the *other actors this client spawned* and rendering the mask again, so level geometry
  (walls, terrain) still occludes — slower (one extra mask per actor) and an upper bound on the
  true visible fraction.
"""

from __future__ import annotations

import logging

import numpy as np

from sceneforge.core.errors import CommandError
from sceneforge.core.types import PixelCount
from sceneforge.core.visibility import visibility_failure
from sceneforge.engine import render_kinds
from sceneforge.engine.client.codec import decode_image
from sceneforge.engine.world import Actor

log = logging.getLogger(__name__)

COLOR_TOLERANCE = 3


def spawn_stock(client, actors: list[Actor]) -> None:
    for a in actors:
        client.text(f"vset /objects/spawn {client.ue_classes.get(a.asset_id, a.asset_id)} {a.name}")
        t = a.transform
        for key, value in (("location", t.location), ("rotation", t.rotation.as_tuple()), ("scale", t.scale)):
            client.text(f"vset /object/{a.name}/{key} " + " ".join(f"{v:.6f}" for v in value))
        if a.tint is not None:
            log.warning("tint of %s ignored: stock UnrealCV cannot recolour materials", a.name)


def render_stock(client, cam_id: int, kinds: tuple[str, ...]) -> dict[str, np.ndarray]:
    out = {}
    for kind in kinds:
        row = render_kinds.TABLE.get(kind)
        if row is None or row.ue_format is None:
            raise CommandError(f"render: {kind!r} is not available from a stock UnrealCV server")
        arr = decode_image(client.binary(f"vget /camera/{cam_id}/{kind} {row.ue_format}"), kind)
        out[kind] = arr[..., 0] if row.channels == 0 and arr.ndim == 3 else arr
    return out


def color_pixels(mask: np.ndarray, color: tuple[int, int, int]) -> np.ndarray:
    """Boolean (H, W): pixels whose mask colour is within the tolerance of ``color``."""
    diff = np.abs(mask[..., :3].astype(np.int16) - np.asarray(color, np.int16))
    return (diff <= COLOR_TOLERANCE).all(axis=-1)


def _bbox(hits: np.ndarray) -> tuple[int, int, int, int] | None:
    ys, xs = np.nonzero(hits)
    if len(xs) == 0:
        return None
    return int(xs.min()), int(ys.min()), int(xs.max()), int(ys.max())


def visibility_stock(client, cam_id: int, names: list[str]) -> dict[str, PixelCount]:
    colors = {n: client.object_color(n) for n in names}
    full = render_stock(client, cam_id, ("object_mask",))["object_mask"]
    others = [n for n in client.spawned if n not in names] + list(names)
    out = {}
    for name in names:
        hidden = [o for o in others if o != name]
        for o in hidden:
            client.text(f"vset /object/{o}/hide")
        try:
            alone = render_stock(client, cam_id, ("object_mask",))["object_mask"]
        finally:
            for o in hidden:
                client.text(f"vset /object/{o}/show")
        hits = color_pixels(full, colors[name])
        out[name] = PixelCount(int(hits.sum()), int(color_pixels(alone, colors[name]).sum()), _bbox(hits))
    return out


def render_if_visible_stock(client, cam_id: int, what: tuple) -> tuple:
    """``render_if_visible`` on a stock server: the counts, then the images when they pass
    (``what`` = (names, kinds, min_visible_ratio, min_bbox_px))."""
    names, kinds, ratio, px = what
    counts = visibility_stock(client, cam_id, names)
    passed = visibility_failure(counts, names, ratio, px) is None
    return counts, (render_stock(client, cam_id, kinds) if passed else None)
