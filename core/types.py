"""Value types that cross package seams (server ↔ client ↔ scenarios).

:class:`PixelCount` is what a renderer computes and what a client receives over the socket; it
lives here so the client does not import the server to name it.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class PixelCount:
    """Visibility of one actor from one camera, in pixels at the camera's resolution.

    visible:    pixels where the actor is the front-most surface in the full scene;
    unoccluded: pixels it covers when rendered alone (no other actor, no ground occlusion);
    bbox:       (x0, y0, x1, y1) inclusive pixel box of the *visible* pixels, or None.
    """

    visible: int
    unoccluded: int
    bbox: tuple[int, int, int, int] | None

    @property
    def ratio(self) -> float:
        return self.visible / self.unoccluded if self.unoccluded else 0.0
