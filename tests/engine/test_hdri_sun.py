"""An HDRI's own sun is turned to where the analytic ``Sun`` is (issue 14): the sky shows the sun
where the shadows say it is. Synthetic HDRIs with a bright spot at a known direction; expected
directions come from how the images are made, never from the renderer."""

from __future__ import annotations

import math

import numpy as np
import pytest

from sceneforge.engine.server.gl.backend import GLBackend
from sceneforge.engine.server.gl.envlight import directions, hdri_sun, sky_rotation_deg
from sceneforge.engine.world import Camera, Rotator, Scene, Sky, Sun

W, H = 512, 256


def _sky_with_sun(yaw_deg: float, elev_deg: float, peak: float = 5000.0) -> np.ndarray:
    """Dim blue-ish sky, darker ground, and a 1.5°-radius sun at (yaw, elevation)."""
    d, _ = directions(W, H)
    img = np.where(d[..., 2:3] > 0, [0.4, 0.6, 1.0], [0.1, 0.1, 0.08]).astype(np.float32)
    y, e = math.radians(yaw_deg), math.radians(elev_deg)
    s = np.array([math.cos(e) * math.cos(y), math.cos(e) * math.sin(y), math.sin(e)])
    img[(d @ s) > math.cos(math.radians(1.5))] = peak
    return img


def test_finds_a_clear_sun():
    for yaw, elev in ((100.0, 20.0), (-150.0, 45.0), (10.0, 3.0)):
        found = hdri_sun(_sky_with_sun(yaw, elev))
        assert found is not None
        assert abs((found[0] - yaw + 180) % 360 - 180) < 1.5 and abs(found[1] - elev) < 1.5


def test_no_sun_in_overcast_or_clipped_skies():
    d, _ = directions(W, H)
    overcast = np.repeat((0.5 + 0.5 * np.clip(d[..., 2:3], 0, 1)), 3, axis=-1).astype(np.float32)
    assert hdri_sun(overcast) is None
    clipped = np.minimum(_sky_with_sun(100.0, 30.0, peak=1.0) * 3.0, 1.0)  # LDR: sun = bright cloud
    clipped[(d[..., 2] > 0.3) & (d[..., 0] > 0.2)] = 1.0  # a wide clipped region
    assert hdri_sun(clipped) is None
    assert hdri_sun(np.zeros((H, W, 3), np.float32)) is None


def test_rotation_puts_the_hdri_sun_at_the_sun_yaw():
    sun = Sun(pitch=35.0, yaw=-40.0)
    assert sky_rotation_deg(Sky(hdri="x"), sun, 100.0) == pytest.approx(-140.0)  # 100 - 140 = -40
    assert sky_rotation_deg(Sky(hdri="x", rotation_deg=25.0), sun, None) == 25.0  # no clear sun
    assert sky_rotation_deg(Sky(hdri="x", rotation_deg=25.0, align_sun=False), sun, 100.0) == 25.0


class Content:
    def __init__(self, img):
        self.img = img

    def hdri(self, ident: str):
        return self.img

    def surface(self, ident: str):
        return None


def test_rendered_sky_shows_the_hdri_sun_at_the_sun_yaw():
    """Camera looking at the Sun's yaw, at the HDRI sun's elevation: aligned, the brightest sky
    pixel is in the middle of the image; not aligned (rotation 0), the spot is out of view."""
    img = _sky_with_sun(100.0, 20.0)
    backend = GLBackend({}.__getitem__, content=Content(img))
    try:
        cam = Camera(location=(0.0, 0.0, 170.0), rotation=Rotator(20.0, -40.0, 0.0), fov_deg=40.0, width=64, height=48)
        out = {}
        for align in (True, False):
            scene = Scene(sun=Sun(pitch=35.0, yaw=-40.0), sky=Sky(hdri="synthetic", align_sun=align))
            out[align] = backend.render(scene, cam, ("lit",))["lit"].astype(float).sum(axis=-1)
        y, x = np.unravel_index(np.argmax(out[True]), out[True].shape)
        assert abs(x - 32) <= 3 and abs(y - 24) <= 3, (x, y)
        assert out[True].max() > out[False].max() + 100
    finally:
        backend.close()


def _needs_cycles(fn):
    from sceneforge.engine.server.cycles import install

    have = install.status() is not None
    for mark in (
        pytest.mark.cycles,
        pytest.mark.render,
        pytest.mark.skipif(not have, reason=f"Cycles is not installed: {install.INSTALL_HINT}"),
    ):
        fn = mark(fn)
    return fn


@_needs_cycles
def test_cycles_shows_the_hdri_sun_where_gl_does():
    """Same world, same camera: Cycles' brightest sky pixel (the HDRI's sun, turned to the Sun's
    yaw) lies where GL's does, in the middle of the view."""
    from sceneforge.engine.server.cycles.backend import CyclesBackend, CyclesSettings

    content = Content(_sky_with_sun(100.0, 20.0))
    cycles = CyclesBackend({}.__getitem__, settings=CyclesSettings(samples=2, threads=1), content=content)
    try:
        cam = Camera(location=(0.0, 0.0, 170.0), rotation=Rotator(20.0, -40.0, 0.0), fov_deg=60.0, width=64, height=48)
        scene = Scene(sun=Sun(pitch=35.0, yaw=-40.0), sky=Sky(hdri="synthetic"))
        lit = cycles.render(scene, cam, ("lit",))["lit"].astype(float).sum(axis=-1)
        y, x = np.unravel_index(np.argmax(lit), lit.shape)
        assert abs(x - 32) <= 3 and abs(y - 24) <= 4, (x, y)
    finally:
        cycles.close()
