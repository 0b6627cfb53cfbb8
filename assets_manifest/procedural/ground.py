"""Flat ground features that environments lay as landmarks: a street crossing and a pond.

They are meshes, not ground textures, so every renderer (ours, Cycles, a UE5 level) draws them;
they lie within a few centimetres of z = 0, so objects stand on them, and environments mark them
``flat`` (walkable: they do not block clutter placement). Colours double as material keys:
``procedural/pbr.py`` maps them to the library's surfaces (asphalt, paving, water).
"""

from __future__ import annotations

import numpy as np
import trimesh

from sceneforge.assets_manifest.procedural.registry import register
from sceneforge.assets_manifest.procedural.shapes import Builder
from sceneforge.core.meshes import RenderMesh

ASPHALT = (64, 64, 68)  # → surface "asphalt"
PAVING = (150, 146, 140)  # → surface "paving"
KERB = (170, 168, 162)  # → surface "stone_tiles"
MARKING = (235, 235, 228)  # road paint
WATER = (40, 70, 86)  # → surface "water"
BANK = (110, 98, 76)  # → surface "dirt"


@register("street_crossing")
def street_crossing(half_extent_cm: float = 9000.0, road_width_cm: float = 1000.0, kerb_cm: float = 12.0) -> RenderMesh:
    """Two roads crossing at the origin (along X and Y) with dashed centre lines, zebra crossings,
    kerbs and paved sidewalks filling the four corners up to ``half_extent_cm``."""
    E, R, h = half_extent_cm, road_width_cm / 2, kerb_cm
    b = Builder()
    b.box((2 * E, 2 * R, 2.0), ASPHALT, at=(0, 0, 1.0))  # the two roads, 2 cm thick
    b.box((2 * R, 2 * E, 2.0), ASPHALT, at=(0, 0, 0.99))
    for sx in (-1, 1):  # four corner sidewalks (flush, 2 cm)
        for sy in (-1, 1):
            w = E - R
            b.box((w, w, 2.0), PAVING, at=(sx * (R + w / 2), sy * (R + w / 2), 1.0))
            # kerbs along both road edges of this corner
            b.box((w, 15.0, h), KERB, at=(sx * (R + w / 2), sy * (R + 7.5), h / 2))
            b.box((15.0, w, h), KERB, at=(sx * (R + 7.5), sy * (R + w / 2), h / 2))
    dash, gap = 300.0, 300.0
    for along_x in (True, False):  # dashed centre lines
        for c in np.arange(R + 400, E, dash + gap):
            for s in (-1, 1):
                p = s * (c + dash / 2)
                b.box((dash, 15.0, 0.6) if along_x else (15.0, dash, 0.6), MARKING, at=(p, 0, 2.3) if along_x else (0, p, 2.3))
    for axis in range(4):  # zebra crossings on the four arms
        ang = axis * np.pi / 2
        rot = np.array([[np.cos(ang), -np.sin(ang), 0], [np.sin(ang), np.cos(ang), 0], [0, 0, 1]])
        for k in np.arange(-R + 60, R - 40, 100.0):
            b.box((300.0, 50.0, 0.6), MARKING, at=rot @ np.array([R + 250, k + 25, 2.3]), rot=rot)
    return b.mesh()


@register("pond")
def pond(length_cm: float = 3600.0, width_cm: float = 2200.0, segments: int = 40, seed: int = 3) -> RenderMesh:
    """A pond: a flat irregular ellipse of water (z = 3 cm) in a slightly raised earth bank."""
    rng = np.random.default_rng(seed)
    t = np.linspace(0, 2 * np.pi, segments, endpoint=False)
    wobble = 1 + 0.06 * np.sin(3 * t + rng.uniform(0, 6)) + 0.04 * np.sin(5 * t + rng.uniform(0, 6))
    ring = np.stack([0.5 * length_cm * np.cos(t) * wobble, 0.5 * width_cm * np.sin(t) * wobble], 1)

    def disc(scale, z):
        v = np.vstack([[0, 0, z], np.hstack([ring * scale, np.full((segments, 1), z)])])
        f = np.array([[0, 1 + i, 1 + (i + 1) % segments] for i in range(segments)])
        return trimesh.Trimesh(v, f, process=False)

    def band(inner, outer, z_in, z_out):
        a = np.hstack([ring * inner, np.full((segments, 1), z_in)])
        c = np.hstack([ring * outer, np.full((segments, 1), z_out)])
        v = np.vstack([a, c])
        f = []
        for i in range(segments):
            j = (i + 1) % segments
            f += [[i, segments + i, segments + j], [i, segments + j, j]]
        return trimesh.Trimesh(v, np.array(f), process=False)

    b = Builder()
    b.add(disc(1.0, 3.0), WATER)
    b.add(band(1.0, 1.12, 6.0, 1.0), BANK)
    return b.mesh()


@register("river")
def river(
    length_cm: float = 20000.0, width_cm: float = 1800.0, bank_cm: float = 250.0, segments: int = 80, seed: int = 5
) -> RenderMesh:
    """A river along X: a flat water strip (z = 3 cm) whose banks meander gently, each bank an
    earth band sloping up to the ground (what a bridge crosses; the bridge environment's landmark)."""
    rng = np.random.default_rng(seed)
    x = np.linspace(-length_cm / 2, length_cm / 2, segments + 1)
    phase = rng.uniform(0, 2 * np.pi, 4)
    wobble = (
        0.5 * width_cm * (1 + 0.08 * np.sin(2 * np.pi * x / 5300 + phase[0]) + 0.05 * np.sin(2 * np.pi * x / 2100 + phase[1]))
    )
    centre = 0.06 * width_cm * np.sin(2 * np.pi * x / 7700 + phase[2])

    def strip(y0, y1, z0, z1):
        """Quads between the polylines (x, y0, z0) and (x, y1, z1), up-facing."""
        a = np.stack([x, y0, np.full_like(x, z0)], 1)
        c = np.stack([x, y1, np.full_like(x, z1)], 1)
        v = np.vstack([a, c])
        n = len(x)
        f = []
        for i in range(n - 1):
            f += [[i, i + 1, n + i + 1], [i, n + i + 1, n + i]]
        f = np.array(f)
        t = trimesh.Trimesh(v, f, process=False)
        if t.face_normals[:, 2].mean() < 0:
            t.invert()
        return t

    b = Builder()
    b.add(strip(centre - wobble, centre + wobble, 3.0, 3.0), WATER)
    b.add(strip(centre + wobble, centre + wobble + bank_cm, 3.0, 1.0), BANK)
    b.add(strip(centre - wobble - bank_cm, centre - wobble, 1.0, 3.0), BANK)
    return b.mesh()
