"""Rocks, trees (conifer and broadleaf), saguaro cacti, bushes and dunes."""

from __future__ import annotations

import numpy as np
import trimesh

from sceneforge.assets_manifest.procedural.registry import register
from sceneforge.assets_manifest.procedural.shapes import Builder, jitter, shade
from sceneforge.core.meshes import RenderMesh

BARK = (101, 72, 45)


@register("rock")
def rock(size_cm: float = 120.0, flatness: float = 0.65, seed: int = 0, color=(128, 124, 118)) -> RenderMesh:
    """A lumpy boulder: a noisy icosphere squashed vertically, its bottom buried flat."""
    ico = jitter(trimesh.creation.icosphere(subdivisions=2, radius=0.5), 0.35, seed)
    rng = np.random.default_rng(seed + 101)
    aspect = (1.0, rng.uniform(0.7, 0.95), flatness)
    b = Builder().add(ico, color, scale=np.asarray(aspect) * size_cm)
    m = b.mesh()
    v = m.vertices.copy()
    v[:, 2] = np.maximum(v[:, 2] - 0.12 * v[:, 2].max(), 0)  # sink the base a little
    shadeable = (m.colors.astype(float) * (0.85 + 0.3 * (v[:, 2:3] / max(v[:, 2].max(), 1)))).clip(0, 255)
    return RenderMesh(v, m.faces, shadeable.astype(np.uint8))


@register("conifer")
def conifer(height_cm: float = 900.0, tiers: int = 4, color=(38, 92, 52), snow: bool = False) -> RenderMesh:
    """Spruce-like: a trunk and ``tiers`` stacked cones narrowing to the top."""
    b = Builder()
    trunk_h = 0.18 * height_cm
    b.cyl(0.035 * height_cm, trunk_h, BARK, at=(0, 0, trunk_h / 2), sections=8)
    crown_h = height_cm - trunk_h * 0.6
    for i in range(tiers):
        frac = i / tiers
        r = 0.24 * height_cm * (1 - 0.7 * frac)
        base = trunk_h * 0.6 + frac * crown_h * 0.78
        h = crown_h * (0.42 - 0.06 * frac)
        col = shade(color, 0.9 + 0.08 * i)
        b.cone(r, h, col, at=(0, 0, base), sections=12)
        if snow:
            b.cone(r * 0.55, h * 0.45, (235, 240, 245), at=(0, 0, base + h * 0.56), sections=12)
    return b.mesh()


@register("broadleaf")
def broadleaf(height_cm: float = 800.0, color=(70, 120, 45), seed: int = 1) -> RenderMesh:
    """Oak-like: trunk, two branches and a crown of overlapping noisy spheres."""
    rng = np.random.default_rng(seed)
    b = Builder()
    trunk_h = 0.45 * height_cm
    b.cyl(0.05 * height_cm, trunk_h, BARK, at=(0, 0, trunk_h / 2), sections=8)
    crown_r = 0.26 * height_cm
    centre = np.array([0, 0, height_cm - crown_r])
    for i in range(5):
        off = rng.normal(size=3) * np.array([0.45, 0.45, 0.25]) * crown_r
        r = crown_r * rng.uniform(0.55, 0.8)
        lump = jitter(trimesh.creation.icosphere(subdivisions=1, radius=r), 0.15, seed + i)
        b.add(lump, shade(color, rng.uniform(0.85, 1.12)), at=centre + off)
    return b.mesh()


@register("saguaro")
def saguaro(height_cm: float = 450.0, arms: int = 2, color=(62, 120, 60), seed: int = 0) -> RenderMesh:
    """Saguaro cactus from capsules: a tall trunk and ``arms`` bent arms turning upward."""
    rng = np.random.default_rng(seed)
    r = 0.075 * height_cm
    b = Builder().capsule(r, 0, color, (0, 0, r), (0, 0, height_cm - r), count=(10, 6))
    for i in range(arms):
        side = 1 if i % 2 == 0 else -1
        z0 = height_cm * rng.uniform(0.35, 0.55)
        reach = height_cm * rng.uniform(0.16, 0.22)
        ar = r * 0.7
        elbow = (0, side * reach, z0 + reach * 0.2)
        top = (0, side * reach, z0 + height_cm * rng.uniform(0.22, 0.32))
        b.capsule(ar, 0, shade(color, 0.95), (0, 0, z0), elbow, count=(8, 4))
        b.capsule(ar, 0, shade(color, 0.95), elbow, top, count=(8, 4))
    return b.mesh()


@register("bush")
def bush(size_cm: float = 150.0, color=(60, 105, 50), seed: int = 2) -> RenderMesh:
    rng = np.random.default_rng(seed)
    b = Builder()
    for i in range(3):
        lump = jitter(trimesh.creation.icosphere(subdivisions=1, radius=size_cm * 0.35), 0.2, seed + i)
        off = (rng.uniform(-0.25, 0.25) * size_cm, rng.uniform(-0.25, 0.25) * size_cm, size_cm * 0.3)
        b.add(lump, shade(color, rng.uniform(0.85, 1.1)), at=off, scale=(1, 1, 0.8))
    return b.mesh()


@register("dune")
def dune(length_cm: float = 3000.0, height_cm: float = 300.0, color=(214, 184, 130), seed: int = 0) -> RenderMesh:
    """A transverse sand dune: a long gentle windward slope (-Y side) up to a sharp, slightly
    curved crest, then a steep slip face (+Y side), tapering to nothing at both ends. A height
    field, so it has no underside; its sand colour is textured with the library's ``sand``
    surface (``procedural/pbr.py``), the same as the desert floor it grows out of."""
    rng = np.random.default_rng(seed)
    L, H = length_cm, height_cm
    wind, lee = 2.6 * H * 1.8, 1.0 * H * 1.5  # horizontal run of the two slopes
    nx, ny = 33, 21
    u = np.linspace(-1, 1, nx)  # along the crest
    t = np.linspace(0, 1, ny)  # across: windward foot → crest → lee foot
    crest = 0.5 * L * 0.18 * (u**2) + rng.uniform(-0.03, 0.03) * L * u  # crest bows downwind
    envelope = np.cos(0.5 * np.pi * u) ** 1.5  # height tapers to 0 at both ends
    xs, ys, zs = [], [], []
    for i in range(nx):
        h = H * envelope[i]
        for j in range(ny):
            if t[j] <= 0.72:  # windward: smooth rise to the crest
                s = t[j] / 0.72
                y = -wind + s * wind
                z = h * (3 * s**2 - 2 * s**3)
            else:  # slip face: steep, nearly straight fall
                s = (t[j] - 0.72) / 0.28
                y = s * lee
                z = h * (1 - s) ** 1.3
            xs.append(0.5 * L * u[i])
            ys.append(y + crest[i] * (1 - 0.5 * abs(u[i])))
            zs.append(z)
    v = np.stack([xs, ys, zs], 1)
    f = []
    for i in range(nx - 1):
        for j in range(ny - 1):
            a, b, c, d = i * ny + j, (i + 1) * ny + j, (i + 1) * ny + j + 1, i * ny + j + 1
            f += [[a, b, c], [a, c, d]]
    m = trimesh.Trimesh(v, np.array(f), process=False)
    if m.face_normals[:, 2].mean() < 0:
        m.invert()
    return Builder().add(m, color).mesh()
