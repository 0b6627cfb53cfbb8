"""Sculpted (blended distance field) procedural meshes: shape, winding, paint, budget, determinism."""

from __future__ import annotations

import math

import numpy as np
import pytest

from sceneforge.assets_manifest.procedural import generate
from sceneforge.assets_manifest.procedural.sculpt import Sculpt


def _volume(mesh) -> float:
    v, f = mesh.vertices.astype(float), mesh.faces
    a, b, c = v[f[:, 0]], v[f[:, 1]], v[f[:, 2]]
    return float(np.einsum("ij,ij->i", a, np.cross(b, c)).sum() / 6.0)


def test_sphere_volume_winding_and_grounding():
    s = Sculpt(blend_cm=5.0).ellipsoid((10, 20, 100), (50, 50, 50), (200, 0, 0))
    m = s.mesh(voxel_cm=2.5, budget=100_000)
    lo, hi = m.bounds()
    assert lo[2] == pytest.approx(0.0, abs=1e-4) and np.allclose((lo[:2] + hi[:2]) / 2, 0, atol=1e-3)
    assert hi - lo == pytest.approx([100, 100, 100], abs=2.0)
    # outward winding (positive signed volume) and the volume of a 50 cm ball within 3 %
    assert _volume(m) == pytest.approx(4 / 3 * math.pi * 50**3, rel=0.03)
    assert (m.colors == (200, 0, 0)).all()


def test_smooth_union_fills_the_crease_and_paint_colours_inside_only():
    hard = Sculpt(blend_cm=1e-3)
    soft = Sculpt(blend_cm=20.0)
    for s in (hard, soft):
        s.ellipsoid((0, 0, 50), (40, 40, 40), (100, 100, 100)).ellipsoid((60, 0, 50), (40, 40, 40), (100, 100, 100))
        s.ellipsoid((90, 0, 50), (20, 60, 60), (255, 255, 255), paint=True)
    mh, ms = hard.mesh(3.0, 100_000), soft.mesh(3.0, 100_000)
    assert _volume(ms) > 1.015 * _volume(mh)  # the fillet adds material at the waist (2.6 %)
    white = (ms.colors == 255).all(axis=1)
    x = ms.vertices[:, 0] - ms.vertices[:, 0].min()  # 0 at the back of the left ball
    assert white.any() and (x[white] > 70).all() and not white[x < 60].any()


def test_budget_is_respected_and_meshes_are_deterministic():
    a = generate("fox", {})
    b = generate("fox", {})
    assert a.n_triangles <= 3000
    assert np.array_equal(a.vertices, b.vertices) and np.array_equal(a.faces, b.faces)
    assert np.array_equal(a.colors, b.colors)


@pytest.mark.parametrize(
    "name,params,markings",
    [
        ("dog", {}, {(236, 236, 234), (78, 82, 90)}),  # husky: white mask/legs and dark saddle
        ("fox", {}, {(238, 232, 222), (205, 96, 32)}),  # white chest/tail tip on orange
    ],
)
def test_animals_carry_their_markings(name, params, markings):
    m = generate(name, params)
    colours = {tuple(int(x) for x in c) for c in np.unique(m.colors, axis=0)}
    assert markings <= colours
