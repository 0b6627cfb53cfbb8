"""HDRIs and surface textures: licences per item, procedural fallback, offline fallback in one line."""

from __future__ import annotations

import os
import stat

import numpy as np
import pytest

from sceneforge.assets_manifest import AssetLibrary, looks
from sceneforge.assets_manifest.build import ensure_defaults, missing_defaults
from sceneforge.core.errors import AssetError


def test_surfaces_resolve_without_any_download(tmp_path):
    lib = AssetLibrary.default(cache_dir=tmp_path)
    assert lib.hdri_ids() == []  # nothing built: no HDRI, the renderer falls back
    for sid in lib.surface_ids():
        m = lib.surface(sid)
        assert m.albedo.dtype == np.uint8 and m.albedo.shape[2] == 3 and m.normal_map.shape[2] == 3
        assert m.license == "cc0-1.0" and "procedural" in m.attribution and m.tile_cm > 0
    sand = lib.surface("sand").albedo.astype(float)
    # tileable: the wrap-around seam is no stronger than a step between neighbouring texels
    seam = np.abs(sand[:, 0] - sand[:, -1]).mean()
    step = np.abs(np.diff(sand, axis=1)).mean()
    assert seam < 2.5 * step
    assert np.array_equal(lib.surface("sand").albedo, looks.surface(tmp_path, "sand").albedo)  # deterministic
    with pytest.raises(AssetError, match="unknown surface 'lava'"):
        lib.surface("lava")
    with pytest.raises(AssetError, match="not built"):
        lib.hdri("pm_park")


def test_every_catalog_item_has_a_licence_and_credit():
    cat = looks.catalog()
    for h in cat["hdris"]:
        assert h["license"] and h["attribution"] and h["source"] in cat["sources"]
    for s in cat["surfaces"]:
        assert s["tile_cm"] > 0 and s["procedural"]["colors"]
        if s.get("albedo"):
            assert s["albedo"]["license"] and s["albedo"]["attribution"]


def test_card_entries_cover_every_look_of_the_environments(tmp_path):
    from sceneforge.scenarios.world.environments import list_envs, load_env

    lib = AssetLibrary.default(cache_dir=tmp_path)
    worlds = [load_env(name, library=lib).world for name in list_envs()]
    used = looks.looks_in(worlds + [{"sky": {"hdri": "pm_park"}, "look": {"hdris": ["bd_forest"]}}])
    assert {"sand", "grass", "snow", "asphalt"} <= set(used["surfaces"])
    assert used["hdris"] == ["bd_forest", "pm_park"]
    entries = lib.look_attributions(**used)
    ids = {e["id"] for e in entries}
    assert ids >= {"sand", "grass", "pm_park", "bd_forest"}
    assert all(e["license"] and e["attribution"] for e in entries)


def test_exr_round_trip(tmp_path):
    OpenEXR = pytest.importorskip("OpenEXR")
    rgb = (np.random.default_rng(0).random((8, 16, 3)) * 40).astype(np.float32)
    p = tmp_path / "x.exr"
    with OpenEXR.File({"compression": OpenEXR.ZIP_COMPRESSION, "type": OpenEXR.scanlineimage}, {"RGB": rgb}) as f:
        f.write(str(p))
    assert np.allclose(looks.read_exr(p.read_bytes()), rgb)


def _failing_tool(folder, name, message):
    path = folder / name
    path.write_text(f"#!/bin/sh\necho '{message}' >&2\nexit 100\n")
    path.chmod(path.stat().st_mode | stat.S_IEXEC)


def test_offline_first_use_says_one_line_and_falls_back(tmp_path, monkeypatch):
    """No network: apt-get and npm fail the way they do offline; one line, then procedural."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    _failing_tool(bin_dir, "apt-get", "E: Failed to fetch http://deb.debian.org/x  Temporary failure resolving 'deb.debian.org'")
    _failing_tool(bin_dir, "npm", "npm ERR! network request failed, reason: getaddrinfo EAI_AGAIN")
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    cache = tmp_path / "cache"
    lines = []
    assert ensure_defaults(cache, progress=False, say=lines.append) is False
    errors = [ln for ln in lines if "unavailable" in ln]
    assert len(errors) == 1 and "\n" not in errors[0]
    assert "Temporary failure resolving" in errors[0] and "procedural" in errors[0]
    assert missing_defaults(cache)
    lib = AssetLibrary.default(cache_dir=cache)
    assert {lib.info(i).origin for i in lib.active_ids()} == {"procedural"}


@pytest.mark.slow
def test_real_looks_build(tmp_path):
    """Fetches blender-data, sweethome3d and @pmndrs/assets (~65 MB) and converts them."""
    report = looks.build_looks(tmp_path, progress=False)
    assert report and looks.looks_complete(tmp_path)
    lib = AssetLibrary.default(cache_dir=tmp_path)
    assert "bd_forest" in lib.hdri_ids()
    h = lib.hdri("bd_forest")
    assert h.shape == (512, 1024, 3) and h.dtype == np.float32 and h.max() > 10  # HDR: a sun
    g = lib.surface("grass")
    assert g.license == "gpl-2.0-or-later" and "Sweet Home 3D" in g.attribution and "@pmndrs" in g.attribution
    assert AssetLibrary.default(cache_dir=tmp_path, licenses=["cc0", "cc-by"]).surface("grass").license == "cc0-1.0"
