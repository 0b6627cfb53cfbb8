"""The triangle budgets of a mesh's levels of detail: what a renderer may draw instead of it.

Shared by the render server (engine/server/gl/lod.py chooses a level per frame) and the samplers
(scenarios/sampling/silhouette.py bounds what any level can cover on screen), which must agree on which
levels exist. Level k asks the decimation for ``n / LOD_RATIO**k`` triangles (at least
``MIN_TRIANGLES``), k = 1 … ``MAX_LEVEL``.
"""

from __future__ import annotations

LOD_RATIO = 4  # triangles of level k+1 ≈ triangles of level k / LOD_RATIO
MAX_LEVEL = 3
MIN_TRIANGLES = 300  # no level below this many triangles (smaller meshes have no levels)


def budget(n_triangles: int, level: int) -> int:
    """Nominal triangle count of ``level`` (what the decimation is asked for)."""
    return max(MIN_TRIANGLES, int(round(n_triangles / LOD_RATIO**level)))
