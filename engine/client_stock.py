"""Stock-UnrealCV fallbacks for :class:`engine.client.RenderClient` (a real UE5 server).

Used only when the server lacks our ``/sceneforge/`` extensions:

* spawn: ``vset /objects/spawn [class] [name]`` then location/rotation/scale, one actor at a time
  (``class`` = ``client.ue_classes[asset_id]`` or the asset id itself: it must be a UE
  class/blueprint the level can spawn; tints are not applied);
* render: one ``vget /camera/[id]/<kind> png|npy`` per kind; ``instance_id`` is not available;
* visibility: ``visible`` from the object mask by matching each actor's ``vget
  /object/[name]/color`` (±3 per channel: UE's mask may be gamma-encoded); ``unoccluded`` by
  hiding the *other actors this client spawned* and rendering the mask again, so level geometry
  (walls, terrain) still occludes — slower (one extra mask per actor) and an upper bound on the
  true visible fraction.
"""
from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import numpy as np

from sceneforge.core.errors import CommandError
from sceneforge.core.types import PixelCount
from sceneforge.engine.world import Actor

if TYPE_CHECKING:
    from sceneforge.engine.client import RenderClient

log = logging.getLogger(__name__)

_FORMATS = {"lit": "png", "object_mask": "png", "normal": "png", "depth": "npy", "plane_depth": "npy"}
COLOR_TOLERANCE = 3


def spawn_stock(client: "RenderClient", actors: list[Actor]) -> None:
    for a in actors:
        client.text(f"vset /objects/spawn {client.ue_classes.get(a.asset_id, a.asset_id)} {a.name}")
        t = a.transform
        for key, value in (("location", t.location), ("rotation", t.rotation.as_tuple()), ("scale", t.scale)):
            client.text(f"vset /object/{a.name}/{key} " + " ".join(f"{v:.6f}" for v in value))
        if a.tint is not None:
            log.warning("tint of %s ignored: stock UnrealCV cannot recolour materials", a.name)


def render_stock(client: "RenderClient", cam_id: int, kinds: tuple[str, ...]) -> dict[str, np.ndarray]:
    from sceneforge.engine.client import decode_image

    out = {}
    for kind in kinds:
        if kind not in _FORMATS:
            raise CommandError(f"render: {kind!r} is not available from a stock UnrealCV server")
        arr = decode_image(client.binary(f"vget /camera/{cam_id}/{kind} {_FORMATS[kind]}"), kind)
        out[kind] = arr[..., 0] if kind in ("depth", "plane_depth") and arr.ndim == 3 else arr
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


def visibility_stock(client: "RenderClient", cam_id: int, names: list[str]) -> dict[str, PixelCount]:
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


def render_if_visible_stock(client: "RenderClient", cam_id: int, what: tuple) -> tuple:
    """``render_if_visible`` on a stock server: the counts, then the images when they pass
    (``what`` = (names, kinds, min_visible_ratio, min_bbox_px))."""
    from sceneforge.core.visibility import visibility_failure

    names, kinds, ratio, px = what
    counts = visibility_stock(client, cam_id, names)
    passed = visibility_failure(counts, names, ratio, px) is None
    return counts, (render_stock(client, cam_id, kinds) if passed else None)
