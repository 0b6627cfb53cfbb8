"""0 A.D.'s skinned-mesh and animation formats, and linear-blend skinning (numpy).

* **PMD** (``PSMD``, versions 3-4): vertices stored *in the bind pose* (position, normal, UV
  sets, four bone ids with 0xFF = none, four weights), uint16 triangles, the bind pose as one
  model-space bone state per bone, then prop points (name, translation, rotation, bone).
* **PSA** (``PSSA`` v1): a clip: name, frame length (ms), then per frame one *model-space* bone
  state per bone (not relative to the parent). A bone state is a translation (3 floats) and a
  unit quaternion (x, y, z, w); its matrix is ``T(t) R(q)`` (column vectors).

PMD bone *i* is PSA bone *i* (both follow the skeleton's standard order), so a clip plays on
every mesh of the same skeleton. Skinning: ``v' = sum_k w_k P[b_k] B[b_k]^-1 v`` with ``B`` the
bind pose and ``P`` the clip's pose; normals by the 3x3 part, renormalised. Sampling a clip at
phase ``p`` in [0, 1): frame ``f = p N``, translations lerped and rotations slerped between
frame ``floor(f)`` and the next (wrapping), as the game does.

Axes: the data is left-handed, Y up, the model faces -Z. :func:`to_ue` maps a point to
sceneforge's UE axes (cm, X forward, Y right, Z up) for a model of ``scale_cm`` per unit:
``(x, y, z) -> (-z, -x, y) * scale`` (forward = -Z, right = -X, up = Y: a proper rotation of the
left-handed data into the left-handed UE frame, so triangles keep their winding).

All little-endian. Own implementation after the format notes in shared research (issue 49).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

import numpy as np

from sceneforge.core.errors import AssetError

BONE = np.dtype([("t", "<f4", 3), ("q", "<f4", 4)])  # a bone state: translation + quaternion (x, y, z, w)
NO_BONE = 0xFF
# PMD/PSA axes (x, y, z) -> UE (forward, right, up): forward = -z, right = -x, up = +y
TO_UE = np.array([[0.0, 0.0, -1.0], [-1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])


@dataclass
class SkinnedMesh:
    """A PMD mesh: bind-pose vertices, skin weights, triangles, the bind pose and prop points."""

    positions: np.ndarray  # (N,3) float32, bind pose, model units
    normals: np.ndarray  # (N,3)
    uvs: np.ndarray  # (N,S,2) S UV sets
    bones: np.ndarray  # (N,4) int32, -1 = no bone
    weights: np.ndarray  # (N,4) float32
    faces: np.ndarray  # (F,3) int32
    bind_t: np.ndarray  # (B,3)
    bind_q: np.ndarray  # (B,4)
    props: list = field(default_factory=list)  # [(name, t (3,), q (4,), bone or -1)]
    version: int = 4

    @property
    def n_bones(self) -> int:
        return len(self.bind_t)

    @property
    def skinned(self) -> bool:
        return bool((self.bones >= 0).any())


@dataclass
class Clip:
    """A PSA animation: per-frame model-space bone states."""

    name: str
    frame_ms: float
    t: np.ndarray  # (frames, bones, 3)
    q: np.ndarray  # (frames, bones, 4)

    @property
    def n_frames(self) -> int:
        return int(self.t.shape[0])

    @property
    def n_bones(self) -> int:
        return int(self.t.shape[1])

    @property
    def duration_s(self) -> float:
        return self.n_frames * self.frame_ms / 1000.0


def _need(buf: bytes, off: int, n: int, what: str) -> None:
    if off + n > len(buf):
        raise AssetError(f"truncated {what}: needs {off + n} bytes, has {len(buf)}")


def read_pmd(buf: bytes) -> SkinnedMesh:
    """Parse PMD bytes (versions 3 and 4)."""
    if buf[:4] != b"PSMD":
        raise AssetError(f"not a PMD mesh (magic {bytes(buf[:4])!r})")
    _need(buf, 0, 16, "PMD header")
    version, _size, nv = struct.unpack_from("<III", buf, 4)
    if version not in (3, 4):
        raise AssetError(f"PMD version {version} not supported (3 or 4)")
    off = 16
    n_uv = 1
    if version >= 4:
        _need(buf, off, 4, "PMD header")
        (n_uv,) = struct.unpack_from("<I", buf, off)
        off += 4
    vdt = np.dtype([("p", "<f4", 3), ("n", "<f4", 3), ("uv", "<f4", (n_uv, 2)), ("b", "u1", 4), ("w", "<f4", 4)])
    _need(buf, off, nv * vdt.itemsize + 4, "PMD vertices")
    v = np.frombuffer(buf, vdt, nv, off)
    off += nv * vdt.itemsize
    (nf,) = struct.unpack_from("<I", buf, off)
    off += 4
    _need(buf, off, nf * 6 + 4, "PMD faces")
    faces = np.frombuffer(buf, "<u2", nf * 3, off).reshape(nf, 3).astype(np.int32)
    off += nf * 6
    (nb,) = struct.unpack_from("<I", buf, off)
    off += 4
    _need(buf, off, nb * BONE.itemsize, "PMD bind pose")
    bind = np.frombuffer(buf, BONE, nb, off)
    off += nb * BONE.itemsize
    props = []
    if off + 4 <= len(buf):
        (npp,) = struct.unpack_from("<I", buf, off)
        off += 4
        for _ in range(npp):
            _need(buf, off, 4, "PMD prop point")
            (ln,) = struct.unpack_from("<I", buf, off)
            off += 4
            _need(buf, off, ln + 29, "PMD prop point")
            name = bytes(buf[off : off + ln]).decode("latin-1")
            off += ln
            t = np.array(struct.unpack_from("<3f", buf, off), np.float32)
            q = np.array(struct.unpack_from("<4f", buf, off + 12), np.float32)
            bone = buf[off + 28]
            off += 29
            props.append((name, t, q, -1 if bone == NO_BONE else int(bone)))
    bones = v["b"].astype(np.int32)
    bones[bones == NO_BONE] = -1
    if nb and bones.max(initial=-1) >= nb:
        raise AssetError(f"PMD vertex names bone {int(bones.max())} of {nb}")
    if nf and faces.max() >= nv:
        raise AssetError(f"PMD face names vertex {int(faces.max())} of {nv}")
    return SkinnedMesh(
        v["p"].copy(),
        v["n"].copy(),
        v["uv"].copy(),
        bones,
        v["w"].copy(),
        faces,
        bind["t"].copy(),
        bind["q"].copy(),
        props,
        version,
    )


def read_psa(buf: bytes) -> Clip:
    """Parse PSA bytes (version 1)."""
    if buf[:4] != b"PSSA":
        raise AssetError(f"not a PSA animation (magic {bytes(buf[:4])!r})")
    _need(buf, 0, 16, "PSA header")
    _version, _size, ln = struct.unpack_from("<III", buf, 4)
    off = 16
    _need(buf, off, ln + 12, "PSA header")
    name = bytes(buf[off : off + ln]).decode("latin-1")
    off += ln
    frame_ms, nb, nfr = struct.unpack_from("<fII", buf, off)
    off += 12
    _need(buf, off, nb * nfr * BONE.itemsize, "PSA frames")
    k = np.frombuffer(buf, BONE, nb * nfr, off).reshape(nfr, nb)
    return Clip(name, float(frame_ms), k["t"].copy(), k["q"].copy())


def quat_matrix(q: np.ndarray) -> np.ndarray:
    """(...,4) quaternions (x, y, z, w) -> (...,3,3) rotation matrices (column vectors)."""
    q = np.asarray(q, np.float64)
    q = q / np.linalg.norm(q, axis=-1, keepdims=True)
    x, y, z, w = np.moveaxis(q, -1, 0)
    return np.stack(
        [
            np.stack([1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)], -1),
            np.stack([2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)], -1),
            np.stack([2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)], -1),
        ],
        -2,
    )


def bone_matrices(t: np.ndarray, q: np.ndarray) -> np.ndarray:
    """(...,3), (...,4) -> (...,4,4) affine ``T(t) R(q)``."""
    t = np.asarray(t, np.float64)
    m = np.zeros(t.shape[:-1] + (4, 4))
    m[..., :3, :3] = quat_matrix(q)
    m[..., :3, 3] = t
    m[..., 3, 3] = 1.0
    return m


def slerp(q0: np.ndarray, q1: np.ndarray, a: float) -> np.ndarray:
    """Per-row spherical interpolation of (B,4) quaternions (shortest arc)."""
    q0, q1 = np.asarray(q0, np.float64), np.asarray(q1, np.float64)
    d = np.sum(q0 * q1, -1, keepdims=True)
    q1 = np.where(d < 0, -q1, q1)
    d = np.abs(d)
    th = np.arccos(np.clip(d, -1.0, 1.0))
    s = np.sin(th)
    lin = s < 1e-6
    w0 = np.where(lin, 1.0 - a, np.sin((1.0 - a) * th) / np.where(lin, 1.0, s))
    w1 = np.where(lin, a, np.sin(a * th) / np.where(lin, 1.0, s))
    return w0 * q0 + w1 * q1


def pose_at(clip: Clip, phase: float) -> np.ndarray:
    """(B,4,4) model-space bone matrices of ``clip`` at cycle phase ``phase`` (wraps)."""
    n = clip.n_frames
    f = (float(phase) % 1.0) * n
    k0 = int(f) % n
    k1 = (k0 + 1) % n
    a = f - int(f)
    t = (1.0 - a) * clip.t[k0].astype(np.float64) + a * clip.t[k1].astype(np.float64)
    return bone_matrices(t, slerp(clip.q[k0], clip.q[k1], a))


def skin_matrices(mesh: SkinnedMesh, pose: np.ndarray) -> np.ndarray:
    """(B+1,4,4) per-bone skinning matrices ``P B^-1``; the last row is the identity (no bone)."""
    if len(pose) != mesh.n_bones:
        raise AssetError(f"pose has {len(pose)} bones, the mesh {mesh.n_bones}")
    s = pose @ np.linalg.inv(bone_matrices(mesh.bind_t, mesh.bind_q))
    return np.concatenate([s, np.eye(4)[None]], 0)


def blend_weights(mesh: SkinnedMesh) -> tuple[np.ndarray, np.ndarray]:
    """(N,4) bone index (no bone -> the identity row B) and normalised weights; a vertex with no
    bone at all gets weight 1 on the identity (it stays where it is)."""
    nb = mesh.n_bones
    idx = np.where(mesh.bones < 0, nb, mesh.bones)
    w = np.where(mesh.bones < 0, 0.0, mesh.weights.astype(np.float64))
    total = w.sum(1, keepdims=True)
    w = np.where(total > 1e-8, w / np.maximum(total, 1e-8), 0.0)
    w[total[:, 0] <= 1e-8, 0] = 1.0
    idx[total[:, 0] <= 1e-8, 0] = nb
    return idx, w


def skin(mesh: SkinnedMesh, pose: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Linear-blend skinning: (N,3) positions and (N,3) unit normals in model units."""
    s = skin_matrices(mesh, pose)
    idx, w = blend_weights(mesh)
    m = np.einsum("nk,nkij->nij", w, s[idx])
    p = np.einsum("nij,nj->ni", m[:, :3, :3], mesh.positions.astype(np.float64)) + m[:, :3, 3]
    n = np.einsum("nij,nj->ni", m[:, :3, :3], mesh.normals.astype(np.float64))
    n /= np.maximum(np.linalg.norm(n, axis=1, keepdims=True), 1e-12)
    return p, n


def to_ue(points: np.ndarray, scale_cm: float) -> np.ndarray:
    """Model-unit points (N,3) in the data's axes -> UE cm (X forward, Y right, Z up)."""
    return (np.asarray(points, np.float64) @ TO_UE.T) * float(scale_cm)
