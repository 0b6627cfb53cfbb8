"""Which faces of a mesh go into the sun's shadow map (gl/shadow.py draws an upright actor with
only these; gl/resources.py keeps them as a second index buffer at upload)."""

from __future__ import annotations

import numpy as np

FLAT_CASTER_CM = 3.0  # faces wholly this close above a mesh's lowest point cast no visible shadow


def casting_faces(vertices: np.ndarray, faces: np.ndarray) -> np.ndarray:
    """Boolean per face: can it cast a shadow anyone sees, when the mesh stands upright (z up,
    unscaled or shrunk) on the ground? A face whose three corners all lie within
    ``FLAT_CASTER_CM`` of the mesh's lowest point (road surfaces, paint, a pond's water, the bottom
    of anything) can only shadow a strip at most that high: under 6 cm long with the sun 30 deg
    up, below a shadow-map texel (>= 5 cm, gl/shadow.py) and the PCF footprint. Leaving those
    faces out of the shadow map is what makes a 180 m street mesh cheap there: they covered
    every texel a view reads (2.3 of 6.6 ms per city shadow map). Kerbs, 12 cm, still cast."""
    if len(faces) == 0:
        return np.zeros(0, dtype=bool)
    z = np.asarray(vertices, dtype=np.float64)[:, 2]
    return z[np.asarray(faces)].max(axis=1) > z.min() + FLAT_CASTER_CM
