"""Quadrupeds (bear, fox, husky, deer, camel) from one parametric body plan, facing +X."""
from __future__ import annotations

from dataclasses import dataclass

from assets_manifest.procedural import register
from assets_manifest.procedural.shapes import Builder, shade
from core.meshes import RenderMesh


@dataclass(frozen=True)
class Plan:
    """Proportions relative to body length L (nose-to-tail of the torso)."""

    leg: float          # leg length / L
    girth: float        # torso height / L
    neck: float         # neck length / L
    neck_up: float      # how vertical the neck is (0 = horizontal, 1 = vertical)
    head: float         # head radius / L
    snout: float        # snout length / L
    tail: float         # tail length / L
    tail_r: float       # tail radius / L
    ear: float          # ear height / L
    leg_r: float = 0.04  # leg radius / L


def _legs(b: Builder, L: float, p: Plan, col) -> float:
    top = p.leg * L
    for x in (0.32 * L, -0.32 * L):
        for y in (-0.12 * L * p.girth / 0.45, 0.12 * L * p.girth / 0.45):
            b.capsule(p.leg_r * L, 0, col, (x, y, 0.03 * L), (x, y, top))
    return top


def quadruped(L: float, p: Plan, color, belly=None, extra=None) -> RenderMesh:
    b = Builder()
    top = _legs(b, L, p, shade(color, 0.85))
    zc = top + p.girth * L * 0.4
    b.sphere(0.5, color, at=(0, 0, zc), scale=(L, p.girth * L * 0.8, p.girth * L), subdiv=2)
    if belly is not None:
        b.sphere(0.5, belly, at=(0.05 * L, 0, zc - 0.12 * p.girth * L), scale=(0.7 * L, p.girth * L * 0.6, p.girth * L * 0.8))
    neck_base = (0.42 * L, 0, zc + 0.15 * p.girth * L)
    head_c = (neck_base[0] + p.neck * L * (1 - p.neck_up), 0, neck_base[2] + p.neck * L * p.neck_up + 0.05 * L)
    b.capsule(0.08 * L * max(p.girth, 0.3) / 0.45, 0, color, neck_base, head_c)
    b.sphere(p.head * L, color, at=head_c, subdiv=2)
    b.capsule(p.head * L * 0.5, 0, shade(color, 0.9), head_c, (head_c[0] + p.snout * L, 0, head_c[2] - 0.2 * p.snout * L))
    b.sphere(p.head * L * 0.22, (20, 20, 20), at=(head_c[0] + p.snout * L + p.head * L * 0.4, 0, head_c[2] - 0.2 * p.snout * L))
    for y in (-1, 1):
        b.cone(p.head * L * 0.45, p.ear * L, shade(color, 0.8), at=(head_c[0] - 0.2 * p.head * L, y * 0.6 * p.head * L, head_c[2] + 0.7 * p.head * L), sections=6)
    if p.tail > 0:
        t0 = (-0.5 * L, 0, zc + 0.1 * p.girth * L)
        b.capsule(p.tail_r * L, 0, shade(color, 0.95), t0, (t0[0] - p.tail * L, 0, t0[2] - 0.5 * p.tail * L))
    if extra:
        extra(b, L, head_c, zc)
    return b.mesh()


@register("bear")
def bear(length_cm: float = 200.0, color=(92, 62, 38)) -> RenderMesh:
    p = Plan(leg=0.3, girth=0.55, neck=0.2, neck_up=0.2, head=0.14, snout=0.12, tail=0.05, tail_r=0.04, ear=0.06, leg_r=0.085)
    return quadruped(length_cm, p, color)


@register("fox")
def fox(length_cm: float = 70.0, color=(200, 100, 35)) -> RenderMesh:
    p = Plan(leg=0.38, girth=0.35, neck=0.25, neck_up=0.45, head=0.12, snout=0.2, tail=0.6, tail_r=0.08, ear=0.18, leg_r=0.035)

    def tail_tip(b: Builder, L, head_c, zc) -> None:
        b.sphere(0.07 * L, (245, 240, 230), at=(-1.08 * L, 0, zc - 0.25 * L))
    return quadruped(length_cm, p, color, belly=(240, 230, 215), extra=tail_tip)


@register("dog")
def dog(length_cm: float = 90.0, color=(110, 115, 125), belly=(235, 235, 235)) -> RenderMesh:
    """Husky-like dog: grey back, white belly, erect ears, curled-up tail."""
    p = Plan(leg=0.5, girth=0.42, neck=0.28, neck_up=0.55, head=0.13, snout=0.16, tail=0.35, tail_r=0.07, ear=0.14, leg_r=0.05)

    def curl(b: Builder, L, head_c, zc) -> None:
        b.capsule(0.06 * L, 0, color, (-0.5 * L, 0, zc + 0.1 * L), (-0.6 * L, 0, zc + 0.35 * L))
    pl = Plan(**{**p.__dict__, "tail": 0})
    return quadruped(length_cm, pl, color, belly=belly, extra=curl)


@register("deer")
def deer(length_cm: float = 160.0, color=(150, 100, 60), antlers: bool = True) -> RenderMesh:
    p = Plan(leg=0.65, girth=0.38, neck=0.42, neck_up=0.75, head=0.09, snout=0.16, tail=0.08, tail_r=0.04, ear=0.12, leg_r=0.03)

    def horns(b: Builder, L, head_c, zc) -> None:
        if not antlers:
            return
        col = (200, 180, 150)
        for y in (-1, 1):
            base = (head_c[0] - 0.02 * L, y * 0.05 * L, head_c[2] + 0.08 * L)
            tip = (head_c[0] - 0.1 * L, y * 0.2 * L, head_c[2] + 0.38 * L)
            b.rod(0.012 * L, col, base, tip)
            mid = tuple((a + c) / 2 for a, c in zip(base, tip))
            b.rod(0.01 * L, col, mid, (mid[0] + 0.1 * L, mid[1], mid[2] + 0.12 * L))
    return quadruped(length_cm, p, color, belly=(220, 200, 170), extra=horns)


@register("camel")
def camel(length_cm: float = 300.0, color=(190, 150, 100), humps: int = 1) -> RenderMesh:
    p = Plan(leg=0.62, girth=0.36, neck=0.5, neck_up=0.6, head=0.08, snout=0.14, tail=0.15, tail_r=0.02, ear=0.05, leg_r=0.035)

    def hump(b: Builder, L, head_c, zc) -> None:
        xs = (0.0,) if humps == 1 else (0.15, -0.18)
        for x in xs:
            b.sphere(0.5, color, at=(x * L, 0, zc + 0.17 * L), scale=(0.32 * L, 0.22 * L, 0.28 * L))
    return quadruped(length_cm, p, color, extra=hump)
