"""The GPU-skinning form of a character (model.Character.rig / palette; issue 49 item 2) and the
winding of every posed mesh, with the fixture pack (tests/oad_fixture.py: 2-bone legs installed as
the ``chicken`` and ``human`` classes; no props: the props' rigid slots were checked on the real
pack, human/camel/horse/elephant vertices within 3e-5 cm of the CPU mesh)."""

from __future__ import annotations

import numpy as np
import pytest
from oad_fixture import install_pack

from sceneforge.assets_manifest.characters.library import CharacterLibrary


@pytest.fixture(scope="module")
def lib(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("pack")
    return CharacterLibrary(install_pack(tmp / "cache", tmp))


@pytest.mark.parametrize("phase", [0.0, 0.2, 0.5, 0.9])
def test_the_palette_skins_the_rig_into_the_cpu_mesh(lib, phase):
    for cls in lib.classes():
        mesh, rig = lib.mesh(cls, 0, "walk", phase), lib.rig(cls, 0)
        pal = lib.palette(cls, 0, "walk", phase)
        pos, nrm = rig.skin(pal)
        assert np.array_equal(rig.mesh.faces, mesh.faces) and np.array_equal(rig.mesh.colors, mesh.colors)
        np.testing.assert_allclose(pos, mesh.vertices, atol=1e-3)
        np.testing.assert_allclose(nrm, mesh.normals, atol=1e-4)
        np.testing.assert_allclose(rig.weights.sum(1), 1.0, atol=1e-6)
        c, r = rig.bounding_sphere(pal)  # holds every vertex, not much larger than needed
        dist = np.linalg.norm(mesh.vertices - c, axis=1)
        assert dist.max() <= r + 1e-3 and r < 1.5 * 0.5 * np.linalg.norm(np.ptp(mesh.vertices, axis=0)) + 1.0
    assert lib.rig(cls, 0) is lib.rig(cls, 0)  # built once per variant


def test_posed_triangles_wind_counter_clockwise_about_their_normals(lib):
    """As every RenderMesh (a renderer that shades the front face, Cycles, relies on it): the
    fixture's side faces follow the game's clockwise data (its end caps do not), 0.2 before the
    flip at load, 0.8 after; the real pack: human 0.016 -> 0.984, horse 0.0 -> 1.0."""
    m = lib.mesh("chicken", 0, "walk", 0.3)
    v, f = m.vertices.astype(float), m.faces
    face_n = np.cross(v[f[:, 1]] - v[f[:, 0]], v[f[:, 2]] - v[f[:, 0]])
    agree = np.einsum("ij,ij->i", face_n, m.normals[f].mean(1)) > 0
    assert agree.mean() >= 0.75
