"""The table of procedural generators: ``register(name)`` adds one, ``GENERATORS`` holds them.

A generator module (animals.py, vehicles.py, ...) registers its functions here when imported;
the package (``assets_manifest.procedural``) imports every generator module and looks names up.
"""

from __future__ import annotations

from typing import Callable

from sceneforge.core.meshes import RenderMesh

GENERATORS: dict[str, Callable[..., RenderMesh]] = {}


def register(name: str) -> Callable:
    def deco(fn: Callable[..., RenderMesh]) -> Callable[..., RenderMesh]:
        GENERATORS[name] = fn
        return fn

    return deco
