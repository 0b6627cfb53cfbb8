"""GPU skinning of characters (engine/server/gl/skinning.py), with the fixture pack
(tests/oad_fixture.py: a 2-bone "leg" installed as the ``chicken`` class, 45 cm tall; its clip bends
the knee about the data's Z by 0, 30, 90, 30 degrees over the cycle).

Tolerances, GPU vs the CPU-skinned reference (``GLBackend(gpu_skinning=False)``): instance ids
equal but for at most 0.5 % of the silhouette's pixels (float rounding of a vertex can move an
edge pixel; measured 0 on the real pack's human, camel and horse), planar depth within 0.1 cm
where both see the character, normals within 1e-3. Lit colours are not compared: the sun's shadow
cascade is fitted to the draws' bounding spheres, and a GPU pose's is the conservative one of
``SkinRig.bounding_sphere`` (a few % larger), which moves shadow texels."""

from __future__ import annotations

import math

import numpy as np
import pytest
from oad_fixture import install_pack

from sceneforge.assets_manifest.characters.library import CharacterLibrary
from sceneforge.engine.server import characters as ch
from sceneforge.engine.server.catalog import AssetCatalog
from sceneforge.engine.server.gl.backend import GLBackend
from sceneforge.engine.server.gl.resources import VERTEX_DTYPE
from sceneforge.engine.world import Actor, Camera, Ground, Scene, Transform, look_at_rotation

SIZE = 128
EYE, TARGET = (110.0, 20.0, 30.0), (0.0, 0.0, 22.0)
KINDS = ("instance_id", "plane_depth", "normal", "lit")


@pytest.fixture(scope="module")
def catalog(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("pack")
    root = install_pack(tmp / "cache", tmp)
    return AssetCatalog(None, characters=lambda: CharacterLibrary(root))


@pytest.fixture(scope="module")
def backends(catalog):
    gpu, cpu = GLBackend(catalog.mesh, shadow_map_size=512), GLBackend(catalog.mesh, shadow_map_size=512, gpu_skinning=False)
    yield gpu, cpu
    gpu.close()
    cpu.close()


def camera() -> Camera:
    return Camera(EYE, look_at_rotation(EYE, TARGET), 40.0, SIZE, SIZE)


def scene_of(*actors: Actor) -> Scene:
    scene = Scene(ground=Ground(color=(120, 132, 96), extent=2000.0))
    for a in actors:
        scene.add(a)
    return scene


def assert_same_render(a: dict, b: dict) -> None:
    sil = b["instance_id"] > 0
    assert sil.sum() > 150
    assert (a["instance_id"] != b["instance_id"]).sum() <= max(1, int(0.005 * sil.sum()))
    both = (a["instance_id"] > 0) & sil
    assert np.abs(a["plane_depth"][both] - b["plane_depth"][both]).max() < 0.1
    assert np.abs(a["normal"][both].astype(float) - b["normal"][both].astype(float)).max() < 1e-3


@pytest.mark.parametrize("phase", [0.0, 0.3, 0.5, 0.8])
def test_gpu_skinned_render_equals_the_cpu_skinned_one(backends, phase):
    gpu, cpu = backends
    # two actors of one rig in different poses (each owns its posed buffer), one of them mirrored
    scene = scene_of(
        Actor("a", ch.posed_id("chicken", 0, "walk", phase), Transform((0.0, -15.0, 0.0), (0.0, 20.0, 0.0))),
        Actor("b", ch.posed_id("chicken", 0, "walk", phase + 0.5), Transform((0.0, 15.0, 0.0), scale=(1.0, -1.0, 1.0))),
    )
    a, b = gpu.render(scene, camera(), KINDS), cpu.render(scene, camera(), KINDS)
    assert_same_render(a, b)
    assert (a["instance_id"] == 1).sum() > 50 and (a["instance_id"] == 2).sum() > 50


def test_a_vertex_of_the_shader_output_is_the_hand_computed_skinning(backends, catalog):
    """The fixture's vertices by hand: ring 0 on bone 0 (still), ring 2 on bone 1 (the knee at
    data (0, 1, 0), bent 90 degrees about Z at phase 0.5 = frame 2), ring 1 half and half; data
    (x, y, z) -> UE (-z, -x, y) x 22.5 cm per unit (45 cm / 2 units tall)."""
    gpu, _ = backends
    aid = ch.posed_id("chicken", 0, "walk", 0.5)
    gpu.render(scene_of(Actor("leg", aid)), camera(), ("instance_id",))
    mesh = gpu._passes.skinning.buffers[("character:chicken:0", "leg")][0]
    with gpu._using():
        out = np.frombuffer(mesh.vbo.read(), VERTEX_DTYPE)
    knee, c, s = np.array([0.0, 1.0, 0.0]), math.cos(math.pi / 2), math.sin(math.pi / 2)
    want = []
    for ring, y in enumerate((0.0, 1.0, 2.0)):
        for x, z in ((-0.1, -0.1), (0.1, -0.1), (0.1, 0.1), (-0.1, 0.1)):
            v = np.array([x, y, z])
            d = v - knee
            bent = knee + np.array([c * d[0] - s * d[1], s * d[0] + c * d[1], d[2]])
            p = (v, 0.5 * v + 0.5 * bent, bent)[ring]
            want.append(np.array([-p[2], -p[0], p[1]]) * 22.5)
    assert len(out) == 12
    np.testing.assert_allclose(out["pos"], np.array(want), atol=1e-3)
    tip = out["pos"][10]  # data (0.1, 2, 0.1): bent to (-1, 1.1, 0.1)
    np.testing.assert_allclose(tip, [-2.25, 22.5, 24.75], atol=1e-3)
    # its normal: the bind normal turned by the same 90 degrees, unit length
    assert np.allclose(np.linalg.norm(out["nrm"], axis=1), 1.0, atol=1e-5)
    # and the CPU reference of the same pose agrees vertex for vertex
    rig, palette = catalog.skinned(aid)
    np.testing.assert_allclose(out["pos"], rig.skin(palette)[0], atol=1e-3)
    np.testing.assert_allclose(catalog.mesh(aid).vertices, rig.skin(palette)[0], atol=1e-3)


def test_the_buffer_is_reskinned_only_when_the_pose_changes_and_the_shadow_follows(backends):
    gpu, _ = backends
    cam = camera()
    scene0 = scene_of(Actor("leg", ch.posed_id("chicken", 0, "walk", 0.0)))
    lit0 = gpu.render(scene0, cam, ("lit",))["lit"]
    mesh = gpu._passes.skinning.buffers[("character:chicken:0", "leg")][0]
    serial = mesh.pose_serial
    again = gpu.render(scene_of(Actor("leg", ch.posed_id("chicken", 0, "walk", 0.0))), cam, ("lit",))["lit"]
    assert mesh.pose_serial == serial and np.array_equal(again, lit0)  # the same pose: not skinned again
    bent = gpu.render(scene_of(Actor("leg", ch.posed_id("chicken", 0, "walk", 0.5))), cam, ("lit",))["lit"]
    assert mesh.pose_serial != serial and not np.array_equal(bent, lit0)
    back = gpu.render(scene0, cam, ("lit",))["lit"]
    assert np.array_equal(back, lit0)  # the shadow map and the buffer went back to the first pose


def test_a_rig_too_big_for_the_uniforms_is_drawn_skinned_on_the_cpu(catalog, backends):
    _, cpu = backends
    small = GLBackend(catalog.mesh, shadow_map_size=512)
    try:
        small._passes.skinning.max_slots = 0  # as if the context had no room for the palette
        scene = scene_of(Actor("leg", ch.posed_id("chicken", 0, "walk", 0.3)))
        a = small.render(scene, camera(), KINDS)
        assert not small._passes.skinning.buffers  # nothing was skinned on the GPU
        b = cpu.render(scene, camera(), KINDS)
        assert np.array_equal(a["instance_id"], b["instance_id"]) and np.array_equal(a["lit"], b["lit"])
    finally:
        small.close()


def test_flow_moves_each_surface_point_by_its_own_skinning(catalog, backends):
    """The renderer's previous-pose points (gl/skin_flow.py) cover exactly the character's id
    pixels, and the flow at the pixel of each visible face's centroid is that centroid's own
    projected motion (knee bending 0 -> 90 degrees while the actor steps 3 cm sideways) within
    1.5 px (the pixel centre lies within 0.71 px of the centroid). The nearest-vertex blend used
    without GPU skinning is off by more than 10 px on some of those faces."""
    from sceneforge.engine.server.optical_flow import optical_flow, snapshot

    gpu, _ = backends
    cam = Camera((110.0, 0.0, 25.0), look_at_rotation((110.0, 0.0, 25.0), (0.0, 0.0, 22.0)), 40.0, SIZE, SIZE)
    a0, a1 = ch.posed_id("chicken", 0, "walk", 0.0), ch.posed_id("chicken", 0, "walk", 0.5)
    s0, s1 = scene_of(Actor("leg", a0)), scene_of(Actor("leg", a1, Transform((0.0, 3.0, 0.0))))
    gpu.render(s0, cam, ("instance_id",))
    prev = snapshot(s0, cam)
    out = gpu.render(s1, cam, ("instance_id", "plane_depth"))
    ids, depth = out["instance_id"], out["plane_depth"]
    then = gpu.skinned_then(s1, cam, prev.assets)
    assert then is not None and np.array_equal(then[..., 3] > 0.5, ids == 1)
    assert gpu.skinned_then(s1, cam, {"leg": a1}) is None  # same pose: nothing to carry
    flow = optical_flow(prev, s1, cam, depth, ids, mesh_of=catalog.mesh, then_local=then)
    nearest = optical_flow(prev, s1, cam, depth, ids, mesh_of=catalog.mesh)
    now, before = catalog.mesh(a1), catalog.mesh(a0)
    errors, nearest_errors = [], []
    for face in now.faces:
        c1 = now.vertices[face].astype(float).mean(0) + (0.0, 3.0, 0.0)
        c0 = before.vertices[face].astype(float).mean(0)
        (uv1, d1), (uv0, _) = cam.project(c1[None]), cam.project(c0[None])
        col, row = int(uv1[0][0]), int(uv1[0][1])
        if (
            0 <= row < SIZE and 0 <= col < SIZE and ids[row, col] == 1 and abs(depth[row, col] - d1[0]) < 0.5
        ):  # this face is seen there
            want = uv1[0] - uv0[0]
            errors.append(np.linalg.norm(flow[row, col] - want))
            nearest_errors.append(np.linalg.norm(nearest[row, col] - want))
    assert len(errors) >= 3 and max(errors) < 1.5, errors
    assert max(nearest_errors) > 10.0, nearest_errors


def test_gpu_skinned_renders_are_byte_identical_in_a_fresh_renderer(catalog, backends):
    gpu, _ = backends
    scene = scene_of(Actor("a", ch.posed_id("chicken", 0, "walk", 0.3)), Actor("b", ch.posed_id("human", 0, "walk", 0.7)))
    fresh = GLBackend(catalog.mesh, shadow_map_size=512)
    try:
        a, b = gpu.render(scene, camera(), KINDS), fresh.render(scene, camera(), KINDS)
        for k in KINDS:
            assert a[k].tobytes() == b[k].tobytes(), k
    finally:
        fresh.close()


def test_a_gpu_posed_frame_skins_nothing_on_the_cpu(catalog, backends):
    """The server's per-request triangle bound counts a character's rig (catalog.triangles) and the
    GL renderer draws from the palette: a new pose builds no CPU mesh (it would cost ~3 ms)."""
    gpu, _ = backends
    aid = ch.posed_id("chicken", 0, "walk", 0.77)
    assert catalog.triangles(aid) == catalog.skinned(aid)[0].mesh.n_triangles
    gpu.render(scene_of(Actor("leg", aid)), camera(), ("lit", "instance_id"))
    assert aid not in catalog.characters._meshes
    assert catalog.triangles(aid) == catalog.mesh(aid).n_triangles  # the same count as the posed mesh
    assert gpu.triangle_count(scene_of(Actor("leg", ch.posed_id("chicken", 0, "walk", 0.81)))) == gpu.triangle_count(
        scene_of(Actor("leg", ch.posed_id("chicken", 0, "walk", 0.0)))
    )
    assert ch.posed_id("chicken", 0, "walk", 0.81) not in catalog.characters._meshes
