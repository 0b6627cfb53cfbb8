"""The mesh record passed from the asset library to the renderer.

Assets are normalised once at load (see ``assets_manifest``): centimetres, UE axes (X forward,
Y right, Z up), base on z = 0, centred in XY, colours baked per vertex. The renderer only ever
sees :class:`RenderMesh`, so a new mesh source (another pack format, procedural shapes) needs no
renderer change.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass(frozen=True, eq=False)
class RenderMesh:
    """Triangle mesh in an asset's local UE frame (cm).

    vertices: (N, 3) float32, cm, UE local frame, base at z = 0.
    faces:    (M, 3) int32 indices into ``vertices``. Winding is not relied on (no culling).
    colors:   (N, 3) uint8 linear-ish sRGB albedo per vertex (textures are baked at import).
    """

    vertices: np.ndarray
    faces: np.ndarray
    colors: np.ndarray
    meta: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        v = np.ascontiguousarray(self.vertices, dtype=np.float32)
        f = np.ascontiguousarray(self.faces, dtype=np.int32)
        c = np.ascontiguousarray(self.colors, dtype=np.uint8)
        if v.ndim != 2 or v.shape[1] != 3:
            raise ValueError(f"vertices must be (N,3), got {v.shape}")
        if f.ndim != 2 or f.shape[1] != 3:
            raise ValueError(f"faces must be (M,3), got {f.shape}")
        if c.shape != v.shape:
            raise ValueError(f"colors must be (N,3) like vertices, got {c.shape}")
        if len(f) and (f.min() < 0 or f.max() >= len(v)):
            raise ValueError("face index out of range")
        object.__setattr__(self, "vertices", v)
        object.__setattr__(self, "faces", f)
        object.__setattr__(self, "colors", c)

    @property
    def n_triangles(self) -> int:
        return int(len(self.faces))

    def bounds(self) -> np.ndarray:
        """(2, 3) min/max corner in cm."""
        return np.stack([self.vertices.min(axis=0), self.vertices.max(axis=0)])
