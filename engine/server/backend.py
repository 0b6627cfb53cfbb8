"""The interface between the render server and a renderer backend.

The server owns the :class:`~engine.world.Scene` (edited by ``vset`` commands) and asks a backend
for images. A backend never parses commands and never touches sockets, so a photoreal backend
(Mitsuba, Cycles) is one more class implementing this interface.

Output arrays (H = camera.height, W = camera.width; row 0 is the top of the image): the kinds,
their dtypes, shapes and meanings are the rows of :data:`engine.render_kinds.TABLE`; a backend
renders the rows whose ``renderers`` name its :attr:`RenderBackend.renderer`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Callable

import numpy as np

from sceneforge.core.meshes import RenderMesh
from sceneforge.core.types import PixelCount  # noqa: F401  (backends return it)
from sceneforge.engine.world import Camera, Scene

# Resolves an asset id to its normalised mesh (cached by the caller); raises AssetError.
MeshProvider = Callable[[str], RenderMesh]


class RenderBackend(ABC):
    """A renderer bound to one mesh provider; stateless w.r.t. the scene between calls."""

    name: str = "abstract"  # what ``info()`` reports
    renderer: str = ""  # its ``--renderer`` name, as the render-kind table's ``renderers`` column
    # spells it (the server refuses the kinds whose row lacks it; "": unchecked)

    @abstractmethod
    def render(self, scene: Scene, camera: Camera, kinds: tuple[str, ...]) -> dict[str, np.ndarray]:
        """Render the requested ``kinds`` (rows of engine.render_kinds.TABLE that name this
        renderer; check them with ``render_kinds.require(self.renderer, kinds)``) in one pass
        where possible."""

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
