"""Root motion from a clip's own foot travel (issue 49 item 3): a planted foot stays put.

A synthetic in-place clip in the real formats (tests/oad_fixture.py's 2-bone leg): the whole leg
slides backwards on the ground for 60 % of the cycle (stance), then lifts and swings forward.
Played with the root travel that :func:`motion.analyse` derives, the foot's vertices must stand
still in the world while planted, and the stride must follow the distance the clip's foot travels."""

from __future__ import annotations

import numpy as np
import pytest
from oad_fixture import ACTOR_XML, CLIP, MESH, RUN_CLIP, SKIN, STANCE, TRAVEL, dds_bytes, pmd_bytes, stepping_clip

from sceneforge.assets_manifest.characters import formats as F
from sceneforge.assets_manifest.characters import motion
from sceneforge.assets_manifest.characters.library import CharacterLibrary


def pack_dir(tmp_path, clip: bytes):
    for rel, data in (
        (MESH, pmd_bytes()),
        (CLIP, clip),
        (RUN_CLIP, clip),
        (SKIN, dds_bytes()),
        ("art/actors/fauna/chicken.xml", ACTOR_XML.encode()),
    ):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_bytes(data)
    return CharacterLibrary(tmp_path)


def world_feet(ch, m: motion.ClipMotion, phases: np.ndarray) -> np.ndarray:
    """(P, n, 3) the foot ring's world points with the root moved by ``root_cm`` along +X."""
    out = []
    for ph in phases:
        pos, _ = F.skin(ch.parts[0].mesh, F.pose_at(ch.clips["walk"], ph))
        ue = F.to_ue(pos[:4], ch.scale_cm)  # ring 0: the foot
        out.append(ue + [float(m.root_cm(ph)), 0.0, 0.0])
    return np.array(out)


def test_a_planted_foot_stays_put_with_the_derived_root_motion(tmp_path):
    lib = pack_dir(tmp_path, stepping_clip())
    ch = lib.character("chicken", 0)
    m = motion.analyse(ch, "walk")
    # the clip's own foot travel per stance, and its speed carried on through the swing (no foot planted)
    assert m.stride_cm == pytest.approx(TRAVEL * ch.scale_cm / STANCE, rel=0.03)
    assert m.runs == 1 and m.slides_cm.max() < 0.2
    stance = np.linspace(0.02, STANCE - 0.05, 12)
    w = world_feet(ch, m, stance)
    assert np.abs(w[:, :, :2] - w[:1, :, :2]).max() < 0.2  # cm: planted = one world point
    assert np.abs(w[:, :, 2]).max() < 1e-6  # on the ground
    # the next cycle's stance is one stride further on
    w2 = world_feet(ch, m, stance + 1.0)
    assert np.allclose(w2[:, :, 0] - w[:, :, 0], m.stride_cm, atol=0.2)


def test_a_skating_clip_is_measured_as_sliding(tmp_path):
    lib = pack_dir(tmp_path, stepping_clip(jitter=0.15))
    m = motion.analyse(lib.character("chicken", 0), "walk")
    # the root follows the planted foot, so even an uneven stance does not slide...
    assert m.slides_cm.max() < 0.5
    # ...while a constant root speed (the stride spread evenly) lets the same foot skate
    ch = lib.character("chicken", 0)
    const = motion.ClipMotion("walk", m.stride_cm, m.cycle_s, m.slides_cm, m.runs, np.linspace(0, m.stride_cm, len(m.offset_cm)))
    w = world_feet(ch, const, np.linspace(0.02, STANCE - 0.05, 12))
    assert np.abs(w[:, 0, 0] - w[0, 0, 0]).max() > 0.1 * ch.scale_cm
