"""Skinned characters in the server (issue 49 item 2), with the fixture pack (tests/oad_fixture.py:
a 2-bone "leg" installed where the ``chicken`` class looks, 45 cm tall; its clip bends the knee by
0, 30, 90, 30 degrees over the cycle)."""

from __future__ import annotations

import io
import math

import numpy as np
import pytest
from oad_fixture import install_pack

from sceneforge.assets_manifest.characters.library import CharacterLibrary
from sceneforge.core.errors import AssetError, CommandError
from sceneforge.engine.client import RenderClient
from sceneforge.engine.server import characters as ch
from sceneforge.engine.server.catalog import AssetCatalog
from sceneforge.engine.server.gl.backend import GLBackend
from sceneforge.engine.server.launch import start_server
from sceneforge.engine.world import Actor, Camera, Scene, Transform, look_at_rotation

SIZE = 128
EYE, TARGET = (110.0, 0.0, 25.0), (0.0, 0.0, 22.0)  # looking along -X: the knee bends in the Y-Z plane


@pytest.fixture(scope="module")
def pack(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("pack")
    root = install_pack(tmp / "cache", tmp)
    return tmp / "cache", root


@pytest.fixture(scope="module")
def catalog(pack):
    return AssetCatalog(None, characters=lambda: CharacterLibrary(pack[1]))


@pytest.fixture(scope="module")
def backend(catalog):
    b = GLBackend(catalog.mesh, shadow_map_size=512)
    yield b
    b.close()


def camera() -> Camera:
    return Camera(EYE, look_at_rotation(EYE, TARGET), 40.0, SIZE, SIZE)


def silhouette(mesh, cam: Camera, transform: Transform) -> np.ndarray:
    """The skinned mesh's triangles projected and filled on the CPU: its true silhouette."""
    world = transform.apply(mesh.vertices.astype(np.float64))
    uv, _depth = cam.project(world)
    v, u = np.mgrid[0 : cam.height, 0 : cam.width] + 0.5  # pixel centres, as the rasteriser samples
    out = np.zeros((cam.height, cam.width), bool)
    for a, b, c in uv[mesh.faces]:
        d = (b[1] - c[1]) * (a[0] - c[0]) + (c[0] - b[0]) * (a[1] - c[1])
        if abs(d) < 1e-12:
            continue
        w0 = ((b[1] - c[1]) * (u - c[0]) + (c[0] - b[0]) * (v - c[1])) / d
        w1 = ((c[1] - a[1]) * (u - c[0]) + (a[0] - c[0]) * (v - c[1])) / d
        out |= (w0 >= 0) & (w1 >= 0) & (1 - w0 - w1 >= 0)
    return out


def test_posed_ids_round_trip_and_bad_ids_are_refused(catalog):
    i = ch.posed_id("chicken", 0, "walk", 2.5)
    assert i == "character:chicken:0:walk:128" and ch.parse(i) == ("chicken", 0, "walk", 0.5)
    assert catalog.resolve(i) == i and catalog.asset_class(i) == "chicken"
    for bad in ("character:chicken:0:fly:1", "character:chicken:0:walk:256", "character:../x:0:walk:1", "character:"):
        with pytest.raises(AssetError):
            catalog.resolve(bad)
    with pytest.raises(AssetError, match="no character class 'horse'"):
        catalog.resolve("character:horse:0:walk:0")
    with pytest.raises(AssetError, match="no character pack"):
        AssetCatalog(None).resolve(i)


def test_a_posed_character_has_its_species_height_and_bends(catalog):
    straight, bent = catalog.mesh(ch.posed_id("chicken", 0, "walk", 0.0)), catalog.mesh(ch.posed_id("chicken", 0, "walk", 0.5))
    assert straight.vertices[:, 2].max() == pytest.approx(45.0, abs=0.01)  # the species' real height
    # the tip of the leg: up the Z axis when straight; bent 90 deg about the data's Z (UE's -Y)
    tip = np.argmax(straight.vertices[:, 2])
    assert bent.vertices[tip, 2] < 0.7 * straight.vertices[tip, 2]
    assert len(straight.vertices) == len(bent.vertices) and straight.meta["license"] == "cc-by-sa-3.0"


@pytest.mark.parametrize("phase", [0.0, 0.25, 0.5])
def test_mask_of_a_character_is_its_skinned_silhouette(catalog, backend, phase):
    aid = ch.posed_id("chicken", 0, "walk", phase)
    tf = Transform((0.0, 0.0, 0.0))
    scene = Scene()
    scene.add(Actor("leg", aid, tf))
    ids = backend.render(scene, camera(), ("instance_id",))["instance_id"]
    mask = ids == 1
    truth = silhouette(catalog.mesh(aid), camera(), tf)
    inter, union = (mask & truth).sum(), (mask | truth).sum()
    assert truth.sum() > 150 and inter / union > 0.9, (inter / union, mask.sum(), truth.sum())
    other = silhouette(catalog.mesh(ch.posed_id("chicken", 0, "walk", 0.5 if phase < 0.5 else 0.0)), camera(), tf)
    assert (mask & other).sum() / (mask | other).sum() < inter / union - 0.1  # the pose is what matched


@pytest.fixture(scope="module")
def server(pack, tmp_path_factory):
    srv = start_server(port=0, output_dir=tmp_path_factory.mktemp("out"), env={"SCENEFORGE_CACHE": str(pack[0])})
    yield srv
    srv.stop()


def test_character_poses_over_the_protocol_with_flow_from_skinning(server, catalog):
    with RenderClient(server.address, timeout=120) as c:
        c.reset()
        c.set_world({})
        c.spawn(
            [Actor("leg", ch.posed_id("chicken", 0, "walk", 0.0)), Actor("box", "primitive_cube", Transform((0.0, 300.0, 0.0)))]
        )
        cam = camera()
        c.set_camera(0, cam)
        first = c.render(0, ("instance_id",), camera=cam)["instance_id"]
        assert not np.load(io.BytesIO(c.binary("vget /camera/0/optical_flow npy"))).any()  # t-1 is taken here
        c.set_character_poses({"leg": {"clip": "walk", "phase": 0.5}})
        flow_img = np.load(io.BytesIO(c.binary("vget /camera/0/optical_flow npy")))
        ids = c.render(0, ("instance_id",), camera=cam)["instance_id"]
        assert not np.array_equal(first == 1, ids == 1)  # the shape changed
        # flow at the bent tip points back to where that surface was: the tip vertex's own path
        bent, straight = (
            catalog.mesh(ch.posed_id("chicken", 0, "walk", 0.5)),
            catalog.mesh(ch.posed_id("chicken", 0, "walk", 0.0)),
        )
        tip = int(np.argmax(straight.vertices[:, 2]))
        (u1, v1), (u0, v0) = (
            cam.project(bent.vertices[[tip]].astype(float))[0][0],
            cam.project(straight.vertices[[tip]].astype(float))[0][0],
        )
        vs, us = np.nonzero(ids == 1)
        near = np.argmin((us + 0.5 - u1) ** 2 + (vs + 0.5 - v1) ** 2)
        flow = flow_img[vs[near], us[near]]
        want = np.array([u1 - u0, v1 - v0])
        assert math.hypot(*want) > 10.0 and np.linalg.norm(flow - want) < 0.25 * np.linalg.norm(want), (flow, want)
        with pytest.raises(CommandError, match="not a character"):
            c.set_character_poses({"box": {"clip": "walk", "phase": 0.1}})
        with pytest.raises(CommandError, match="clip"):
            c.set_character_poses({"leg": {"clip": "fly", "phase": 0.1}})
        with pytest.raises(CommandError):
            c.text('vset /sceneforge/character_poses {"leg":{"clip":"walk","phase":1e999}}')


def test_a_posed_id_with_props_keeps_them_through_a_new_pose(catalog):
    i = ch.posed_id("chicken", 0, "walk", 2.5, props=True)
    assert i == "character:chicken:0:walk:128:props" and ch.parse(i) == ("chicken", 0, "walk", 0.5) and ch.has_props(i)
    assert catalog.resolve(i) == i and not ch.has_props(ch.posed_id("chicken", 0, "walk", 2.5))
    for bad in ("character:chicken:0:walk:1:prop", "character:chicken:0:walk:1:props:props"):
        with pytest.raises(AssetError):
            catalog.resolve(bad)
