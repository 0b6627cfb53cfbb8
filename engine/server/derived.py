"""Derived render kinds: arrays the server computes from rendered ones (engine/render_kinds.py rows
with ``derived_from``), served by the camera commands and by ``/sceneforge/render`` alike.

* ``optical_flow``: pixels moved since this camera's previous image request
  (:mod:`engine.server.optical_flow`, from ``plane_depth`` + ``instance_id``);
* ``class_mask``: each pixel in its actor's class colour (``engine.world.class_color`` of the
  catalog's class of the actor's asset), from ``instance_id``: class segmentation without a
  class pass in any renderer (every renderer that draws ``instance_id`` serves it).

:func:`render_served` renders a request's rendered kinds and every derived kind's sources in one
pass (one ``state.render`` call), then derives. A plugin's derived kind (a
:class:`~engine.render_kinds.DerivedKind` behind a ``sceneforge.render_kinds`` entry point)
brings its own function; :data:`engine.render_kinds.DERIVE` holds them all.
"""

from __future__ import annotations

import numpy as np

from sceneforge.core.errors import CommandError
from sceneforge.engine import render_kinds
from sceneforge.engine.server.optical_flow import optical_flow, snapshot
from sceneforge.engine.server.state import ServerState
from sceneforge.engine.world import class_color


def _flow(state: ServerState, cam_id: int, camera, arrays: dict[str, np.ndarray]) -> np.ndarray:
    previous = state.unrealcv.previous_frame.get(cam_id)
    then = None
    if previous is not None and getattr(state.backend(), "skinned_then", None) is not None:
        # characters skinned on the GPU: each pixel's previous-pose point from the renderer
        then = state.with_backend(lambda b: b.skinned_then(state.scene, camera, previous.assets))
    return optical_flow(
        previous, state.scene, camera, arrays["plane_depth"], arrays["instance_id"], mesh_of=state.catalog.mesh, then_local=then
    )


def _class_mask(state: ServerState, cam_id: int, camera, arrays: dict[str, np.ndarray]) -> np.ndarray:
    """``instance_id`` (1 + the actor's index in ``scene.actors`` order, 0 = background) → the
    class colour of that actor's asset; background (0, 0, 0)."""
    ids = arrays["instance_id"]
    palette = np.zeros((len(state.scene.actors) + 1, 3), np.uint8)
    for k, actor in enumerate(state.scene.actors.values(), start=1):
        palette[k] = class_color(state.catalog.asset_class(actor.asset_id))
    return palette[np.clip(ids, 0, len(palette) - 1)]


render_kinds.DERIVE.update({"optical_flow": _flow, "class_mask": _class_mask})


def derive(state: ServerState, cam_id: int, kind: str, arrays: dict[str, np.ndarray]) -> np.ndarray:
    """The derived ``kind`` of camera ``cam_id`` from its sources' ``arrays``."""
    fn = render_kinds.DERIVE.get(kind)
    if fn is None:
        raise CommandError(f"render kind {kind!r} is derived but this server has no code for it")
    return fn(state, cam_id, state.camera(cam_id), arrays)


def render_served(state: ServerState, cam_id: int, kinds: tuple[str, ...]) -> dict[str, np.ndarray]:
    """``{kind: array}`` for every kind asked for, rendered or derived, from one render of the
    rendered kinds and the derived kinds' sources. A request with ``optical_flow`` records this
    frame as the camera's previous one (as the camera command does), so a sequence of batched
    requests gives frame-to-frame flow."""
    rows = [render_kinds.get(k) for k in kinds]
    sources = tuple(dict.fromkeys(s for r in rows for s in (r.derived_from or (r.name,))))
    arrays = state.render(cam_id, sources)
    out = {r.name: derive(state, cam_id, r.name, arrays) if r.derived_from else arrays[r.name] for r in rows}
    if "optical_flow" in out:
        state.unrealcv.previous_frame[cam_id] = snapshot(state.scene, state.camera(cam_id))
    return out
