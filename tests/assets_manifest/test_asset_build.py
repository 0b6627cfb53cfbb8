"""The Debian build: catalog/copyright parsing, recolouring, resume, and (when the cache has them)
every built asset checked like the procedural ones."""

from __future__ import annotations

import json
import zipfile

import numpy as np
import pytest

from asset_plausible import PLAUSIBLE, VEHICLES, measure
from sceneforge.assets_manifest import AssetLibrary, sh3d, zeroad
from sceneforge.assets_manifest.build import build
from sceneforge.assets_manifest.library import BUILT_PACKS, built_path, cache_root
from sceneforge.assets_manifest.normalize import to_npz
from sceneforge.assets_manifest.schema import load_manifest
from sceneforge.core.errors import AssetError, ConfigError

CATALOG = """\
id=SweetHome3D#Test
license=Creative Commons Attribution 3.0 license
id#1=Test#truck
name#1=Truck
model#1=/test/truck/truck.obj
width#1=271.8
depth#1=630
height#1=340
creator#1=Scopia
id#2=Test#lamp
name#2=Lamp
model#2=/test/lamp/lamp.obj
modelRotation#2=1 0 0 0 0 1 0 -1 0
width#2=30
depth#2=30
height#2=250
creator#2=Somebody
"""


@pytest.fixture
def sh3f(tmp_path):
    p = tmp_path / "Test.sh3f"
    with zipfile.ZipFile(p, "w") as z:
        z.writestr("PluginFurnitureCatalog.properties", CATALOG)
        z.writestr("test/truck/truck.obj", "v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3\n")
        z.writestr("test/truck/truck.mtl", "newmtl a\n")
        z.writestr("test/lamp/lamp.obj", "v 0 0 0\n")
    return p


def test_read_catalog(sh3f):
    cat = sh3d.read_catalog(sh3f)
    truck = cat["test/truck/truck.obj"]
    assert (truck.width, truck.depth, truck.height) == (271.8, 630.0, 340.0)
    assert truck.creator == "Scopia" and truck.rotation is None and truck.library == "Test"
    assert truck.catalog_license.startswith("Creative Commons Attribution 3.0")
    assert np.allclose(cat["test/lamp/lamp.obj"].rotation, [[1, 0, 0], [0, 0, 1], [0, -1, 0]])


def test_extract_only_the_model_folder(sh3f, tmp_path):
    obj = sh3d.extract_model(sh3f, "test/truck/truck.obj", tmp_path / "x")
    assert obj.exists() and (obj.parent / "truck.mtl").exists()
    assert not (tmp_path / "x" / "test" / "lamp").exists()


def test_copyright_licenses(tmp_path):
    f = tmp_path / sh3d.COPYRIGHT
    f.parent.mkdir(parents=True)
    f.write_text(
        "Format: x\n\nFiles: KatorLegaz/*\nCopyright: 2003\nLicense: CC-BY-3.0-USA\n\n"
        "Files: BlendSwap-CC-0/*\nCopyright: 2014\nLicense: CC0\n\nFiles: Scopia/*\nLicense: CC-BY-3.0\n"
    )
    assert sh3d.copyright_licenses(tmp_path) == {"KatorLegaz": "cc-by-3.0-us", "BlendSwap-CC-0": "cc0-1.0", "Scopia": "cc-by-3.0"}


def test_recolor_repaints_body_only():
    red, glass, tyre = (204, 0, 0), (122, 122, 143), (20, 20, 20)
    colors = np.array([red] * 6 + [glass] * 2 + [tyre] * 2, np.uint8)
    out = sh3d.recolor(colors, (245, 200, 20))
    assert (out[:6] == (245, 200, 20)).all() and (out[6:] == colors[6:]).all()


def test_unsupported_source_is_a_clear_error(tmp_path):
    with pytest.raises(ConfigError, match="unsupported blender"):
        build(["blender"], cache_dir=tmp_path)


def _pmd_bytes(pos, uv, faces) -> bytes:
    """A version-4 PMD with one UV set (the layout 0 A.D. writes)."""
    import struct

    body = struct.pack("<II", len(pos), 1)
    for p, t in zip(pos, uv):
        body += struct.pack("<3f3f2f4B4f", *p, 0, 0, 1, *t, 0, 0, 0, 0, 1, 0, 0, 0)
    body += struct.pack("<I", len(faces)) + np.asarray(faces, "<u2").tobytes()
    return b"PSMD" + struct.pack("<II", 4, len(body)) + body


def test_parse_pmd_and_dds_skin(tmp_path):
    from PIL import Image

    pos = [(0, 0, 0), (1, 0, 0), (0, 2, 0), (1, 2, 0)]
    uv = [(0, 0), (1, 0), (0, 1), (1, 1)]
    data = _pmd_bytes(pos, uv, [(0, 1, 2), (1, 3, 2)])
    p, f, t = zeroad.parse_pmd(data)
    assert np.allclose(p, pos) and f.tolist() == [[0, 1, 2], [1, 3, 2]] and np.allclose(t, uv)
    with pytest.raises(AssetError, match="not a PMD"):
        zeroad.parse_pmd(b"XXXX" + data[4:])
    with pytest.raises(AssetError, match="truncated"):
        zeroad.parse_pmd(data[:40])
    # Skin: top half red, bottom half blue; PMD v runs down the image (DirectX convention).
    img = np.zeros((8, 8, 3), np.uint8)
    img[:4] = (255, 0, 0)
    img[4:] = (0, 0, 255)
    buf = tmp_path / "skin.png"
    Image.fromarray(img).save(buf)
    pub = tmp_path / "public.zip"
    with zipfile.ZipFile(pub, "w") as z:
        z.writestr("m.pmd", _pmd_bytes(pos, [(0, 0.1), (1, 0.1), (0, 0.2), (1, 0.2)], [(0, 1, 2)]))
        z.write(buf, "skin.dds")
    _, _, colors = zeroad.read_model(pub, "m.pmd", "skin.dds")
    assert colors.tolist() == [[255, 0, 0]]


def test_zeroad_copyright(tmp_path):
    f = tmp_path / zeroad.COPYRIGHT
    f.parent.mkdir(parents=True)
    f.write_text(
        "Format: x\n\nFiles: *\nCopyright: 2010 Wildfire Games\nLicense: CC-BY-SA-3.0\n\n"
        "Files: debian/*\nCopyright: 2011 Someone\nLicense: GPL-2+\n"
    )
    assert zeroad.copyright_license(tmp_path) == "cc-by-sa-3.0"
    assert zeroad.copyright_holder(tmp_path) == "Wildfire Games"


def test_build_resumes_from_cache_without_fetching(tmp_path):
    """Everything already built → no apt-get, every asset reported as cached."""
    mesh = AssetLibrary.procedural().mesh("proc_crate")
    ids = [e.id for e in load_manifest(BUILT_PACKS["sh3d"]).assets]
    for i in ids:
        to_npz(mesh, built_path(tmp_path, i))
        built_path(tmp_path, i).with_suffix(".json").write_text(json.dumps({"id": i}))
    report = build(["sh3d"], cache_dir=tmp_path)
    assert report == [f"{i}: cached" for i in ids]
    assert not (tmp_path / "debs").exists()


def _built_ids() -> list[str]:
    cache = cache_root()
    return [e.id for p in BUILT_PACKS.values() for e in load_manifest(p).assets if built_path(cache, e.id).exists()]


@pytest.mark.skipif(not _built_ids(), reason="no built assets in the cache (run `sceneforge assets build`)")
@pytest.mark.parametrize("asset_id", _built_ids())
def test_built_asset_loads_grounded_plausible(asset_id):
    lib = AssetLibrary.default()
    info, mesh = lib.info(asset_id), lib.mesh(asset_id)
    record = json.loads(built_path(cache_root(), asset_id).with_suffix(".json").read_text())
    assert record["class"] == info.cls and record["license"] == info.license and record["creator"]
    assert record["source_file"].endswith((".obj", ".pmd")) and record["triangles"] == mesh.n_triangles
    lo, hi = mesh.bounds()
    assert lo[2] == pytest.approx(0.0, abs=1e-3) and np.allclose((lo[:2] + hi[:2]) / 2, 0, atol=1e-2)
    kind, low, high = PLAUSIBLE[info.cls]
    assert low <= measure(lib.size_cm(asset_id), kind) <= high, lib.size_cm(asset_id)
    if info.cls in VEHICLES:
        assert lib.size_cm(asset_id)[0] > lib.size_cm(asset_id)[1], "vehicles point along +X"


@pytest.mark.slow
def test_full_build_from_debian(tmp_path):
    """Downloads sweethome3d-furniture (~120 MB) with apt-get download; minutes on a slow link."""
    report = build(["sh3d"], cache_dir=tmp_path)
    assert all(": built " in line for line in report)
    assert all(": cached" in line for line in build(["sh3d"], cache_dir=tmp_path))


def test_the_first_use_cost_is_quoted_the_same_everywhere(monkeypatch, tmp_path):
    """The one line ``sceneforge demo`` prints on first use, README.md and docs/assets.md give the
    same measured download and disk sizes (they once said 190, 170 and nothing: issue 33 item 8)."""
    from pathlib import Path

    from sceneforge.assets_manifest import build as build_mod

    root = Path(__file__).resolve().parents[2]
    down, disk = f"~{build_mod.DEFAULTS_DOWNLOAD_MB} MB download", f"~{build_mod.DEFAULTS_DISK_MB} MB on disk"
    readme, docs = (root / "README.md").read_text(), (root / "docs" / "assets.md").read_text()
    assert down in readme and disk in readme
    assert f"**{down}**" in docs and f"**{disk}**" in docs
    lines = []
    monkeypatch.setattr(build_mod, "missing_defaults", lambda cache: True)
    monkeypatch.setattr(build_mod, "build", lambda *a, **k: None)  # the line, not the download
    build_mod.ensure_defaults(tmp_path, progress=False, say=lines.append)
    assert down in lines[0] and disk in lines[0], lines
