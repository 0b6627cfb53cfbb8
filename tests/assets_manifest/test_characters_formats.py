"""PMD/PSA reading and linear-blend skinning against hand-computed vertices (issue 49 item 2)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from oad_fixture import leg_mesh, pmd_bytes, psa_bytes

from sceneforge.assets_manifest.characters import formats as F
from sceneforge.core.errors import AssetError


def rz(deg: float, p) -> np.ndarray:
    c, s = math.cos(math.radians(deg)), math.sin(math.radians(deg))
    return np.array([c * p[0] - s * p[1], s * p[0] + c * p[1], p[2]])


def test_read_pmd_and_psa_round_trip_the_fixture():
    mesh = F.read_pmd(pmd_bytes(props=[("prop-head", (0.0, 0.5, 0.0), (0.0, 0.0, 0.0, 1.0), 1)]))
    ref = leg_mesh()
    assert mesh.version == 4 and mesh.n_bones == 2 and mesh.skinned
    assert np.allclose(mesh.positions, ref["pos"]) and len(mesh.faces) == len(ref["faces"])
    assert mesh.bones[0].tolist() == [0, -1, -1, -1] and mesh.bones[4].tolist() == [0, 1, -1, -1]
    assert mesh.props[0][0] == "prop-head" and mesh.props[0][3] == 1
    clip = F.read_psa(psa_bytes())
    assert clip.name == "test_walk" and clip.n_frames == 4 and clip.n_bones == 2
    assert clip.duration_s == pytest.approx(4 / 30)


def test_skinning_matches_hand_computed_vertices():
    """Frame 2 bends the knee (bone 1 at (0,1,0)) by 90 deg about Z. A tip vertex (0.1, 2, 0.1)
    on bone 1 alone: Rz90((0.1,2,0.1) - (0,1,0)) + (0,1,0) = (-1, 1.1, 0.1). A knee vertex
    (0.1, 1, 0.1), half on each bone: 0.5 (0.1,1,0.1) + 0.5 ((0,0.1,0.1) + (0,1,0)) = (0.05, 1.05, 0.1)."""
    mesh, clip = F.read_pmd(pmd_bytes()), F.read_psa(psa_bytes())
    pos, nrm = F.skin(mesh, F.pose_at(clip, 2 / 4))
    tip = int(np.argmin(np.linalg.norm(mesh.positions - [0.1, 2.0, 0.1], axis=1)))
    knee = int(np.argmin(np.linalg.norm(mesh.positions - [0.1, 1.0, 0.1], axis=1)))
    assert np.allclose(pos[tip], [-1.0, 1.1, 0.1], atol=1e-6)
    assert np.allclose(pos[knee], [0.05, 1.05, 0.1], atol=1e-6)
    root = int(np.argmin(np.linalg.norm(mesh.positions - [0.1, 0.0, 0.1], axis=1)))
    assert np.allclose(pos[root], mesh.positions[root], atol=1e-6)  # bone 0 does not move
    assert np.allclose(np.linalg.norm(nrm, axis=1), 1.0)
    assert np.allclose(nrm[tip], rz(90, mesh.normals[tip]), atol=1e-6)  # normals turn with their bone
    # frame 0 is the bind pose: skinning is the identity
    p0, _ = F.skin(mesh, F.pose_at(clip, 0.0))
    assert np.allclose(p0, mesh.positions, atol=1e-6)


def test_sampling_interpolates_between_frames_and_wraps():
    """Phase 0.625 is halfway between frame 2 (90 deg) and frame 3 (30 deg): a 60 deg bend;
    phase 1.5 is phase 0.5."""
    mesh, clip = F.read_pmd(pmd_bytes()), F.read_psa(psa_bytes())
    pos, _ = F.skin(mesh, F.pose_at(clip, 0.625))
    tip = int(np.argmin(np.linalg.norm(mesh.positions - [-0.1, 2.0, 0.1], axis=1)))
    assert np.allclose(pos[tip], rz(60, [-0.1, 1.0, 0.1]) + [0, 1, 0], atol=1e-6)
    assert np.allclose(F.pose_at(clip, 1.5), F.pose_at(clip, 0.5))


def test_axes_to_ue_are_a_proper_rotation():
    """The data faces -Z with its left side at +X, Y up; UE is X forward, Y right, Z up."""
    assert np.allclose(F.to_ue([[0, 0, -1]], 100.0), [[100, 0, 0]])  # forward
    assert np.allclose(F.to_ue([[1, 0, 0]], 100.0), [[0, -100, 0]])  # its left
    assert np.allclose(F.to_ue([[0, 1, 0]], 100.0), [[0, 0, 100]])  # up
    assert np.linalg.det(F.TO_UE) == pytest.approx(1.0)


@pytest.mark.parametrize("cut", [3, 20, 200, -10])
def test_truncated_or_foreign_files_fail_with_one_line(cut):
    data = pmd_bytes()
    with pytest.raises(AssetError) as e:
        F.read_pmd(data[:cut])
    assert "\n" not in str(e.value)
    with pytest.raises(AssetError):
        F.read_psa(psa_bytes()[: max(cut, 3) if cut > 0 else cut])
    with pytest.raises(AssetError, match="not a PMD"):
        F.read_pmd(psa_bytes())
