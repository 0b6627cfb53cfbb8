"""Street and camp props (barrel, tent, snowman, bins, cone, hydrant, bench, lamp post) and
background structures (buildings, houses, a bridge, fences, crates, signs)."""

from __future__ import annotations

import math

import numpy as np
import trimesh

from sceneforge.assets_manifest.procedural.registry import register
from sceneforge.assets_manifest.procedural.ground import ASPHALT
from sceneforge.assets_manifest.procedural.shapes import Builder, ridge_prism, rot_x, rot_y, rot_z, shade
from sceneforge.core.meshes import RenderMesh

METAL = (90, 92, 96)
WHITE = (240, 240, 240)


@register("barrel")
def barrel(height_cm: float = 90.0, color=(40, 95, 150)) -> RenderMesh:
    h, r = height_cm, 0.33 * height_cm
    b = Builder().cyl(r, h, color, at=(0, 0, h / 2), sections=16)
    for z in (0.12, 0.5, 0.88):
        b.cyl(r * 1.03, 0.04 * h, shade(color, 0.7), at=(0, 0, z * h), sections=16)
    return b.mesh()


@register("tent")
def tent(length_cm: float = 250.0, color=(230, 120, 30)) -> RenderMesh:
    """Ridge tent: a triangular prism (door facing +X) with a darker door flap."""
    L, W, H = length_cm, 0.85 * length_cm, 0.55 * length_cm
    b = Builder().add(ridge_prism(L, W, H), color)
    b.add(ridge_prism(2, 0.4 * W, 0.6 * H), shade(color, 0.45), at=(L / 2 + 1, 0, 0))
    return b.mesh()


@register("snowman")
def snowman(height_cm: float = 170.0, scarf=(200, 30, 40)) -> RenderMesh:
    H = height_cm
    b = Builder()
    r1, r2, r3 = 0.22 * H, 0.16 * H, 0.11 * H
    z1, z2, z3 = r1, 2 * r1 + r2 * 0.7, 2 * r1 + 1.4 * r2 + r3 * 0.7
    for r, z in ((r1, z1), (r2, z2), (r3, z3)):
        b.sphere(r, WHITE, at=(0, 0, z), subdiv=2)
    b.cone(0.02 * H, 0.1 * H, (240, 120, 20), at=(r3 * 0.9, 0, z3), rot=rot_y(90), sections=8)
    b.cyl(r2 * 0.75, 0.04 * H, scarf, at=(0, 0, z2 + r2 * 0.65), sections=12)
    b.cyl(r3 * 0.8, 0.12 * H, (25, 25, 25), at=(0, 0, z3 + r3 * 0.9 + 0.06 * H), sections=12)
    b.cyl(r3 * 1.2, 0.015 * H, (25, 25, 25), at=(0, 0, z3 + r3 * 0.85), sections=12)
    for dz in (-0.3, 0.0, 0.3):
        b.sphere(0.015 * H, (20, 20, 20), at=(r2 * 0.97, 0, z2 + dz * r2))
    return b.mesh()


@register("trash_bin")
def trash_bin(height_cm: float = 100.0, color=(40, 110, 60)) -> RenderMesh:
    """Wheelie bin: tapered body, lid, two wheels at the back."""
    h = height_cm
    b = Builder().box((0.55 * h, 0.5 * h, 0.9 * h), color, at=(0, 0, 0.47 * h))
    b.box((0.62 * h, 0.54 * h, 0.06 * h), shade(color, 0.75), at=(0, 0, 0.95 * h))
    b.rod(0.02 * h, METAL, (-0.32 * h, -0.22 * h, 0.9 * h), (-0.32 * h, 0.22 * h, 0.9 * h))
    for y in (-0.2, 0.2):
        b.cyl(0.08 * h, 0.05 * h, (25, 25, 25), at=(-0.25 * h, y * h, 0.08 * h), rot=rot_x(90))
    return b.mesh()


@register("traffic_cone")
def traffic_cone(height_cm: float = 70.0) -> RenderMesh:
    h = height_cm
    b = Builder().box((0.55 * h, 0.55 * h, 0.04 * h), (230, 80, 20), at=(0, 0, 0.02 * h))
    b.cone(0.2 * h, 0.96 * h, (240, 90, 20), at=(0, 0, 0.04 * h), sections=16)
    for z, r in ((0.45, 0.115), (0.65, 0.078)):
        b.cyl(r * h, 0.09 * h, WHITE, at=(0, 0, z * h), sections=16)
    return b.mesh()


@register("fire_hydrant")
def fire_hydrant(height_cm: float = 80.0, color=(200, 30, 30)) -> RenderMesh:
    h = height_cm
    b = Builder().cyl(0.17 * h, 0.06 * h, shade(color, 0.8), at=(0, 0, 0.03 * h), sections=12)
    b.cyl(0.12 * h, 0.7 * h, color, at=(0, 0, 0.4 * h), sections=12)
    b.sphere(0.13 * h, color, at=(0, 0, 0.76 * h))
    b.cyl(0.03 * h, 0.1 * h, (230, 200, 40), at=(0, 0, 0.92 * h), sections=8)
    b.cyl(0.06 * h, 0.36 * h, color, at=(0, 0, 0.55 * h), rot=rot_x(90), sections=10)
    b.cyl(0.07 * h, 0.1 * h, color, at=(0.14 * h, 0, 0.5 * h), rot=rot_y(90), sections=10)
    return b.mesh()


@register("bench")
def bench(length_cm: float = 180.0, color=(130, 90, 55)) -> RenderMesh:
    L = length_cm
    b = Builder().box((0.25 * L, L, 0.03 * L), color, at=(0, 0, 0.25 * L))
    b.box((0.03 * L, L, 0.18 * L), color, at=(-0.12 * L, 0, 0.4 * L))
    for y in (-0.42, 0.42):
        b.box((0.22 * L, 0.03 * L, 0.25 * L), METAL, at=(0, y * L, 0.125 * L))
    return b.mesh()


@register("lamp_post")
def lamp_post(height_cm: float = 450.0, color=(45, 50, 55)) -> RenderMesh:
    H = height_cm
    b = Builder().cyl(0.03 * H, 0.03 * H, color, at=(0, 0, 0.015 * H), sections=10)
    b.rod(0.012 * H, color, (0, 0, 0), (0, 0, 0.95 * H))
    b.rod(0.008 * H, color, (0, 0, 0.93 * H), (0.15 * H, 0, 0.95 * H))
    b.box((0.08 * H, 0.04 * H, 0.02 * H), (250, 240, 200), at=(0.15 * H, 0, 0.94 * H))
    return b.mesh()


@register("building")
def building(
    height_cm: float = 1500.0,
    width_cm: float = 1200.0,
    depth_cm: float = 1000.0,
    color=(175, 165, 150),
    floors: int = 0,
    window_bands: bool = False,
) -> RenderMesh:
    """Block with a flat roof edge and a ground-floor plinth; windows come from the facade
    material (procedural/pbr.py); ``window_bands`` adds them as dark geometry bands instead."""
    H, W, D = height_cm, width_cm, depth_cm
    b = Builder().box((D, W, H), color, at=(0, 0, H / 2))
    b.box((D * 1.02, W * 1.02, 0.03 * H), shade(color, 0.7), at=(0, 0, H))
    b.box((D * 1.01, W * 1.01, 60), shade(color, 0.55), at=(0, 0, 30))
    n_floors = floors or max(1, int(H // 350))
    for i in range(n_floors if window_bands else 0):
        z = (i + 0.55) * H / n_floors
        b.box((D * 1.01, W * 0.8, 0.35 * H / n_floors), (60, 70, 85), at=(0, 0, z))
        b.box((D * 0.8, W * 1.01, 0.35 * H / n_floors), (60, 70, 85), at=(0, 0, z))
    return b.mesh()


@register("house")
def house(length_cm: float = 900.0, color=(200, 170, 130), roof=(130, 50, 40), snow: bool = False) -> RenderMesh:
    """Small house: walls, pitched roof (snow-covered on request), door and two windows."""
    L, W, H = length_cm, 0.75 * length_cm, 0.35 * length_cm
    b = Builder().box((W, L, H), color, at=(0, 0, H / 2))
    roof_m = ridge_prism(L * 1.05, W + 60, 0.45 * W)
    b.add(roof_m, (240, 245, 250) if snow else roof, at=(0, 0, H), rot=rot_z(90))
    b.box((5, 0.12 * L, 0.6 * H), (90, 60, 40), at=(W / 2, 0, 0.3 * H))
    for y in (-0.3, 0.3):
        b.box((5, 0.14 * L, 0.25 * H), (70, 90, 120), at=(W / 2, y * L, 0.6 * H))
    return b.mesh()


@register("bridge")
def bridge(
    length_cm: float = 4600.0,
    width_cm: float = 700.0,
    height_cm: float = 450.0,
    ramp_cm: float = 900.0,
    arches: int = 3,
    color=(170, 168, 162),
) -> RenderMesh:
    """Stone arch bridge along +X: a deck on ``arches`` arches and piers, parapets, an asphalt
    roadway, and an earth-filled ramp (abutment) down to the ground at each end, so it reads as a
    bridge crossing something rather than a table. The default stone colour is the one
    ``procedural/pbr.py`` textures with the library's stone surface; the roadway is asphalt."""
    L, W, H, R = length_cm, width_cm, height_cm, ramp_cm
    span = L - 2 * R  # the part over the water, carried by the arches
    stone, dark = color, shade(color, 0.85)
    b = Builder()
    b.box((span, W, 60.0), stone, at=(0, 0, H - 30.0))  # deck slab
    b.box((span, W - 70.0, 4.0), ASPHALT, at=(0, 0, H + 2.0))  # roadway on the deck
    slope = math.atan2(H, R)
    ramp_len = math.hypot(R, H)
    for sx in (-1, 1):
        b.box(
            (ramp_len, W - 70.0, 4.0),
            ASPHALT,
            rot=rot_y(sx * math.degrees(slope)),  # and down the ramps
            at=(sx * (span / 2 + R / 2), 0, H / 2 + 2.0),
        )
        for sy in (-1, 1):  # parapets on the deck
            b.box((span, 35.0, 100.0), dark, at=(0, sy * (W / 2 - 17.5), H + 50.0))
            # parapets down the ramps, tilted with them
            b.box(
                (ramp_len, 35.0, 100.0),
                dark,
                rot=rot_y(sx * math.degrees(slope)),
                at=(sx * (span / 2 + R / 2), sy * (W / 2 - 17.5), H / 2 + 50.0),
            )
        # the abutment: a solid wedge from the deck end down to the ground
        wedge = _wedge(R, W, H)
        if sx < 0:
            wedge.apply_transform(np.diag([-1.0, 1.0, 1.0, 1.0]))
            wedge.invert()
        b.add(wedge, stone, at=(sx * span / 2, 0, 0))
    a = span / arches  # arch spans between piers
    for k in range(arches + 1):  # piers (the outer two are the abutments' faces)
        x = -span / 2 + k * a
        b.box((120.0, W, H - 60.0), dark, at=(x, 0, (H - 60.0) / 2))
    rise = H - 90.0
    for k in range(arches):  # each arch: a ring of stone segments under the deck
        cx = -span / 2 + (k + 0.5) * a
        half = a / 2 - 60.0
        t = np.linspace(np.pi, 0, 10)
        pts = [(cx + half * math.cos(ti), (rise - 40.0) * math.sin(ti) + 40.0) for ti in t]
        for (x0, z0), (x1, z1) in zip(pts[:-1], pts[1:]):
            seg = math.hypot(x1 - x0, z1 - z0)
            ang = math.degrees(math.atan2(z1 - z0, x1 - x0))
            b.box((seg + 20.0, W, 70.0), stone, at=((x0 + x1) / 2, 0, (z0 + z1) / 2), rot=rot_y(-ang))
        b.box((a - 120.0, W, 40.0), stone, at=(cx, 0, H - 75.0))  # spandrel band
    return b.mesh()


def _wedge(run: float, width: float, rise: float) -> trimesh.Trimesh:
    """A ramp's solid: right-triangle section in XZ (rise at x = 0, ground at x = run), along Y."""
    w = width / 2
    v = np.array([[0, -w, 0], [run, -w, 0], [0, -w, rise], [0, w, 0], [run, w, 0], [0, w, rise]], float)
    f = np.array([[0, 1, 2], [3, 5, 4], [0, 4, 1], [0, 3, 4], [0, 5, 3], [0, 2, 5], [1, 4, 5], [1, 5, 2]])
    return trimesh.Trimesh(v, f, process=False)


@register("fence")
def fence(length_cm: float = 400.0, color=(140, 105, 70)) -> RenderMesh:
    L = length_cm
    b = Builder()
    for z in (0.3, 0.75):
        b.box((8, L, 10), color, at=(0, 0, z * 110))
    for y in np.linspace(-L / 2, L / 2, 5):
        b.box((10, 10, 120), shade(color, 0.85), at=(0, y, 60))
    return b.mesh()


@register("crate")
def crate(size_cm: float = 80.0, color=(170, 130, 80)) -> RenderMesh:
    s = size_cm
    b = Builder().box((s, s, s), color, at=(0, 0, s / 2))
    for d in ((s * 1.02, 0.1 * s, s * 1.02), (0.1 * s, s * 1.02, s * 1.02)):
        b.box(d, shade(color, 0.75), at=(0, 0, s / 2))
    return b.mesh()


@register("sign")
def sign(height_cm: float = 250.0, color=(30, 90, 170)) -> RenderMesh:
    H = height_cm
    b = Builder().rod(0.025 * H, METAL, (0, 0, 0), (0, 0, H * 0.8))
    b.box((0.02 * H, 0.3 * H, 0.22 * H), color, at=(0, 0, 0.85 * H))
    return b.mesh()
