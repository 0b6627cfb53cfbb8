"""Suns damaged by lossy EXR compression (assets_manifest/hdri_repair.py)."""

from __future__ import annotations

import numpy as np

from sceneforge.assets_manifest.hdri_repair import repair_hot_spots

SKY = np.array([0.6, 0.8, 1.2], np.float32)


def _sky(h=64, w=128):
    return np.ones((h, w, 3), np.float32) * SKY


def test_a_ringing_sun_becomes_a_bright_disc_of_the_same_energy():
    """The pattern decoded from @pmndrs/assets' park.exr (DWAB): the sun pixel is (0, 0, 11800)
    after clipping, its neighbours had channels of -1000 (clipped to 0: black holes) and others
    carry part of the energy in one channel only. Rendered, that was a saturated blue square."""
    a = _sky()
    a[20, 70] = [3.6e-7, 4.0e-6, 11800.0]
    a[20, 69] = [3.0e-7, 0.0, 5352.0]
    a[20, 71] = [0.0, 2.2e-6, 0.0]  # was (0, 2e-6, -1425)
    a[21, 70] = [0.0, 0.0, 0.0]  # was negative in every channel
    a[19, 72] = [15.5, 13.5, 9.8]
    energy = float((a.mean(-1) - SKY.mean()).clip(0).sum())
    r = repair_hot_spots(a)
    assert r is not a
    hot = r.max(-1) > 50
    assert hot.any()
    px = r[hot]
    assert (px.min(-1) > 0.5 * px.max(-1)).all()  # no pure-blue pixel left: neutral
    assert (r[16:26, 64:78].max(-1) > 0.5 * SKY.max()).all()  # no black hole around it
    got = float((r.mean(-1) - SKY.mean()).clip(0).sum())
    assert abs(got - energy) < 0.02 * energy  # the sun's energy is kept
    cy, cx = np.unravel_index(np.argmax(r.mean(-1)), r.shape[:2])
    assert abs(cy - 20) <= 1 and abs(cx - 70) <= 1  # where it was
    assert np.array_equal(r[:10], a[:10]) and np.array_equal(r[40:], a[40:])  # only the spot changes


def test_a_clean_sun_and_an_image_without_one_are_left_as_they_are():
    a = _sky()
    a[20, 70] = [33952.0, 31696.0, 25792.0]  # bd_city's sun: intact
    a[20, 71] = [9000.0, 8500.0, 7000.0]
    assert repair_hot_spots(a) is a
    b = _sky()
    assert repair_hot_spots(b) is b


def test_the_repair_is_deterministic():
    a = _sky()
    a[30, 10] = [0.0, 0.0, 9000.0]
    assert np.array_equal(repair_hot_spots(a.copy()), repair_hot_spots(a.copy()))
