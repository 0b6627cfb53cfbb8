"""Ground levels of detail (issue 14): relief tiles drawn coarser far away must keep labels exact.
No cracks (skirts) where two levels meet, levels chosen from the camera only (never from render
history), every drawn vertex on :meth:`Ground.height`, and a coarse level only where its measured
height error projects below ``lod.GROUND_ERROR_PX``. Expected values come from Ground.height and
from the same scene with levels off (``GLBackend(lod=False)``)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from sceneforge.engine.server.gl import lod as L
from sceneforge.engine.server.gl import resources as R
from sceneforge.engine.server.gl.backend import GLBackend
from sceneforge.engine.world import Camera, Ground, Scene, look_at_rotation

HILLS = Ground(relief_amplitude=300.0, relief_wavelength=3000.0)  # steep: cracks would be wide
FOREST = Ground(relief_amplitude=40.0, relief_wavelength=4500.0)  # scenarios/envs/forest.yaml


def _provider(asset_id):
    raise KeyError(asset_id)


def _camera(eye, target, size=96) -> Camera:
    return Camera(eye, look_at_rotation(eye, target), fov_deg=60.0, width=size, height=size)


def _levels(backend: GLBackend, scene: Scene, cam: Camera) -> list[int]:
    """The level each drawn tile is at in this camera's frame (its body inside a drawn range)."""
    with backend._using():
        g = backend._passes.ground(scene.ground)
        frame = backend._frame(scene, cam)
    out = []
    for t in g.tiles:
        for k, (first, count) in enumerate(t.body):
            if any(f <= first and first + count <= f + c for f, c in frame.ground):
                out.append(k)
    return out


def test_tile_vertices_lie_on_ground_height_and_errors_are_measured():
    grid = R.ground_grid(FOREST)
    assert len(grid) > 1
    for t in grid[::7]:
        assert np.all(np.diff(t.errors) >= 0)  # coarser never claims to be more exact
        for k, lv in enumerate(t.levels):
            v = lv.mesh.vertices.astype(np.float64)
            body = np.unique(lv.mesh.faces[: lv.body])
            z = FOREST.height(v[body, 0], v[body, 1])
            assert np.max(np.abs(v[body, 2] - z)) < 0.01  # cm (float32 vertices)
            skirt = np.setdiff1d(np.arange(len(v)), body)
            assert np.all(v[skirt, 2] < FOREST.height(v[skirt, 0], v[skirt, 1]) - t.errors[-1])
            # the stored error bounds the drawn surface: dense random points inside the tile
            rng = np.random.default_rng(k)
            p = rng.uniform(t.lo[:2], t.hi[:2], size=(400, 2))
            drawn = _surface_height(lv, p)
            assert np.max(np.abs(drawn - FOREST.height(p[:, 0], p[:, 1]))) <= t.errors[k] * 1.05 + 0.01
    # ground_tiles (renderers without levels: Cycles) is level 0 without skirts
    full = sum(len(m.faces) for m, _ in R.ground_tiles(FOREST))
    assert full == sum(t.levels[0].body for t in grid)


def _surface_height(lv: R.GroundLevel, p: np.ndarray) -> np.ndarray:
    """Height of the level's body triangles at points p (N, 2), by barycentric interpolation."""
    v = lv.mesh.vertices.astype(np.float64)
    tri = v[lv.mesh.faces[: lv.body]]  # (F, 3, 3)
    out = np.full(len(p), np.nan)
    a, b, c = tri[:, 0, :2], tri[:, 1, :2], tri[:, 2, :2]
    for n, q in enumerate(p):
        v0, v1, v2 = b - a, c - a, q - a
        den = v0[:, 0] * v1[:, 1] - v1[:, 0] * v0[:, 1]
        s = (v2[:, 0] * v1[:, 1] - v1[:, 0] * v2[:, 1]) / den
        t = (v0[:, 0] * v2[:, 1] - v2[:, 0] * v0[:, 1]) / den
        inside = np.flatnonzero((s >= -1e-9) & (t >= -1e-9) & (s + t <= 1 + 1e-9))
        f = inside[0]
        out[n] = tri[f, 0, 2] + s[f] * (tri[f, 1, 2] - tri[f, 0, 2]) + t[f] * (tri[f, 2, 2] - tri[f, 0, 2])
    return out


def test_level_error_projects_below_one_pixel():
    grid = R.ground_grid(FOREST)
    lo, hi = np.array([t.lo for t in grid]), np.array([t.hi for t in grid])
    errors = np.array([t.errors for t in grid])
    eye = np.array([0.0, 0.0, 170.0])
    levels = L.ground_levels(lo, hi, errors, eye, 194.0)
    d = np.linalg.norm(np.maximum(np.maximum(lo - eye, eye - hi), 0.0), axis=1)
    chosen = errors[np.arange(len(grid)), levels]
    coarse = levels > 0
    assert coarse.any() and (levels == 0).any()
    assert np.all(chosen[coarse] * 194.0 / d[coarse] < L.GROUND_ERROR_PX)
    # the tile under the camera is at full detail; a camera far above sees coarser levels
    assert levels[np.argmin(d)] == 0
    high = L.ground_levels(lo, hi, errors, eye + [0, 0, 1e5], 194.0)
    assert np.all(high >= levels)


@pytest.fixture(scope="module")
def backends():
    on, off = GLBackend(_provider), GLBackend(_provider, lod=False)
    yield on, off
    on.close()
    off.close()


def _hills_scene() -> Scene:
    return Scene(ground=HILLS)


# cameras looking down across the grid: the ground fills the image, several levels in view
LOW = _camera((0.0, 0.0, 900.0), (1200.0, 300.0, 0.0))
HIGH = _camera((-3000.0, -2000.0, 6000.0), (1000.0, 1000.0, 0.0))


@pytest.mark.parametrize("cam", [LOW, HIGH], ids=["low", "high"])
def test_no_cracks_where_levels_meet(backends, cam):
    on, off = backends
    scene = _hills_scene()
    levels = _levels(on, scene, cam)
    assert len(set(levels)) >= 2, levels  # the view crosses a level boundary
    assert set(_levels(off, scene, cam)) == {0}
    out = on.render(scene, cam, ("instance_id", "depth"))
    ref = off.render(scene, cam, ("instance_id", "depth"))
    sky_ref = ~np.isfinite(ref["depth"])
    sky = ~np.isfinite(out["depth"])
    assert not sky_ref.any(), "the reference view must be ground only"
    assert not sky.any(), f"{int(sky.sum())} pixels see through the ground"
    assert not out["instance_id"].any()
    # the drawn surface stays within ~1 px of full detail: depths agree except where a ridge's
    # silhouette moves by a pixel (the depth there jumps to the slope behind it)
    rel = np.abs(out["depth"] - ref["depth"]) / ref["depth"]
    assert np.median(rel) < 3e-3 and np.mean(rel > 0.01) < 0.03, (np.median(rel), np.mean(rel > 0.01))


def test_levels_depend_on_the_camera_only(backends):
    """The same camera gives byte-identical labels whatever was rendered before."""
    on, _ = backends
    scene = _hills_scene()
    first = on.render(scene, LOW, ("instance_id", "depth"))
    for cam in (HIGH, _camera((500.0, 0.0, 300.0), (0.0, 0.0, 0.0))):
        on.render(scene, cam, ("lit", "depth"))
    fresh = GLBackend(_provider)
    try:
        again = fresh.render(scene, LOW, ("instance_id", "depth"))
    finally:
        fresh.close()
    later = on.render(scene, LOW, ("instance_id", "depth"))
    for k in ("instance_id", "depth"):
        assert first[k].tobytes() == later[k].tobytes() == again[k].tobytes()


def test_flat_ground_is_one_quad(backends):
    on, _ = backends
    grid = R.ground_grid(Ground())
    assert len(grid) == 1 and grid[0].levels[0].body == 2
    scene = Scene(ground=Ground())
    with on._using():
        frame = on._frame(scene, LOW)
    assert frame.ground == ((0, 2),)


def test_drawn_triangles_follow_the_levels(backends):
    on, off = backends
    scene = Scene(ground=FOREST)
    cam = _camera((0.0, 0.0, 170.0), (2000.0, 0.0, 0.0), 224)
    assert on.drawn_triangles(scene, cam) < 0.5 * off.drawn_triangles(scene, cam)
    assert on.triangle_count(scene) == off.triangle_count(scene) == sum(len(m.faces) for m, _ in R.ground_tiles(FOREST))
    assert math.isfinite(on.drawn_triangles(scene, cam))
