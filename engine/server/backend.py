"""The interface between the render server and a renderer backend.

The server owns the :class:`~engine.world.Scene` (edited by ``vset`` commands) and asks a backend
for images. A backend never parses commands and never touches sockets, so a photoreal backend
(Mitsuba, Cycles) is one more class implementing this interface.

Output arrays (H = camera.height, W = camera.width; row 0 is the top of the image):

=============  =====================  ====================================================
kind           dtype / shape          meaning
=============  =====================  ====================================================
lit            uint8 (H, W, 3)        shaded RGB with sun, sky and shadows
object_mask    uint8 (H, W, 3)        each actor's instance colour (Actor.color); sky and
                                      ground are (0, 0, 0)
depth          float32 (H, W)         *ray* depth: distance camera centre → surface in cm
                                      (UnrealCV's point depth); ``inf`` where nothing is hit
plane_depth    float32 (H, W)         planar depth along the optical axis, cm; ``inf`` = sky
normal         float32 (H, W, 3)      world-frame unit normals (UE axes), 0 for sky
instance_id    int32 (H, W)           1 + index of the actor in ``scene.actors`` order;
                                      0 = background (used for pixel counting)
=============  =====================  ====================================================
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Callable

import numpy as np

from sceneforge.core.meshes import RenderMesh
from sceneforge.core.types import PixelCount  # noqa: F401  (backends return it)
from sceneforge.engine.world import Camera, Scene

KINDS = ("lit", "object_mask", "depth", "plane_depth", "normal", "instance_id")

# Resolves an asset id to its normalised mesh (cached by the caller); raises AssetError.
MeshProvider = Callable[[str], RenderMesh]


class RenderBackend(ABC):
    """A renderer bound to one mesh provider; stateless w.r.t. the scene between calls."""

    name: str = "abstract"

    @abstractmethod
    def render(self, scene: Scene, camera: Camera, kinds: tuple[str, ...]) -> dict[str, np.ndarray]:
        """Render the requested ``kinds`` (subset of :data:`KINDS`) in one pass where possible."""

    @abstractmethod
    def pixel_counts(self, scene: Scene, camera: Camera, names: list[str]) -> dict[str, PixelCount]:
        """Visible / unoccluded pixel counts and bbox for each named actor, in one call."""

    def triangle_count(self, scene: Scene) -> int:
        """Triangles drawn for this scene (ground + visible actors), for benchmarks."""
        return 0

    def info(self) -> dict:
        return {"backend": self.name}

    def close(self) -> None:
        """Release GPU/GL resources."""
