"""Cycles renders the pose the GL renderer draws (issue 49 item 2), with the fixture pack
(tests/oad_fixture.py: a 2-bone "leg" installed as the ``chicken`` class, 45 cm tall, its knee
bending 0 -> 90 degrees over half a cycle). Cycles gets the CPU-skinned mesh of each pose (one
Blender mesh per actor, moved to each new pose by its vertices), GL skins the same pose on the
GPU. Tolerance: Cycles' own object-index pass equals GL's instance ids but for at most 1 % of the
silhouette's pixels (edge pixels: Cycles samples within ±0.005 px of the pixel centre; on the
real pack's human the two were equal to the pixel, on a horse 3 of 1,515 pixels differed)."""

from __future__ import annotations

import numpy as np
import pytest
from oad_fixture import install_pack

from sceneforge.assets_manifest.characters.library import CharacterLibrary
from sceneforge.engine.server import characters as ch
from sceneforge.engine.server.catalog import AssetCatalog
from sceneforge.engine.server.cycles import install
from sceneforge.engine.world import Actor, Camera, Ground, Scene, Transform, look_at_rotation

pytestmark = [
    pytest.mark.cycles,
    pytest.mark.render,
    pytest.mark.skipif(install.status() is None, reason=f"Cycles is not installed: {install.INSTALL_HINT}"),
]
SIZE = 96
EYE, TARGET = (110.0, 20.0, 30.0), (0.0, 0.0, 22.0)


@pytest.fixture(scope="module")
def cycles(tmp_path_factory):
    from sceneforge.engine.server.cycles.backend import CyclesBackend, CyclesSettings

    tmp = tmp_path_factory.mktemp("pack")
    root = install_pack(tmp / "cache", tmp)
    catalog = AssetCatalog(None, characters=lambda: CharacterLibrary(root))
    b = CyclesBackend(catalog.mesh, settings=CyclesSettings(samples=4, threads=1))
    yield b
    b.close()


def scene_at(phase: float) -> Scene:
    scene = Scene(ground=Ground(color=(120, 132, 96), extent=2000.0))
    scene.add(Actor("leg", ch.posed_id("chicken", 0, "walk", phase), Transform((0.0, 0.0, 0.0), (0.0, 20.0, 0.0))))
    return scene


def test_cycles_renders_the_same_pose_as_gl_and_follows_each_new_pose(cycles):
    cam = Camera(EYE, look_at_rotation(EYE, TARGET), 40.0, SIZE, SIZE)
    masks = {}
    for phase in (0.0, 0.5, 0.0):  # a new pose, then back: the same Blender mesh moved each time
        scene = scene_at(phase)
        cy = cycles.render_cycles(scene, cam, ("instance_id",))["instance_id"] == 1
        gl = cycles.gl.render(scene, cam, ("instance_id",))["instance_id"] == 1
        assert gl.sum() > 150 and (cy != gl).sum() <= max(1, int(0.01 * gl.sum())), ((cy != gl).sum(), gl.sum())
        masks.setdefault(phase, []).append(gl)
    assert (masks[0.0][0] != masks[0.5][0]).sum() > 0.2 * masks[0.5][0].sum()  # the knee really bent
    assert np.array_equal(masks[0.0][0], masks[0.0][1])
    assert sum(k.startswith("posed:") for k in cycles._uploaded) == 1  # one mesh for the actor's poses


def test_a_character_is_shaded_by_cycles_not_black(cycles):
    """The pack's triangles wind clockwise about their normals; flipped at load, like every
    RenderMesh, Cycles shades their front (it rendered the figures black before)."""
    cam = Camera(EYE, look_at_rotation(EYE, TARGET), 40.0, SIZE, SIZE)
    scene = scene_at(0.25)
    lit = cycles.render(scene, cam, ("lit",))["lit"].astype(float)
    out = cycles.gl.render(scene, cam, ("lit", "instance_id"))
    body = out["instance_id"] == 1
    assert lit[body].mean() > 0.5 * out["lit"][body].astype(float).mean()
