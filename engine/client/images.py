"""Image requests of :class:`engine.client.RenderClient`: renders, pixel counts, and both in one.

Each has an ``_async`` form that sends the request now and returns a function that reads the
reply later (the server works meanwhile; the client's wire keeps replies read out of order for
their readers, engine/wire.py). On a stock UnrealCV server (UE5) they fall back to stock
commands (engine/client/stock.py), answered at once.
"""

from __future__ import annotations

import json
from typing import Callable, Iterable

import numpy as np

from sceneforge.core.errors import ProtocolError
from sceneforge.core.types import PixelCount
from sceneforge.core.visibility import check_gate
from sceneforge.engine.client.codec import camera_json, pixel_counts
from sceneforge.engine.client.stock import render_if_visible_stock, render_stock, visibility_stock
from sceneforge.engine.protocol import compact_json, unpack_arrays, unpack_bundle
from sceneforge.engine.world import Camera


class ImageRequests:
    """Mixin of ``RenderClient``: uses its ``send``, ``set_camera``, ``is_sceneforge`` and
    ``_stock_passed``."""

    def render(
        self, cam_id: int, kinds: Iterable[str] = ("lit", "object_mask", "depth"), camera: Camera | None = None
    ) -> dict[str, np.ndarray]:
        """Render ``kinds`` (see engine/server/backend.py for shapes) → dict of arrays.

        ``camera``: set camera ``cam_id`` first, in the same request on our server (one round
        trip per frame instead of two).
        """
        return self.render_async(cam_id, kinds, camera)()

    def render_async(
        self, cam_id: int, kinds: Iterable[str] = ("lit", "object_mask", "depth"), camera: Camera | None = None
    ) -> Callable[[], dict[str, np.ndarray]]:
        """:meth:`render`, split in two: the request is sent now, the returned function waits for
        the images. Work done in between overlaps the server's render; send nothing else on this
        client before calling it (on a stock server it renders synchronously)."""
        kinds = tuple(kinds)
        if not self.is_sceneforge:
            return self._answered_now(render_stock, cam_id, camera, kinds)
        extra = f" {camera_json(camera)}" if camera is not None else ""
        reply = self.send(f"vget /sceneforge/render {cam_id} {','.join(kinds)}{extra}")

        def images() -> dict[str, np.ndarray]:
            arrays = unpack_arrays(reply())
            missing = [k for k in kinds if k not in arrays]
            if missing:
                raise ProtocolError(f"render reply lacks {missing}")
            return {k: arrays[k] for k in kinds}

        return images

    def visibility(self, cam_id: int, names: list[str], camera: Camera | None = None) -> dict[str, PixelCount]:
        """Visible/unoccluded pixels and bbox per actor (one call on our server); ``camera`` as
        in :meth:`render`."""
        return self.visibility_async(cam_id, names, camera)()

    def visibility_async(
        self, cam_id: int, names: list[str], camera: Camera | None = None
    ) -> Callable[[], dict[str, PixelCount]]:
        """:meth:`visibility`, split in two as :meth:`render_async`: the request is sent now, the
        returned function waits for the counts (a sampler draws its next candidate meanwhile).
        Send nothing else on this client before calling it (a stock server answers at once)."""
        if not self.is_sceneforge:
            return self._answered_now(visibility_stock, cam_id, camera, names)
        extra = f" {camera_json(camera)}" if camera is not None else ""
        listed = ",".join(names) or ","  # a placeholder keeps the camera the third argument
        reply = self.send(f"vget /sceneforge/visibility {cam_id} {listed}{extra}")

        def counts() -> dict[str, PixelCount]:
            return pixel_counts(json.loads(reply().decode("utf-8", errors="replace")), "visibility")

        return counts

    def render_if_visible_async(
        self,
        cam_id: int,
        names: list[str],
        kinds: Iterable[str],
        *,
        min_visible_ratio: float,
        min_bbox_px: float,
        camera: Camera | None = None,
        unless_passed: str | None = None,
    ) -> Callable[[], "tuple[dict[str, PixelCount] | None, dict[str, np.ndarray] | None]"]:
        """Pixel counts of ``names`` and, when they pass the visibility rule (core/visibility.py),
        the images of ``kinds``: one request on our server, which renders an accepted view at
        once instead of waiting for a second request. The returned function waits for
        ``(counts, images or None)``. On a stock server: a visibility query, then a render when
        the counts pass. ``unless_passed``: a token naming the sample; when an earlier request
        with it passed, this one is skipped and gives ``(None, None)`` (a sampler queues its next
        candidate before reading the previous one's reply)."""
        kinds = tuple(kinds)
        ratio, px = check_gate(min_visible_ratio, min_bbox_px)
        if not self.is_sceneforge:
            if unless_passed is not None and unless_passed in self._stock_passed:
                result = lambda: (None, None)  # noqa: E731
            else:
                result = self._answered_now(render_if_visible_stock, cam_id, camera, (list(names), kinds, ratio, px))
                if unless_passed is not None and result()[1] is not None:
                    self._stock_passed.add(unless_passed)
            result.discard = lambda: None  # type: ignore[attr-defined]
            return result
        extra = f" {camera_json(camera)}" if camera is not None else ""
        gate = compact_json(
            {
                "min_visible_ratio": ratio,
                "min_bbox_px": px,
                **({"unless_passed": unless_passed} if unless_passed is not None else {}),
            }
        )
        reply = self.send(f"vget /sceneforge/render_if_visible {cam_id} {','.join(names) or ','} {','.join(kinds)} {gate}{extra}")

        def result() -> "tuple[dict[str, PixelCount], dict[str, np.ndarray] | None]":
            arrays, meta = unpack_bundle(reply())
            if meta.get("skipped") is True:
                return None, None
            try:
                failure = meta["failure"]
            except (KeyError, TypeError) as e:
                raise ProtocolError(f"render_if_visible reply: bad meta ({e})") from None
            counts = pixel_counts(meta.get("visibility"), "render_if_visible")
            if failure is not None:
                return counts, None
            missing = [k for k in kinds if k not in arrays]
            if missing:
                raise ProtocolError(f"render_if_visible reply lacks {missing}")
            return counts, {k: arrays[k] for k in kinds}

        result.discard = getattr(reply, "discard", lambda: None)  # type: ignore[attr-defined] - unread
        return result

    def _answered_now(self, stock_call, cam_id: int, camera: Camera | None, what) -> Callable[[], object]:
        """A stock UnrealCV server's answer to an ``*_async`` call, computed at once (its commands
        are synchronous): the camera set first when given, then ``stock_call(self, cam_id, what)``."""
        if camera is not None:
            self.set_camera(cam_id, camera)
        result = stock_call(self, cam_id, what)
        return lambda: result
