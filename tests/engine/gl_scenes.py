"""Shared scenes for the GL backend tests: trimesh primitives as RenderMesh (no asset library),
a camera along +X, and small builders. Expected values in the tests never come from here."""

from __future__ import annotations

import numpy as np
import trimesh

from sceneforge.core.meshes import RenderMesh
from sceneforge.engine.world import Actor, Camera, Ground, Look, Rotator, Scene, Sun, Transform, instance_color


def _render_mesh(m: trimesh.Trimesh, rgb) -> RenderMesh:
    v = np.asarray(m.vertices, dtype=np.float64)
    v = v - [0.5 * (v[:, 0].min() + v[:, 0].max()), 0.5 * (v[:, 1].min() + v[:, 1].max()), v[:, 2].min()]
    return RenderMesh(v, np.asarray(m.faces), np.tile(np.asarray(rgb, np.uint8), (len(v), 1)))


def _l_shape() -> trimesh.Trimesh:
    """Chiral-looking in the image: a bar along local X with a post at its +Y end."""
    bar = trimesh.creation.box(extents=(40, 160, 40))
    post = trimesh.creation.box(extents=(40, 40, 120))
    post.apply_translation((0, 60, 40))
    return trimesh.util.concatenate([bar, post])


MESHES = {
    "box": _render_mesh(trimesh.creation.box(extents=(100, 100, 100)), (200, 60, 50)),
    "small": _render_mesh(trimesh.creation.box(extents=(20, 20, 20)), (60, 200, 50)),
    "sphere": _render_mesh(trimesh.creation.icosphere(subdivisions=3, radius=50), (60, 60, 220)),
    "cyl": _render_mesh(trimesh.creation.cylinder(radius=30, height=150, sections=32), (230, 230, 230)),
    "wall": _render_mesh(trimesh.creation.box(extents=(10, 400, 300)), (150, 150, 150)),
    "lshape": _render_mesh(_l_shape(), (220, 180, 40)),
}


def _camera(width=160, height=120, **kw) -> Camera:
    """Camera at 150 cm height looking along +X (yaw 0): world +Y is image right."""
    return Camera(
        location=kw.get("location", (0.0, 0.0, 150.0)),
        rotation=kw.get("rotation", Rotator(0.0, 0.0, 0.0)),
        fov_deg=kw.get("fov_deg", 60.0),
        width=width,
        height=height,
    )


def _scene(*actors: Actor, ground: Ground | None = None, sun: Sun | None = None, look: Look | None = None) -> Scene:
    s = Scene(ground=ground or Ground(), sun=sun or Sun(), look=look or Look())
    for a in actors:
        s.add(a)
    return s


def _actor(name, asset, loc, i=0, **kw) -> Actor:
    return Actor(
        name, asset, Transform(loc, kw.pop("rotation", Rotator()), kw.pop("scale", (1, 1, 1))), color=instance_color(i), **kw
    )


def _centroid(mask: np.ndarray) -> np.ndarray:
    ys, xs = np.nonzero(mask)
    return np.array([xs.mean() + 0.5, ys.mean() + 0.5])  # continuous pixel coordinates


def _three_objects() -> Scene:
    return _scene(
        _actor("a", "box", (1000.0, 0.0, 0.0), 0),
        _actor("b", "sphere", (800.0, -300.0, 0.0), 1),
        _actor("c", "cyl", (1200.0, 300.0, 0.0), 2),
    )
