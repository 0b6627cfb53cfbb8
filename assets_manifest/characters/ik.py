"""Foot locking: two-bone IK on a clip's skeleton so that planted feet stay put (issue 49 item 3).

Root motion from the clip's own feet (:mod:`.motion`) moves the body by the mean travel of the
planted feet; what is left is each foot's own wander while it is planted (a stance foot that
rises, travels unevenly or rolls along a long hoof). :func:`lock` removes it on the skeleton:

1. **Skeleton.** PSA/PMD store model-space bone states and no hierarchy, so the parents are
   inferred from the motion (:func:`parents`): bone *i*'s parent is the earlier bone *j* (the
   standard skeleton order lists a parent before its children) in whose frame *i*'s origin stays
   put over every frame of every clip of the character (within ``STRETCH`` of the distance: the
   exported clips stretch bones by 1-2 %; ``LOOSE`` where none does), the steadiest one. Only the
   previous bone and its ancestors qualify (the order is a pre-order; past a bone left without a
   parent, that bone's own candidates), and a bone whose origin coincides with *i*'s counts only
   as the previous bone (it holds *i* still whatever turns). Checked against the pack's
   skeleton files for the biped (46 bones) and the horse: every leg bone's parent is right.
2. **Legs** (:func:`legs`): the feet are :func:`motion.feet`'s bone groups; groups on one chain
   of parents are one leg. Its *end* bone is the highest of them whose joint comes down to
   ``ANKLE_SHARE`` of the figure's height (the ankle, fetlock or wrist, not a shin that happens
   to dip low); its two IK segments are the pair of ancestors (upper, lower) within ``MAX_UP``
   levels, none shared with another leg (the pelvis, the spine) nor a trunk with the body below
   it, that maximises the shorter segment (thigh/shin for the biped; the long bones of a horse's
   leg, not the pastern). A leg with one segment of its own swings it round its joint; a foot bone
   outside the hierarchy (an exported IK target) moves alone.
3. **Plant** (:func:`corrections`): a foot vertex is in contact while within ``CONTACT_SHARE`` of
   the figure's height of its *leg's* lowest point (a shin group hanging above a hoof that touches
   the ground is not planted); the leg is planted while any is. Over a planted run the correction
   ``d`` (cm, model frame) is accumulated so that the contact vertices (those in the band at two
   consecutive samples) keep their mean world position, with the root travel the video uses,
   centred on the run (the clip's foot, on average, is where it was drawn); a lift of under
   ``HOP`` of a cycle between two planted runs (an elephant's pad rocking at the edge of the
   band) is held through, the lowest vertex followed. That step-by-step mean is then refined to
   the midrange of what the contact vertices need to sit on their anchors (:func:`_hold`), so
   vertices that move against the rest (a heel skinned half to the shin) miss by half their
   relative travel, not nearly all of it. The foot keeps the
   clip's orientation, so a heel or hoof still rolls about the part that touches the ground.
   ``REFINE`` more passes lock what the previous one left on the re-skinned feet (vertices skinned
   partly to the turned shin, a one-segment swing's second-order miss).
4. **Blend**: after lift-off and before touch-down the correction eases out/in with a smoothstep
   over ``BLEND`` of a cycle (at most half the swing), so the swing foot does not pop.
5. **Solve** (:func:`two_bone`): analytic two-bone IK, the knee kept in the plane of the hip, the
   target and the clip's own knee (the pole), each segment turned by the shortest arc so the
   twist stays the clip's; the end bone and everything below it move with the foot. Bone
   lengths of the pose are kept exactly (rigid rotations); an out-of-reach target stops at
   99.9 % of the reach.

The correction is tabulated at ``LOCK_SAMPLES`` phases (the server's 256 pose steps,
engine/server/characters.py) and interpolated between them; everything is a pure function of
the clip, so a video's frames are the same bytes every run. A foot bone hanging straight off a
shared bone (no segment of its own) is left as the clip draws it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sceneforge.assets_manifest.characters import formats as F
from sceneforge.assets_manifest.characters import motion

LOCK_SAMPLES = 256
STRETCH = 0.05  # a child's origin may wander by 5 % of its distance in its parent's frame
LOOSE = 0.25  # ... and by up to 25 % where no bone keeps it within 5 %
COINCIDE = 0.02  # a bone origin within 2 % of the skeleton's size of another's coincides with it
ANKLE_SHARE = 0.15  # an end bone's joint comes within 15 % of the figure's height of the ground
MAX_UP = 4  # ancestors of the end bone searched for the two IK segments
BLEND = 0.08  # cycles: ease-in before touch-down and ease-out after lift-off
HOP = 0.04  # cycles: a foot lifting for less than this between two planted runs stays planted
HOLD_PASSES = 40  # alternating anchor / correction passes per planted run (:func:`_hold`)
REFINE = 4  # passes that lock what the previous pass left
REACH = 0.999  # a target beyond the leg's reach is met at 99.9 % of it (no straight-knee singularity)


@dataclass(frozen=True)
class Leg:
    """One leg's IK chain (bone indices) and its foot vertices."""

    end: int  # the foot bone: it and its descendants move rigidly with the correction
    lower: int  # the lower IK segment (shin): its joint is the knee (-1: a one-segment leg)
    upper: int  # the upper IK segment (thigh): its joint is the hip, which stays put (-1: the foot moves alone)
    below_end: np.ndarray  # bones moved with the end bone (it included)
    below_lower: np.ndarray  # bones turned by the lower segment's rotation (below_end excluded)
    below_upper: np.ndarray  # bones turned by the upper rotation (below_lower, below_end excluded)
    groups: tuple[np.ndarray, ...]  # the foot's vertex groups (motion.feet's, one per bone on this leg)

    @property
    def vertices(self) -> np.ndarray:
        return np.concatenate(self.groups)


def parents(clips: list[F.Clip]) -> np.ndarray:
    """(B,) inferred parent of every bone (-1: none found), from the clips' model-space states."""
    t = np.concatenate([c.t for c in clips]).astype(np.float64)
    q = np.concatenate([c.q for c in clips])
    inv = np.linalg.inv(F.bone_matrices(t, q))
    size = float(np.ptp(t.reshape(-1, 3), 0).max()) or 1.0
    out = np.full(t.shape[1], -1, int)
    for i in range(1, t.shape[1]):
        # pre-order: the parent is the previous bone or one of its ancestors; past a bone left
        # without a parent, its own candidates (the bone before it and up) go on the path
        path, b = [], i - 1
        while b >= 0:
            path.append(b)
            b = int(out[b]) if out[b] >= 0 else b - 1
        scored = []  # (deviation, depth on the path) of bones at a real distance; coincident ones apart
        coincident = []
        for depth, j in enumerate(path):
            loc = np.einsum("tab,tb->ta", inv[:, j, :3, :3], t[:, i]) + inv[:, j, :3, 3]
            length = float(np.linalg.norm(loc, axis=1).mean())
            if length < COINCIDE * size:
                coincident.append(j)
                continue
            scored.append((round(float(np.abs(loc - loc.mean(0)).max()) / length, 9), depth, j))
        # a bone whose origin coincides with i's holds it still whatever turns, so it is evidence
        # only as the bone right before i (its first child); else the steadiest at a real distance,
        # strict first, then LOOSE (a wolf's toes stretch by ~10 %); else a coincident one
        fits = [c for c in sorted(scored) if c[0] <= STRETCH] or [c for c in sorted(scored) if c[0] <= LOOSE]
        if coincident and coincident[0] == i - 1:
            out[i] = i - 1
        elif fits:
            out[i] = fits[0][2]
        elif coincident:
            out[i] = coincident[0]
    return out


def _descendants(par: np.ndarray, b: int) -> set[int]:
    out, grew = {b}, True
    while grew:
        new = {i for i in range(len(par)) if par[i] in out} - out
        grew = bool(new)
        out |= new
    return out


def _ancestors(par: np.ndarray, b: int) -> list[int]:
    out = []
    while par[b] >= 0 and len(out) < len(par):
        b = int(par[b])
        out.append(b)
    return out


def legs(ch, track: np.ndarray) -> list[Leg]:
    """The legs of character ``ch`` (module docstring, step 2); ``track`` is a
    :func:`motion.body_track` of a walk or run."""
    body = ch.parts[0].mesh
    par = parents([ch.clips[c] for c in sorted(ch.clips)])
    dom = body.bones[np.arange(len(body.bones)), np.argmax(body.weights, 1)]
    groups = {int(dom[g[0]]): g for g in motion.feet(ch, track)}
    # joints' heights: the clip's bone origins in UE cm over the cycle
    clip = ch.clips["walk"] if "walk" in ch.clips else next(iter(ch.clips.values()))
    z = F.to_ue(clip.t.reshape(-1, 3), ch.scale_cm)[:, 2].reshape(clip.t.shape[:2])
    height = float(track[..., 2].max() - track[..., 2].min())
    ground = float(track[..., 2].min())
    # one leg per chain: group bones that are ancestors of another group bone join its leg
    chains: dict[int, list[int]] = {}
    for b in sorted(groups):
        up = set(_ancestors(par, b))
        below = [c for c in groups if c != b and b in _ancestors(par, c)]
        if below:
            continue  # a higher bone of some lower group's leg: gathered from that group
        chains[b] = sorted({b} | {c for c in groups if c in up})
    ends = {}
    for low, members in chains.items():
        low_joint = [m for m in members if z[:, m].min() <= ground + ANKLE_SHARE * height]
        ends[low] = min(low_joint, key=lambda m: len(_ancestors(par, m))) if low_joint else low
    # bones that are ancestors of two legs' ends (pelvis, spine) never move
    count: dict[int, int] = {}
    for e in ends.values():
        for a in _ancestors(par, e):
            count[a] = count.get(a, 0) + 1
    t0 = clip.t[0].astype(np.float64)
    size = float(np.ptp(t0, 0).max()) or 1.0
    out = []
    for low, end in sorted(ends.items()):
        others = set()
        for e2 in ends.values():
            if e2 != end:
                others |= _descendants(par, e2) | {a for a in _ancestors(par, e2) if count.get(a, 0) < 2}
        below_end = _descendants(par, end)
        # a segment of this leg alone: not shared, no other leg below it, not a trunk (the root or a
        # spine has the whole body below it)
        up = [
            a
            for a in _ancestors(par, end)[:MAX_UP]
            if count.get(a, 0) < 2
            and not (_descendants(par, a) & others)
            and len(_descendants(par, a)) <= len(below_end) + 2 * MAX_UP
        ]
        path = [end, *up]  # end, its parent, grandparent, ... (own bones only)
        best, pair = 0.0, None
        for iu in range(2, len(path)):
            for il in range(1, iu):
                a = float(np.linalg.norm(t0[path[il]] - t0[path[iu]]))
                b = float(np.linalg.norm(t0[end] - t0[path[il]]))
                if min(a, b) > best + 1e-9:
                    best, pair = min(a, b), (path[iu], path[il])
        if pair is not None:
            upper, lower = pair
        elif up and np.linalg.norm(t0[end] - t0[up[0]]) > COINCIDE * size:
            upper, lower = up[0], -1  # one segment of its own: it swings the foot round its joint
        elif par[end] < 0:
            upper = lower = -1  # a foot bone outside the hierarchy (an exported IK target): moved alone
        else:
            continue  # hangs straight off a shared bone: left as the clip draws it
        d_end = below_end - others
        d_low = (_descendants(par, lower) - others - d_end) if lower >= 0 else set()
        d_up = (_descendants(par, upper) - others - d_end - d_low) if upper >= 0 else set()
        out.append(
            Leg(
                end,
                lower,
                upper,
                *(np.array(sorted(s), int) for s in (d_end, d_low, d_up)),
                tuple(groups[m] for m in chains[low]),
            )
        )
    return out


def leg_of(ch, lock: FootLock) -> dict[int, int]:
    """{foot group's bone: index of its leg in ``lock``} (for :func:`motion.slides`' ``legs``)."""
    body = ch.parts[0].mesh
    dom = body.bones[np.arange(len(body.bones)), np.argmax(body.weights, 1)]
    return {int(dom[g[0]]): j for j, leg in enumerate(lock.legs) for g in leg.groups}


def _cross(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.array([a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]])


def _shortest_arc(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """3x3 rotation taking direction ``a`` to direction ``b`` by the shortest arc."""
    a = a / np.linalg.norm(a)
    b = b / np.linalg.norm(b)
    v = _cross(a, b)
    c = float(np.dot(a, b))
    s = float(np.linalg.norm(v))
    if s < 1e-12:
        if c > 0:
            return np.eye(3)
        axis = _cross(a, np.array([1.0, 0.0, 0.0] if abs(a[0]) < 0.9 else [0.0, 1.0, 0.0]))
        axis /= np.linalg.norm(axis)
        return 2.0 * np.outer(axis, axis) - np.eye(3)  # half turn
    k = np.array([[0.0, -v[2], v[1]], [v[2], 0.0, -v[0]], [-v[1], v[0], 0.0]])
    return np.eye(3) + k + k @ k * ((1.0 - c) / (s * s))


def two_bone(hip: np.ndarray, knee: np.ndarray, ankle: np.ndarray, target: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Analytic two-bone IK: (R1, R2) 3x3 rotations, R1 about ``hip`` for the upper segment and R2
    about the new knee for the lower one, so that the ankle lands on ``target`` (clamped to the
    reach); the knee stays in the plane of hip, target and the original knee (its pole)."""
    hip, knee, ankle, target = (np.asarray(v, np.float64) for v in (hip, knee, ankle, target))
    a = float(np.linalg.norm(knee - hip))
    b = float(np.linalg.norm(ankle - knee))
    d = target - hip
    dist = float(np.linalg.norm(d))
    if a < 1e-12 or b < 1e-12 or dist < 1e-12:
        return np.eye(3), np.eye(3)
    u = d / dist
    dist = float(np.clip(dist, abs(a - b) * (2.0 - REACH) + 1e-12, (a + b) * REACH))
    pole = (knee - hip) - np.dot(knee - hip, u) * u
    if np.linalg.norm(pole) < 1e-9 * a:  # the clip's leg is straight along the target: bend as it would
        pole = (ankle - knee) - np.dot(ankle - knee, u) * u
        pole = (
            -pole
            if np.linalg.norm(pole) > 1e-12
            else _cross(u, np.array([1.0, 0.0, 0.0] if abs(u[0]) < 0.9 else [0.0, 0.0, 1.0]))
        )
    v = pole / np.linalg.norm(pole)
    cos_h = float(np.clip((a * a + dist * dist - b * b) / (2.0 * a * dist), -1.0, 1.0))
    new_knee = hip + a * (cos_h * u + np.sqrt(1.0 - cos_h * cos_h) * v)
    r1 = _shortest_arc(knee - hip, new_knee - hip)
    r2 = _shortest_arc(r1 @ (ankle - knee), hip + u * dist - new_knee)
    return r1, r2


def solve(pose: np.ndarray, leg: Leg, shift: np.ndarray) -> np.ndarray:
    """``pose`` (B,4,4 model-space bone matrices, data units) with ``leg``'s end bone moved by
    ``shift`` (data units) keeping its orientation: the two segments turned to reach it (a leg of
    one segment swings round its joint towards it, keeping its length; a foot outside the
    hierarchy is moved alone)."""
    out = pose.copy()
    ankle = pose[leg.end, :3, 3]
    if leg.upper < 0:
        reached = ankle + shift
    elif leg.lower < 0:
        hip = pose[leg.upper, :3, 3]
        r1 = _shortest_arc(ankle - hip, ankle + shift - hip)
        m1 = np.eye(4)
        m1[:3, :3], m1[:3, 3] = r1, hip - r1 @ hip
        reached = hip + r1 @ (ankle - hip)
        for b in leg.below_upper:
            out[b] = m1 @ pose[b]
    else:
        hip, knee = pose[leg.upper, :3, 3], pose[leg.lower, :3, 3]
        r1, r2 = two_bone(hip, knee, ankle, ankle + shift)
        new_knee = hip + r1 @ (knee - hip)
        m1 = np.eye(4)
        m1[:3, :3], m1[:3, 3] = r1, hip - r1 @ hip
        m2 = np.eye(4)
        m2[:3, :3], m2[:3, 3] = r2, new_knee - r2 @ new_knee
        reached = new_knee + r2 @ (r1 @ (ankle - knee))
        for b in leg.below_upper:
            out[b] = m1 @ pose[b]
        for b in leg.below_lower:
            out[b] = m2 @ m1 @ pose[b]
    for b in leg.below_end:
        out[b] = pose[b].copy()
        out[b, :3, 3] += reached - ankle  # the foot keeps the clip's orientation (its roll)
    return out


def _smooth(x: np.ndarray) -> np.ndarray:
    x = np.clip(x, 0.0, 1.0)
    return x * x * (3.0 - 2.0 * x)


@dataclass(frozen=True)
class FootLock:
    """Per-leg corrections of one clip, tabulated over its cycle."""

    clip: str
    legs: tuple[Leg, ...]
    shift: np.ndarray  # (L, LOCK_SAMPLES, 3) end-bone shift per leg and sample, data units
    source: F.Clip

    def bones(self, phase: float, pose: np.ndarray | None = None) -> np.ndarray:
        """(B,4,4) model-space bone matrices at ``phase`` with the feet locked (``pose``: the
        clip's own at ``phase``, when the caller has it)."""
        pose = F.pose_at(self.source, phase) if pose is None else pose
        n = self.shift.shape[1]
        f = (float(phase) % 1.0) * n
        k0 = int(f) % n
        a = f - int(f)
        for j, leg in enumerate(self.legs):
            s = (1.0 - a) * self.shift[j, k0] + a * self.shift[j, (k0 + 1) % n]
            if np.any(s):
                pose = solve(pose, leg, s)
        return pose


def _hold(world: np.ndarray, touch: np.ndarray, d: np.ndarray) -> np.ndarray:
    """(R, 2) corrections over one planted run that hold every contact vertex near one point.

    ``world``: (R, n, 2) the leg's vertices' horizontal world positions without the correction,
    ``touch``: (R, n) which are in contact, ``d``: the step-by-step start. Alternating passes:
    each vertex's anchor is the centre (per axis, the midrange) of its corrected trail while in
    contact; each sample's correction the midrange of what its contact vertices need to sit on
    their anchors. The midrange minimises the largest miss (what a slide measures) where vertices
    skinned partly to the sweeping shin (a heel) move against the rigid sole: the mean lets the
    few deforming vertices drift by nearly their whole relative travel, the midrange by half of it.
    Samples without a contact vertex keep the start's shape, shifted to meet their neighbours."""
    d = d.copy()
    have = touch.any(1)
    if have.sum() < 2 or not touch.any():
        return d
    big = 1e30  # masks the vertices out of contact in the min/max
    for _ in range(HOLD_PASSES):
        w = world + d[:, None, :]
        lo = np.where(touch[..., None], w, big).min(0)
        hi = np.where(touch[..., None], w, -big).max(0)
        anchor = np.where(touch.any(0)[:, None], 0.5 * (lo + hi), 0.0)  # (n, 2); never in contact: unused
        need = anchor[None] - world  # (R, n, 2) the correction that puts each vertex on its anchor
        lo = np.where(touch[..., None], need, big).min(1)
        hi = np.where(touch[..., None], need, -big).max(1)
        new = np.where(have[:, None], 0.5 * (lo + hi), d)
        if not have.all():  # bridge samples without contact: the start's shape, ends met linearly
            idx = np.arange(len(d))
            delta = new - d
            for a in range(2):
                delta[~have, a] = np.interp(idx[~have], idx[have], delta[have, a])
            new = d + delta
        d = new
    return d


def corrections(
    ch, clip: str, m: motion.ClipMotion, track: np.ndarray, leg_list: list[Leg], tol: float | None = None
) -> np.ndarray:
    """(L, S, 3) UE-cm corrections of each leg's foot over the ``S`` samples of ``track``
    (module docstring, steps 3-4)."""
    samples = len(track)
    z = track[..., 2]
    if tol is None:
        tol = max(motion.CONTACT_SHARE * float(z.max() - z.min()), 0.5)
    root = m.root_cm(np.arange(samples) / samples)
    out = np.zeros((len(leg_list), samples, 3))
    for j, leg in enumerate(leg_list):
        v = leg.vertices
        # each group against its own ground (the lowest it reaches), as motion.analyse measures it
        top = float(z[:, v].min()) + tol  # the leg's ground: its lowest point over the cycle
        touching = z[:, v] <= top  # (S, n) vertex in its contact band
        stance = touching.any(1)
        # a lift shorter than HOP of a cycle between two planted runs (a broad pad rocking at the
        # edge of the band) is held through: releasing and re-taking the foot for a few samples,
        # each run centred on itself, would jump the foot by the difference of the two
        if stance.any():
            for r in motion._runs(~stance):
                if len(r) < HOP * samples:
                    stance[r] = True
        runs = [r for r in motion._runs(stance) if len(r) < samples]
        planted = np.zeros(samples, bool)
        for r in runs:
            if len(r) < motion.MIN_RUN:
                continue
            rt = np.array([root[k] if k >= r[0] else root[k] + m.stride_cm for k in r])
            d = np.zeros((len(r), 3))
            for i in range(1, len(r)):
                k0, k1 = r[i - 1], r[i]
                c = v[touching[k0] & touching[k1]]
                if not len(c):  # the contact moved on (heel to toe): follow the vertex now lowest
                    c = v[[np.argmin(z[k1, v])]]
                step = track[k0, c, :2].mean(0) - track[k1, c, :2].mean(0)
                step[0] += rt[i - 1] - rt[i]
                d[i, :2] = d[i - 1, :2] + step
            d[:, :2] = _hold(track[r][:, v, :2] + np.column_stack([rt, np.zeros(len(r))])[:, None, :], touching[r], d[:, :2])
            d[:, :2] -= d[:, :2].mean(0)
            out[j, r] = d
            planted[r] = True
        if not planted.any():
            continue
        # ease in/out over the swing gaps between planted runs
        window = max(1, int(round(BLEND * samples)))
        free = [r for r in motion._runs(~planted)]
        for r in free:
            n = len(r)
            before, after = (r[0] - 1) % samples, (r[-1] + 1) % samples
            w = min(window, n // 2) if n > 1 else 1
            i = np.arange(1, n + 1)
            out_w = _smooth(1.0 - i / (w + 1.0)) * (i <= w)
            in_w = _smooth(1.0 - (n + 1 - i) / (w + 1.0)) * ((n + 1 - i) <= w)
            out[j, r] = out_w[:, None] * out[j, before] + in_w[:, None] * out[j, after]
    return out


def lock(ch, clip: str, m: motion.ClipMotion | None = None, samples: int = LOCK_SAMPLES) -> FootLock:
    """The foot lock of ``ch``'s ``clip`` (module docstring); ``m``: its root motion
    (:func:`motion.analyse`, computed when not given)."""
    m = m if m is not None else motion.analyse(ch, clip)
    track = motion.body_track(ch, clip, samples)
    leg_list = legs(ch, track)
    if not leg_list or m.stride_cm <= 0:
        return FootLock(clip, (), np.zeros((0, samples, 3)), ch.clips[clip])
    data = np.zeros((len(leg_list), samples, 3))
    body = ch.parts[0].mesh
    z = track[..., 2]
    tol = max(motion.CONTACT_SHARE * float(z.max() - z.min()), 0.5)
    foot = np.unique(np.concatenate([leg.vertices for leg in leg_list]))
    idx, w = F.blend_weights(body)
    idx, w, rest = idx[foot], w[foot], body.positions[foot].astype(np.float64)
    unbind = np.linalg.inv(F.bone_matrices(body.bind_t, body.bind_q))
    poses = [F.pose_at(ch.clips[clip], k / samples) for k in range(samples)]
    for it in range(1 + REFINE):
        if it:  # what is left on the locked track (the feet re-skinned): vertices skinned partly
            # to the turned shin, a one-segment swing's second-order miss
            held = FootLock(clip, tuple(leg_list), data, ch.clips[clip])
            track = track.copy()
            for k in range(samples):
                skin = np.concatenate([held.bones(k / samples, poses[k]) @ unbind, np.eye(4)[None]])  # formats.skin_matrices
                mats = np.einsum("nk,nkij->nij", w, skin[idx])
                track[k, foot] = F.to_ue(np.einsum("nij,nj->ni", mats[:, :3, :3], rest) + mats[:, :3, 3], ch.scale_cm)
        cm = corrections(ch, clip, m, track, leg_list, tol)
        data = data + cm @ F.TO_UE / ch.scale_cm  # UE cm -> data units (TO_UE is orthonormal: its inverse is its transpose)
    return FootLock(clip, tuple(leg_list), data, ch.clips[clip])
