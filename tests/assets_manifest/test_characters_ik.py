"""Foot locking by two-bone IK (issue 49 item 3): a planted foot stays put on the skinned mesh.

A synthetic biped built in the real data structures (formats.SkinnedMesh / Clip, Y up, forward
-Z): a pelvis and two 3-bone legs (thigh, shin, foot; 1 unit segments) posed by hand-written
planar IK from a foot path. Each stance foot drifts on its own (an uneven backward travel plus a
sideways wander), which no root motion can follow, so without the lock the feet slide by
centimetres; with it every planted step must stay within 1 cm."""

from __future__ import annotations

import numpy as np
import pytest

from sceneforge.assets_manifest.characters import formats as F
from sceneforge.assets_manifest.characters import ik, motion
from sceneforge.assets_manifest.characters.model import Character, Part
from sceneforge.core.meshes import Material

FRAMES, STANCE, HIP_Y, SCALE = 48, 0.6, 1.95, 80.0  # frames per cycle, duty, hip height (units), cm per unit
DOWN = np.array([0.0, -1.0, 0.0])


def arc_quat(a, b) -> np.ndarray:
    """(x, y, z, w) of the shortest rotation taking direction a to b."""
    a, b = np.asarray(a, float) / np.linalg.norm(a), np.asarray(b, float) / np.linalg.norm(b)
    q = np.concatenate([np.cross(a, b), [1.0 + float(np.dot(a, b))]])
    return q / np.linalg.norm(q)


def foot_path(p: float, side: float, drift: float) -> np.ndarray:
    """Ankle position (data axes) of one in-place foot at phase p: stance (backwards along +Z,
    unevenly, wandering sideways by ``drift``), then a lifted swing forwards."""
    if p < STANCE:
        s = p / STANCE
        z = -0.35 + 0.7 * (s + 0.12 * np.sin(2 * np.pi * s))
        return np.array([side + drift * np.sin(np.pi * s), 0.1, z])
    s = (p - STANCE) / (1.0 - STANCE)
    return np.array([side, 0.1 + 0.25 * np.sin(np.pi * s), 0.35 - 0.7 * s])


def leg_states(hip: np.ndarray, ankle: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Knee by the law of cosines, bent forwards (-Z); (t, q) of thigh, shin, foot."""
    d = ankle - hip
    dist = np.linalg.norm(d)
    u = d / dist
    fwd = np.array([0.0, 0.0, -1.0])
    v = fwd - np.dot(fwd, u) * u
    v /= np.linalg.norm(v)
    cos_h = dist / 2.0  # both segments 1 unit
    knee = hip + cos_h * u + np.sqrt(1 - cos_h**2) * v
    t = np.array([hip, knee, ankle])
    q = np.array([arc_quat(DOWN, knee - hip), arc_quat(DOWN, ankle - knee), [0.0, 0.0, 0.0, 1.0]])
    return t, q


TAIL = (np.array([0.0, HIP_Y, 0.2]), np.array([0.0, -0.05, 2.0]))  # a tail's root off the pelvis, backwards (+Z), and its tip


def synthetic_biped(drift: float = 0.04, ankle_ring: bool = False, tail: bool = False, heel_shin: float = 0.0) -> Character:
    """``ankle_ring``: a ring of shin vertices 0.08 units above the sole (a shin group that dips
    near the ground but never touches it). ``tail``: two more bones on the midplane, a tail off the
    pelvis whose tip the clip drags on the ground 0.05 units below the soles. ``heel_shin``: one more
    sole vertex per foot, at the heel, skinned that share to the shin (the rest to the foot), as
    the pack's human heels are (0.48): it deforms as the shin sweeps over the planted foot."""
    hips = (np.array([0.2, HIP_Y, 0.0]), np.array([-0.2, HIP_Y, 0.0]))
    nb = 9 if tail else 7
    ts, qs = np.zeros((FRAMES, nb, 3)), np.zeros((FRAMES, nb, 4))
    if tail:
        ts[:, 7], ts[:, 8] = TAIL
        qs[:, 7] = arc_quat(DOWN, TAIL[1] - TAIL[0])
        qs[:, 8] = arc_quat(DOWN, TAIL[1] - TAIL[0])
    for f in range(FRAMES):
        p = f / FRAMES
        ts[f, 0], qs[f, 0] = (0.0, HIP_Y, 0.0), (0.0, 0.0, 0.0, 1.0)
        for leg, (hip, side, off) in enumerate(((hips[0], 0.2, 0.0), (hips[1], -0.2, 0.5))):
            t, q = leg_states(hip, foot_path((p + off) % 1.0, side, drift * (1 if leg == 0 else -1)))
            ts[f, 1 + 3 * leg : 4 + 3 * leg], qs[f, 1 + 3 * leg : 4 + 3 * leg] = t, q
    # bind pose: legs straight down; vertices: a pelvis block, thigh/shin rings, a foot box
    bind_t = np.array([[0, HIP_Y, 0], [0.2, HIP_Y, 0], [0.2, HIP_Y - 1, 0], [0.2, HIP_Y - 2, 0]] * 1, float)
    bind_t = np.concatenate([bind_t, [[-0.2, HIP_Y, 0], [-0.2, HIP_Y - 1, 0], [-0.2, HIP_Y - 2, 0]]])
    if tail:  # bound straight down from its root, like the legs
        bind_t = np.concatenate([bind_t, [TAIL[0], TAIL[0] + DOWN * np.linalg.norm(TAIL[1] - TAIL[0])]])
    pos, bones = [], []
    for x in (-0.25, 0.25):
        for y in (HIP_Y, HIP_Y + 0.3):
            pos.append((x, y, 0.0)), bones.append(0)
    for leg, x in enumerate((0.2, -0.2)):
        for b, y in ((1, HIP_Y - 0.5), (2, HIP_Y - 1.5), *(((2, HIP_Y - 2.02),) if ankle_ring else ())):
            for dx, dz in ((-0.05, -0.05), (0.05, -0.05), (0.05, 0.05), (-0.05, 0.05)):
                pos.append((x + dx, y, dz)), bones.append(1 + 3 * leg + b - 1)
        for dx in (-0.05, 0.05):  # the foot: 0.1 below the ankle, heel at +0.05, toe at -0.2
            for dz in (-0.2, 0.05):
                for y in (HIP_Y - 2.1, HIP_Y - 2.0):
                    pos.append((x + dx, y, dz)), bones.append(3 + 3 * leg)
    if tail:  # a small box round the tip (which the clip holds 0.05 below the soles)
        for dx, dz in ((-0.03, -0.03), (0.03, -0.03), (0.03, 0.03), (-0.03, 0.03)):
            pos.append((bind_t[8][0] + dx, bind_t[8][1], bind_t[8][2] + dz)), bones.append(8)
    heels = []
    if heel_shin:
        for leg, x in enumerate((0.2, -0.2)):
            heels.append(len(pos))
            pos.append((x, HIP_Y - 2.1, 0.05)), bones.append(3 + 3 * leg)
    n = len(pos)
    bone_idx = np.full((n, 4), -1, np.int32)
    bone_idx[:, 0] = bones
    weights = np.zeros((n, 4), np.float32)
    weights[:, 0] = 1.0
    for i in heels:
        bone_idx[i, 1], weights[i] = bone_idx[i, 0] - 1, (1.0 - heel_shin, heel_shin, 0.0, 0.0)
    mesh = F.SkinnedMesh(
        np.array(pos, np.float32),
        np.tile(np.array([[0.0, 1.0, 0.0]], np.float32), (n, 1)),
        np.zeros((n, 1, 2), np.float32),
        bone_idx,
        weights,
        np.array([[0, 1, 2], [1, 2, 3]], np.int32),
        bind_t.astype(np.float32),
        np.tile(np.array([[0.0, 0.0, 0.0, 1.0]], np.float32), (nb, 1)),
    )
    clip = F.Clip("walk", 1000.0 / 30.0, ts.astype(np.float32), qs.astype(np.float32))
    return Character("synthetic", "human", [Part(mesh, Material(name="m"))], {"walk": clip}, {"walk": "walk"}, SCALE)


def test_two_bone_ik_matches_the_hand_computed_3_4_5_triangle():
    # thigh 3, shin 4, the knee bent (pole) towards -Y; target at 5 along +X: a right angle at the knee
    hip, knee, ankle, target = np.zeros(3), np.array([0.0, -3.0, 0.0]), np.array([4.0, -3.0, 0.0]), np.array([5.0, 0.0, 0.0])
    r1, r2 = ik.two_bone(hip, knee, ankle, target)
    new_knee = hip + r1 @ (knee - hip)
    new_ankle = new_knee + r2 @ (r1 @ (ankle - knee))
    # cos(hip angle) = (3^2 + 5^2 - 4^2) / (2 * 3 * 5) = 0.6: knee = 3 * (0.6 * x + 0.8 * pole)
    assert new_knee == pytest.approx([1.8, -2.4, 0.0], abs=1e-9)
    assert new_ankle == pytest.approx(target, abs=1e-9)
    for r in (r1, r2):  # rigid rotations about the plane's normal (Z)
        assert r @ r.T == pytest.approx(np.eye(3), abs=1e-12) and np.linalg.det(r) == pytest.approx(1.0)
        assert r @ np.array([0.0, 0.0, 1.0]) == pytest.approx([0.0, 0.0, 1.0], abs=1e-12)
    # beyond the reach (7): the leg points at the target at 99.9 % of its length
    r1, r2 = ik.two_bone(hip, knee, ankle, np.array([10.0, 0.0, 0.0]))
    reached = hip + r1 @ (knee - hip) + r2 @ (r1 @ (ankle - knee))
    assert reached == pytest.approx([7.0 * ik.REACH, 0.0, 0.0], abs=1e-6)
    # the target where the ankle already is: nothing turns
    r1, r2 = ik.two_bone(hip, knee, ankle, ankle)
    assert r1 == pytest.approx(np.eye(3), abs=1e-9) and r2 == pytest.approx(np.eye(3), abs=1e-9)


def test_the_skeleton_and_legs_are_found_from_the_motion():
    ch = synthetic_biped()
    assert ik.parents(list(ch.clips.values())).tolist() == [-1, 0, 1, 2, 0, 4, 5]
    legs = ik.legs(ch, motion.body_track(ch, "walk"))
    assert [(g.upper, g.lower, g.end) for g in legs] == [(1, 2, 3), (4, 5, 6)]
    assert legs[0].below_end.tolist() == [3] and legs[0].below_upper.tolist() == [1]


def test_solve_keeps_bone_lengths_foot_orientation_and_the_rest_of_the_body():
    ch = synthetic_biped()
    legs = ik.legs(ch, motion.body_track(ch, "walk"))
    pose = F.pose_at(ch.clips["walk"], 0.3)
    shift = np.array([0.03, -0.02, 0.05])
    out = ik.solve(pose, legs[0], shift)
    assert out[3, :3, 3] == pytest.approx(pose[3, :3, 3] + shift, abs=1e-9)  # the ankle reached its target
    for a, b in ((1, 2), (2, 3)):  # segment lengths of the pose kept
        assert np.linalg.norm(out[b, :3, 3] - out[a, :3, 3]) == pytest.approx(
            np.linalg.norm(pose[b, :3, 3] - pose[a, :3, 3]), abs=1e-12
        )
    assert out[3, :3, :3] == pytest.approx(pose[3, :3, :3], abs=1e-12)  # the foot keeps the clip's orientation
    assert np.array_equal(out[[0, 4, 5, 6]], pose[[0, 4, 5, 6]])  # pelvis and the other leg untouched
    assert out[1, :3, 3] == pytest.approx(pose[1, :3, 3], abs=1e-12)  # the hip stays put
    # the knee stays on the clip's side (forward, -Z) of the hip-ankle line
    assert out[2, 2, 3] < out[1, 2, 3] and out[2, 2, 3] < out[3, 2, 3]


def test_a_drifting_stance_foot_slides_without_the_lock_and_stays_within_1_cm_with_it():
    ch = synthetic_biped()
    m = motion.analyse(ch, "walk")
    assert m.stride_cm > 0
    lock = ch.foot_lock("walk")
    assert len(lock.legs) == 2
    off = motion.slides(ch, "walk", m, ik.LOCK_SAMPLES)
    on = motion.slides(ch, "walk", m, ik.LOCK_SAMPLES, lock.bones)
    assert len(off) == len(on) == 2
    assert off.max() > 3.0  # cm: the sideways wander alone is 0.04 units x 80 cm
    assert on.max() <= 1.0
    # what the server draws (Character.mesh) is the locked pose; planted=False is the clip's own
    locked = ch.mesh("walk", 0.25).vertices
    clip = ch.mesh("walk", 0.25, planted=False).vertices
    assert not np.allclose(locked, clip) and np.array_equal(locked, ch.mesh("walk", 0.25).vertices)
    # bone lengths (the pose's own) kept at every phase
    for ph in np.linspace(0.0, 1.0, 17):
        a, b = F.pose_at(ch.clips["walk"], ph), lock.bones(ph)
        for i, j in ((1, 2), (2, 3), (4, 5), (5, 6)):
            assert np.linalg.norm(b[j, :3, 3] - b[i, :3, 3]) == pytest.approx(np.linalg.norm(a[j, :3, 3] - a[i, :3, 3]), abs=1e-9)


def test_the_lock_blends_in_and_out_without_pops_and_is_deterministic():
    ch = synthetic_biped()
    m = motion.analyse(ch, "walk")
    lock = ik.lock(ch, "walk", m)
    assert np.abs(lock.shift).max() * SCALE > 1.0
    phases = np.arange(ik.LOCK_SAMPLES + 1) / ik.LOCK_SAMPLES
    root = np.column_stack([m.root_cm(phases), np.zeros((len(phases), 2))])
    for leg in lock.legs:  # the ankle's world path: no step faster than the clip's own fastest foot
        drawn = np.array([F.to_ue(F.pose_at(ch.clips["walk"], p)[leg.end, :3, 3][None], SCALE)[0] for p in phases]) + root
        held = np.array([F.to_ue(lock.bones(p)[leg.end, :3, 3][None], SCALE)[0] for p in phases]) + root
        step = lambda w: np.linalg.norm(np.diff(w, axis=0), axis=1).max()  # noqa: E731
        assert step(held) <= 1.1 * step(drawn)
        assert np.linalg.norm(held[-1] - held[0] - [m.stride_cm, 0, 0]) < 1e-6  # the cycle closes: no pop at the wrap
    again = ik.lock(synthetic_biped(), "walk")
    assert lock.shift.tobytes() == again.shift.tobytes()
    assert lock.bones(0.4137).tobytes() == again.bones(0.4137).tobytes()


def test_one_segment_and_free_feet():
    """A leg with one segment of its own swings round its joint (length kept, the end lands on the
    line to the target); a foot bone outside the hierarchy is moved alone."""
    ch = synthetic_biped()
    pose = F.pose_at(ch.clips["walk"], 0.3)
    shift = np.array([0.04, 0.0, -0.03])
    none = np.zeros(0, int)
    one = ik.Leg(3, -1, 2, np.array([3]), none, np.array([2]), ())
    out = ik.solve(pose, one, shift)
    knee, ankle = pose[2, :3, 3], pose[3, :3, 3]
    assert out[2, :3, 3] == pytest.approx(knee, abs=1e-12)  # the joint stays
    reached = out[3, :3, 3]
    assert np.linalg.norm(reached - knee) == pytest.approx(np.linalg.norm(ankle - knee), abs=1e-12)
    along = (ankle + shift - knee) / np.linalg.norm(ankle + shift - knee)
    assert (reached - knee) / np.linalg.norm(reached - knee) == pytest.approx(along, abs=1e-12)
    seg = (ankle - knee) / np.linalg.norm(ankle - knee)
    miss = reached - (ankle + shift)
    assert np.linalg.norm(miss - np.dot(miss, seg) * seg) < np.dot(shift, shift)  # across the segment: met to 2nd order
    assert out[3, :3, :3] == pytest.approx(pose[3, :3, :3], abs=1e-12)
    assert np.array_equal(out[[0, 1, 4, 5, 6]], pose[[0, 1, 4, 5, 6]])
    free = ik.Leg(6, -1, -1, np.array([6]), none, none, ())
    out = ik.solve(pose, free, shift)
    assert out[6, :3, 3] == pytest.approx(pose[6, :3, 3] + shift, abs=1e-12)
    assert np.array_equal(out[:6], pose[:6]) and np.array_equal(out[6, :3, :3], pose[6, :3, :3])


def test_a_shin_hanging_above_a_planted_foot_is_not_a_planted_foot():
    """motion.slides' ``legs``: a group's ground is its leg's lowest point. A shin ring that dips
    6 cm above the sole (its own lowest point) would count as planted against itself, sliding as
    the shin sweeps; against the leg's ground it never touches, and the locked feet hold."""
    ch = synthetic_biped(ankle_ring=True)
    m = motion.analyse(ch, "walk")
    lock = ch.foot_lock("walk")
    own = motion.slides(ch, "walk", m, ik.LOCK_SAMPLES, lock.bones)
    legs = ik.leg_of(ch, lock)
    assert sorted(legs) == [2, 3, 5, 6] and legs[2] == legs[3] != legs[5] == legs[6]  # shin and foot groups, per leg
    by_leg = motion.slides(ch, "walk", m, ik.LOCK_SAMPLES, lock.bones, legs=legs)
    assert len(own) == 4 and own.max() > 1.0  # the shin rings "slide"
    assert len(by_leg) == 2 and by_leg.max() <= 1.0  # only the feet are planted, and they hold


def test_a_tail_dragged_on_the_ground_is_not_a_foot():
    """A tail hangs off the pelvis on the body's midplane; the clip drags its tip on the ground,
    lower than the soles (the lion's run). It is no foot: not a foot group, not a leg, it does not
    hold the root back (the stride is the feet's), and the feet stay locked."""
    plain, ch = synthetic_biped(), synthetic_biped(tail=True)
    track = motion.body_track(ch, "walk")
    assert track[:, -4:, 2].min() < track[:, :-4, 2].min() - 3.0  # the tail tip is the lowest point, by 4 cm
    assert ik.parents(list(ch.clips.values())).tolist() == [-1, 0, 1, 2, 0, 4, 5, 0, 7]
    assert 7 in motion.midline_bones(ch.parts[0].mesh) and 8 in motion.midline_bones(ch.parts[0].mesh)
    body = ch.parts[0].mesh
    dom = body.bones[np.arange(len(body.bones)), np.argmax(body.weights, 1)]
    assert sorted(int(dom[g[0]]) for g in motion.feet(ch, track)) == [3, 6]
    assert [(g.upper, g.lower, g.end) for g in ik.legs(ch, track)] == [(1, 2, 3), (4, 5, 6)]
    m = motion.analyse(ch, "walk")
    assert m.stride_cm == pytest.approx(motion.analyse(plain, "walk").stride_cm, abs=1e-9)
    on = motion.slides(ch, "walk", m, ik.LOCK_SAMPLES, ch.foot_lock("walk").bones)
    assert len(on) == 2 and on.max() <= 1.0


def test_a_heel_vertex_skinned_half_to_the_shin_is_held_within_1_cm(monkeypatch):
    """The pack's human heel: a sole vertex skinned 0.5 to the foot, 0.5 to the shin, moves against
    the rigid sole as the shin sweeps over the planted foot; no translation of the foot holds all
    of them. The midrange hold (ik._hold) splits that relative travel evenly (the mean lets the one
    deforming vertex drift by 4/5 of it): within 1 cm, and clearly below the mean's."""
    ch = synthetic_biped(heel_shin=0.5)
    m = motion.analyse(ch, "walk")
    held = motion.slides(ch, "walk", m, ik.LOCK_SAMPLES, ik.lock(ch, "walk", m).bones)
    monkeypatch.setattr(ik, "HOLD_PASSES", 0)  # the step-by-step mean alone
    mean = motion.slides(ch, "walk", m, ik.LOCK_SAMPLES, ik.lock(ch, "walk", m).bones)
    plain = synthetic_biped()  # the same feet without the heel vertex
    pm = motion.analyse(plain, "walk")
    rigid = motion.slides(plain, "walk", pm, ik.LOCK_SAMPLES, ik.lock(plain, "walk", pm).bones)
    assert len(held) == len(mean) == 2
    assert rigid.max() < 0.1 < 0.7 * mean.max()  # the heel is what slides
    assert held.max() <= 1.0 and held.max() < 0.7 * mean.max()
