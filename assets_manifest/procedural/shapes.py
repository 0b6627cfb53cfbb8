"""Coloured primitive parts assembled into one :class:`RenderMesh` (cm, UE axes).

Generators describe an object as a list of parts (a box here, a capsule there), each with a flat
albedo. Keeping parts as separate vertex sets gives crisp colour borders without textures and keeps
triangle counts low, which is what the CPU rasterizer pays for.
"""

from __future__ import annotations

import numpy as np
import trimesh

from sceneforge.core.meshes import RenderMesh

RGB = tuple[int, int, int]


class Builder:
    """Accumulates coloured parts; ``mesh()`` returns a grounded, XY-centred RenderMesh."""

    def __init__(self) -> None:
        self._parts: list[tuple[np.ndarray, np.ndarray, RGB]] = []

    def add(self, mesh: trimesh.Trimesh, color: RGB, at=(0, 0, 0), rot: np.ndarray | None = None, scale=(1, 1, 1)) -> "Builder":
        """Add ``mesh`` scaled, then rotated (3x3), then moved to ``at`` (cm)."""
        v = np.asarray(mesh.vertices, float) * np.asarray(scale, float)
        if rot is not None:
            v = v @ np.asarray(rot, float).T
        self._parts.append((v + np.asarray(at, float), np.asarray(mesh.faces), tuple(color)))
        return self

    def box(self, size, color: RGB, at=(0, 0, 0), rot=None) -> "Builder":
        """Axis-aligned box of ``size`` (dx, dy, dz) centred at ``at``."""
        return self.add(trimesh.creation.box(extents=size), color, at, rot)

    def cyl(self, radius: float, height: float, color: RGB, at=(0, 0, 0), rot=None, sections: int = 12) -> "Builder":
        """Cylinder along local Z centred at ``at``."""
        return self.add(trimesh.creation.cylinder(radius=radius, height=height, sections=sections), color, at, rot)

    def cone(self, radius: float, height: float, color: RGB, at=(0, 0, 0), rot=None, sections: int = 12) -> "Builder":
        """Cone with its base at ``at`` and apex ``height`` above (local Z)."""
        return self.add(trimesh.creation.cone(radius=radius, height=height, sections=sections), color, at, rot)

    def sphere(self, radius: float, color: RGB, at=(0, 0, 0), scale=(1, 1, 1), subdiv: int = 1) -> "Builder":
        return self.add(trimesh.creation.icosphere(subdivisions=subdiv, radius=radius), color, at, None, scale)

    def capsule(self, radius: float, length: float, color: RGB, a, b, count=(8, 8)) -> "Builder":
        """Capsule from point ``a`` to point ``b`` (cm); ``length`` is ignored if a != b."""
        a, b = np.asarray(a, float), np.asarray(b, float)
        d = b - a
        h = float(np.linalg.norm(d)) or length
        cap = trimesh.creation.capsule(height=h, radius=radius, count=list(count))
        return self.add(cap, color, (a + b) / 2, rot=align_z(d))

    def rod(self, radius: float, color: RGB, a, b, sections: int = 8) -> "Builder":
        """Cylinder from ``a`` to ``b``."""
        a, b = np.asarray(a, float), np.asarray(b, float)
        h = float(np.linalg.norm(b - a))
        return self.cyl(radius, h, color, at=(a + b) / 2, rot=align_z(b - a), sections=sections)

    def torus(self, major: float, minor: float, color: RGB, at=(0, 0, 0), rot=None) -> "Builder":
        t = trimesh.creation.torus(major_radius=major, minor_radius=minor, major_sections=16, minor_sections=6)
        return self.add(t, color, at, rot)

    def mesh(self, center: bool = True) -> RenderMesh:
        """Concatenate parts, put the base on z = 0 and (optionally) centre the XY bounding box."""
        vs, fs, cs, off = [], [], [], 0
        for v, f, c in self._parts:
            vs.append(v)
            fs.append(f + off)
            cs.append(np.tile(np.asarray(c, np.uint8), (len(v), 1)))
            off += len(v)
        v = np.concatenate(vs)
        lo, hi = v.min(axis=0), v.max(axis=0)
        shift = np.array([(lo[0] + hi[0]) / 2 if center else 0, (lo[1] + hi[1]) / 2 if center else 0, lo[2]])
        return RenderMesh(v - shift, np.concatenate(fs), np.concatenate(cs))


def align_z(direction) -> np.ndarray:
    """3x3 rotation taking +Z onto ``direction``."""
    d = np.asarray(direction, float)
    n = np.linalg.norm(d)
    if n == 0:
        return np.eye(3)
    return trimesh.geometry.align_vectors([0, 0, 1], d / n)[:3, :3]


def rot_x(deg: float) -> np.ndarray:
    return trimesh.transformations.rotation_matrix(np.radians(deg), [1, 0, 0])[:3, :3]


def rot_y(deg: float) -> np.ndarray:
    return trimesh.transformations.rotation_matrix(np.radians(deg), [0, 1, 0])[:3, :3]


def rot_z(deg: float) -> np.ndarray:
    return trimesh.transformations.rotation_matrix(np.radians(deg), [0, 0, 1])[:3, :3]


def jitter(mesh: trimesh.Trimesh, amount: float, seed: int) -> trimesh.Trimesh:
    """Displace vertices radially by smooth-ish noise (rocks, bushes); deterministic per seed."""
    rng = np.random.default_rng(seed)
    v = np.asarray(mesh.vertices, float)
    dirs = v / (np.linalg.norm(v, axis=1, keepdims=True) + 1e-9)
    waves = rng.normal(size=(8, 3)) * np.repeat([1.5, 4.0], 4)[:, None]
    phase = rng.uniform(0, 2 * np.pi, size=8)
    gains = np.repeat([1.0, 0.45], 4)
    noise = sum(g * np.sin(dirs @ w + p) for g, w, p in zip(gains, waves, phase)) / 3
    return trimesh.Trimesh(v * (1 + amount * noise)[:, None], mesh.faces, process=False)


def shade(color: RGB, factor: float) -> RGB:
    """A lighter/darker variant of ``color`` (for secondary parts)."""
    return tuple(int(np.clip(c * factor, 0, 255)) for c in color)  # type: ignore[return-value]


def ridge_prism(length: float, width: float, height: float) -> trimesh.Trimesh:
    """Triangular prism along X (a tent / roof): base ``width`` on z = 0, ridge at ``height``."""
    x0, x1, w = -length / 2, length / 2, width / 2
    v = np.array([[x0, -w, 0], [x0, w, 0], [x0, 0, height], [x1, -w, 0], [x1, w, 0], [x1, 0, height]], float)
    f = np.array([[0, 1, 2], [3, 5, 4], [0, 3, 4], [0, 4, 1], [1, 4, 5], [1, 5, 2], [2, 5, 3], [2, 3, 0]])
    return trimesh.Trimesh(v, f, process=False)
