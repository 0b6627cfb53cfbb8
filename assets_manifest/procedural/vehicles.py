"""Truck, car/taxi, bicycle and Vespa-style scooter. Length runs along +X (forward)."""

from __future__ import annotations

from sceneforge.assets_manifest.procedural.registry import register
from sceneforge.assets_manifest.procedural.shapes import Builder, rot_x, shade
from sceneforge.core.meshes import RenderMesh

TYRE = (30, 30, 32)
GLASS = (60, 80, 100)
CHROME = (170, 170, 175)


def _wheels(b: Builder, xs, half_track: float, radius: float, width: float) -> None:
    for x in xs:
        for s in (-1, 1):
            b.cyl(radius, width, TYRE, at=(x, s * half_track, radius), rot=rot_x(90), sections=14)


@register("truck")
def truck(length_cm: float = 700.0, color=(180, 40, 35), cargo_color=(200, 200, 195)) -> RenderMesh:
    """Box truck: cab at the front (+X), cargo box behind, six wheels."""
    L = length_cm
    w, r = 0.34 * L, 0.07 * L
    b = Builder()
    b.box((0.25 * L, w, 0.38 * L), color, at=(0.36 * L, 0, r + 0.22 * L))  # cab
    b.box((0.02 * L, w * 0.85, 0.13 * L), GLASS, at=(0.49 * L, 0, r + 0.32 * L))  # windscreen
    b.box((0.70 * L, w * 1.02, 0.48 * L), cargo_color, at=(-0.13 * L, 0, r + 0.28 * L))  # cargo
    b.box((0.95 * L, w * 0.9, 0.05 * L), (50, 50, 50), at=(0.0, 0, r + 0.02 * L))  # chassis
    _wheels(b, (0.36 * L, -0.2 * L, -0.36 * L), w / 2 - 0.03 * L, r, 0.05 * L)
    return b.mesh()


@register("car")
def car(length_cm: float = 450.0, color=(40, 70, 140), taxi_sign: bool = False) -> RenderMesh:
    """Sedan: lower body, glass cabin, four wheels; ``taxi_sign`` adds the roof light."""
    L = length_cm
    w, r = 0.40 * L, 0.075 * L
    b = Builder()
    b.box((L, w, 0.15 * L), color, at=(0, 0, r + 0.07 * L))  # body
    b.box((0.5 * L, w * 0.9, 0.12 * L), GLASS, at=(-0.04 * L, 0, r + 0.2 * L))  # cabin glass
    b.box((0.46 * L, w * 0.88, 0.015 * L), color, at=(-0.04 * L, 0, r + 0.265 * L))  # roof
    b.box((0.01 * L, w * 0.7, 0.04 * L), (240, 240, 220), at=(0.5 * L, 0, r + 0.09 * L))  # lights
    if taxi_sign:
        b.box((0.07 * L, 0.2 * L, 0.05 * L), (250, 250, 240), at=(-0.04 * L, 0, r + 0.3 * L))
        b.box((0.02 * L, w * 1.01, 0.03 * L), (20, 20, 20), at=(0.0, 0, r + 0.1 * L))  # checker band
    _wheels(b, (0.32 * L, -0.3 * L), w / 2 - 0.02 * L, r, 0.06 * L)
    return b.mesh()


@register("bicycle")
def bicycle(length_cm: float = 175.0, color=(30, 110, 190)) -> RenderMesh:
    """Two thin tyres, a diamond frame, handlebar and saddle."""
    L = length_cm
    r = 0.2 * L
    b = Builder()
    for x in (0.3 * L, -0.3 * L):
        b.torus(r, 0.02 * L, TYRE, at=(x, 0, r), rot=rot_x(90))
    crank, seat, head = (0.0, 0, r), (-0.08 * L, 0, 2.2 * r), (0.2 * L, 0, 2.25 * r)
    for a, c in (
        (crank, seat),
        (seat, head),
        (head, crank),
        (crank, (-0.3 * L, 0, r)),
        (seat, (-0.3 * L, 0, r)),
        (head, (0.3 * L, 0, r)),
    ):
        b.rod(0.015 * L, color, a, c)
    b.rod(0.012 * L, CHROME, (0.22 * L, -0.16 * L, 2.55 * r), (0.22 * L, 0.16 * L, 2.55 * r))
    b.rod(0.012 * L, CHROME, head, (0.22 * L, 0, 2.55 * r))
    b.box((0.12 * L, 0.06 * L, 0.03 * L), (25, 25, 25), at=(-0.09 * L, 0, 2.35 * r))
    return b.mesh()


@register("scooter")
def scooter(length_cm: float = 180.0, color=(150, 200, 190)) -> RenderMesh:
    """Vespa-style: rounded rear body, floorboard, front shield, handlebar and small wheels."""
    L = length_cm
    r = 0.12 * L
    b = Builder()
    for x in (0.36 * L, -0.33 * L):
        b.cyl(r, 0.07 * L, TYRE, at=(x, 0, r), rot=rot_x(90), sections=14)
    b.sphere(0.5, color, at=(-0.24 * L, 0, 0.32 * L), scale=(0.55 * L, 0.3 * L, 0.3 * L), subdiv=2)  # body
    b.box((0.45 * L, 0.22 * L, 0.05 * L), shade(color, 0.8), at=(0.05 * L, 0, 0.16 * L))  # floor
    b.box((0.07 * L, 0.3 * L, 0.42 * L), color, at=(0.3 * L, 0, 0.38 * L))  # shield
    b.box((0.36 * L, 0.17 * L, 0.05 * L), (70, 50, 40), at=(-0.22 * L, 0, 0.48 * L))  # seat
    b.rod(0.02 * L, CHROME, (0.33 * L, 0, 0.55 * L), (0.36 * L, 0, r))
    b.rod(0.018 * L, CHROME, (0.34 * L, -0.2 * L, 0.62 * L), (0.34 * L, 0.2 * L, 0.62 * L))
    b.sphere(0.04 * L, (250, 250, 230), at=(0.36 * L, 0, 0.6 * L))
    return b.mesh()
