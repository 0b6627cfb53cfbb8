"""The GL backend: mirrored actors, shadows (caching, history-free), determinism, lifecycle and
the default asset library. Split from test_gl_backend.py; same conventions (expected values from
``Camera.project`` and hand geometry, never from the renderer)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from sceneforge.core.errors import RenderError
from sceneforge.engine import render_kinds
from sceneforge.engine.server.gl.backend import GLBackend
from sceneforge.engine.world import Actor, Camera, Ground, Rotator, Scene, Sun, Transform, instance_color, look_at_rotation
from gl_scenes import MESHES, _actor, _camera, _centroid, _scene, _three_objects

pytestmark = pytest.mark.render


# --- mirror, shadows, determinism -------------------------------------------------------------------
def _mirror(scene: Scene) -> Scene:
    """Reflect the world about the plane y = 0 (the camera's vertical plane at yaw 0)."""
    out = _scene(ground=scene.ground, sun=Sun(pitch=scene.sun.pitch, yaw=-scene.sun.yaw))
    for a in scene.actors.values():
        t, r = a.transform, a.transform.rotation
        out.add(
            Actor(
                a.name,
                a.asset_id,
                Transform(
                    (t.location[0], -t.location[1], t.location[2]),
                    Rotator(r.pitch, -r.yaw, -r.roll),
                    (t.scale[0], -t.scale[1], t.scale[2]),
                ),
                color=a.color,
            )
        )
    return out


def test_negative_scale_renders_the_mirror_image(backend):
    scene = _scene(
        _actor("l", "lshape", (700.0, 150.0, 0.0), 0, rotation=Rotator(0, 30, 0)),
        _actor("b", "box", (900.0, -250.0, 0.0), 1, rotation=Rotator(0, 20, 0)),
        ground=Ground(texture="flat"),
        sun=Sun(pitch=40.0, yaw=-50.0),
    )
    cam = _camera(200, 150, rotation=Rotator(-10.0, 0.0, 0.0))
    kinds = ("lit", "instance_id")
    a, b = backend.render(scene, cam, kinds), backend.render(_mirror(scene), cam, kinds)
    ids_a, ids_b = a["instance_id"], np.fliplr(b["instance_id"])
    assert not np.array_equal(ids_a, np.fliplr(ids_a))  # the scene is not symmetric itself
    assert np.mean(ids_a != ids_b) < 0.01
    diff = np.abs(a["lit"].astype(int) - np.fliplr(b["lit"]).astype(int)).max(axis=-1)
    assert np.mean(diff > 12) < 0.03


def test_shadows_darken_the_ground_and_are_cached(backend):
    cam = _camera(160, 120, rotation=Rotator(-15.0, 0.0, 0.0))
    sun = Sun(pitch=45.0, yaw=10.0)  # beyond the box: its shadow falls towards the camera
    empty = _scene(_actor("b", "box", (1000.0, 0.0, 0.0), hidden=True), ground=Ground(texture="flat"), sun=sun)
    full = _scene(_actor("b", "box", (1000.0, 0.0, 0.0)), ground=Ground(texture="flat"), sun=sun)
    lit0 = backend.render(empty, cam, ("lit",))["lit"].astype(int).sum(-1)
    out = backend.render(full, cam, ("lit", "instance_id"))
    ground = out["instance_id"] == 0
    darker = ground & (out["lit"].astype(int).sum(-1) < 0.8 * lit0)
    assert darker.sum() > 50
    shadows = backend._passes.shadows
    turns = [_camera(160, 120, rotation=Rotator(-15.0, yaw, 0.0)) for yaw in (-5.0, 0.0, 5.0)]
    for c in turns:  # a turn may extend the texels the map holds (its near cascade's region moves)
        backend.render(full, c, ("lit",))
    before = shadows.static_renders
    for c in turns + [cam]:
        backend.render(full, c, ("lit",))
    assert shadows.static_renders == before  # static scene, cameras it already covers: map reused
    moved = _scene(_actor("b", "box", (1000.0, 50.0, 0.0)), ground=Ground(texture="flat"), sun=sun)
    backend.render(moved, cam, ("lit",))
    assert shadows.static_renders == before + 1


def _video_frame(x_cm: float) -> Scene:
    """A static row of boxes plus one box moving along Y (a DSI-style video frame)."""
    still = [_actor(f"s{i}", "box", (900.0 + 150 * i, -300.0 + 200 * i, 0.0), i) for i in range(4)]
    mover = _actor("m", "cyl", (800.0, x_cm, 0.0), 4)
    return _scene(*still, mover, ground=Ground(texture="flat"), sun=Sun(pitch=35.0, yaw=20.0))


def test_shadows_do_not_depend_on_render_history(backend):
    """A video frame renders the same bytes whatever was rendered before it (and on a fresh
    backend): the shadow cache is keyed by the scene, never by history."""
    cam = _camera(160, 120, rotation=Rotator(-12.0, 0.0, 0.0))
    shadows = backend._passes.shadows
    frames = [backend.render(_video_frame(x), cam, ("lit",))["lit"] for x in (-200.0, -100.0, 0.0)]
    turned = _camera(160, 120, rotation=Rotator(-12.0, 5.0, 0.0))
    backend.render(_video_frame(0.0), turned, ("lit",))  # may extend the map's filled texels (gl/shadow.py)
    before = shadows.static_renders
    again_here = backend.render(_video_frame(0.0), cam, ("lit",))["lit"]
    backend.render(_video_frame(0.0), turned, ("lit",))
    assert shadows.static_renders == before  # nothing moved: the map, now covering both views, is reused
    assert np.array_equal(again_here, frames[-1])
    fresh = GLBackend(MESHES.__getitem__, shadow_map_size=1024)
    try:
        reference = fresh.render(_video_frame(0.0), cam, ("lit",))["lit"]
        again = fresh.render(_video_frame(-200.0), cam, ("lit",))["lit"]
    finally:
        fresh.close()
    assert np.array_equal(frames[-1], reference)
    assert np.array_equal(frames[0], again)
    assert not np.array_equal(frames[0], frames[-1])


def test_renders_are_deterministic(backend):
    scene, cam = _three_objects(), _camera(128, 96, rotation=Rotator(-5.0, 3.0, 0.0))
    first = backend.render(scene, cam, render_kinds.rendered())
    backend.render(_scene(_actor("x", "sphere", (500.0, 0.0, 0.0))), _camera(64, 64), render_kinds.rendered())  # churn caches
    second = backend.render(scene, cam, render_kinds.rendered())
    for k in render_kinds.rendered():
        assert first[k].tobytes() == second[k].tobytes(), k


def test_triangle_count_and_info(backend):
    scene = _three_objects()
    expected = 2 + sum(MESHES[a.asset_id].n_triangles for a in scene.actors.values())
    assert backend.triangle_count(scene) == expected
    info = backend.info()
    assert info["backend"] == "moderngl" and info["gl_renderer"] and info["gl_version"]


def test_missing_asset_propagates_the_providers_error(backend):
    with pytest.raises(KeyError):
        backend.render(_scene(_actor("x", "no_such_asset", (500.0, 0.0, 0.0))), _camera(), ("lit",))
    assert backend.render(_three_objects(), _camera(), ("instance_id",))["instance_id"].max() == 3


def test_threads_sets_llvmpipe_threads_only_when_unset():
    import os
    import subprocess
    import sys

    code = "from engine.server.gl.backend import GLBackend; print(GLBackend(lambda a: None, threads=1).info()['lp_num_threads'])"
    env = {k: v for k, v in os.environ.items() if k != "LP_NUM_THREADS"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert out.stdout.strip() == "1", out.stderr
    out = subprocess.run(
        [sys.executable, "-c", code], env={**env, "LP_NUM_THREADS": "2"}, capture_output=True, text=True, timeout=120
    )
    assert out.stdout.strip() == "2", out.stderr


def test_closed_backend_raises_render_error():
    b = GLBackend(MESHES.__getitem__, shadow_map_size=256)
    b.close()
    b.close()  # idempotent
    with pytest.raises(RenderError, match="closed"):
        b.render(_scene(), _camera(), ("lit",))
    assert b.info()["backend"] == "moderngl"


def test_look_at_camera_sees_target_at_image_centre(backend):
    eye, target = (-400.0, -600.0, 500.0), (1000.0, 200.0, 10.0)
    cam = Camera(eye, look_at_rotation(eye, target), fov_deg=50.0, width=161, height=121)
    ids = backend.render(_scene(_actor("a", "small", (target[0], target[1], 0.0))), cam, ("instance_id",))["instance_id"]
    c = _centroid(ids == 1)
    assert math.hypot(c[0] - 80.5, c[1] - 60.5) < 1.5


def test_every_default_library_asset_renders_where_projected():
    """Integration with the real asset pack: each asset, alone, is visible around its projected
    base centre, with its exact mask colour and finite depth."""
    from sceneforge.assets_manifest import AssetLibrary

    lib = AssetLibrary.default()
    b = GLBackend(lib.mesh, shadow_map_size=512)
    try:
        for i, asset in enumerate(lib.ids()):
            size = float(np.max(lib.mesh(asset).bounds()[1] - lib.mesh(asset).bounds()[0]))
            dist = 1.5 * size + 100.0  # the asset fills a good part of the frame
            cam = Camera(
                (0.0, 0.0, 0.4 * size + 50.0),
                look_at_rotation((0, 0, 0.4 * size + 50.0), (dist, 0, 0)),
                fov_deg=70.0,
                width=96,
                height=96,
            )
            actor = Actor("a", asset, Transform((dist, 0.0, 0.0)), color=instance_color(i))
            out = b.render(_scene(actor), cam, ("lit", "object_mask", "depth", "instance_id"))
            hit = out["instance_id"] == 1
            assert hit.sum() > 20, asset
            assert (out["object_mask"][hit] == actor.color).all(), asset
            assert np.isfinite(out["depth"][hit]).all() and (out["depth"][hit] > 0).all(), asset
            uv, _ = cam.project(np.array([[dist, 0.0, 0.0]]))
            xs = np.nonzero(hit)[1]
            assert xs.min() - 1 <= uv[0, 0] <= xs.max() + 1, asset
    finally:
        b.close()


def test_images_are_the_same_bytes_at_any_llvmpipe_thread_count():
    """An inline job's server takes the free cores as rasteriser threads (renderfarm.auto
    .inline_threads), so a dataset must not depend on them: lit (PBR, shadows, FXAA, textured
    ground, fog), depth and ids of an environment scene are byte-identical with 1, 2 and 3 threads."""
    import os
    import subprocess
    import sys

    code = (
        "import hashlib, math\n"
        "from engine.server.gl.backend import GLBackend\n"
        "from engine.world import Actor, Camera, Ground, Rotator, Scene, Transform, look_at_rotation\n"
        "from assets_manifest import AssetLibrary\n"
        "from scenarios.world.environments import load_env\n"
        "lib = AssetLibrary.default()\n"
        "scene = Scene()\n"
        "load_env('forest').apply_to(scene)\n"
        "ids = [i.id for i in lib.by_class('tree')][:2] + [i.id for i in lib.by_class('car')][:1]\n"
        "for k, a in enumerate(ids * 3):\n"
        "    scene.add(Actor(f'o{k}', a, Transform((900.0 + 500 * k, 300.0 * math.sin(k), 0.0), Rotator(0, 40.0 * k, 0))))\n"
        "b = GLBackend(lib.mesh)\n"
        "h = hashlib.sha256()\n"
        "for j in range(3):\n"
        "    eye = (0.0, 100.0 * j, 170.0)\n"
        "    cam = Camera(eye, look_at_rotation(eye, (2500.0, 0.0, 100.0)), fov_deg=60.0, width=160, height=120)\n"
        "    out = b.render(scene, cam, ('lit', 'depth', 'instance_id'))\n"
        "    for k in sorted(out): h.update(out[k].tobytes())\n"
        "print(h.hexdigest())\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "LP_NUM_THREADS"}
    digests = set()
    for n in (1, 2, 3):
        out = subprocess.run(
            [sys.executable, "-c", code], env={**env, "LP_NUM_THREADS": str(n)}, capture_output=True, text=True, timeout=300
        )
        assert out.returncode == 0, out.stderr[-2000:]
        digests.add(out.stdout.strip())
    assert len(digests) == 1 and len(next(iter(digests))) == 64
