"""AssetLibrary: the procedural pack, normalisation of real mesh files, caching, licenses."""

from __future__ import annotations

import textwrap

import numpy as np
import pytest
import trimesh
from PIL import Image

from asset_plausible import PLAUSIBLE, VEHICLES, measure
from sceneforge.assets_manifest import AssetLibrary
from sceneforge.assets_manifest.library import PROCEDURAL_PACK, built_path
from sceneforge.assets_manifest.licenses import family_matches, is_share_alike
from sceneforge.assets_manifest.normalize import axes_matrix, to_npz
from sceneforge.assets_manifest.schema import SPARRTA_CLASSES, load_manifest
from sceneforge.core.errors import AssetError


@pytest.fixture(scope="module")
def proc():
    return AssetLibrary.procedural()


def test_procedural_pack_covers_every_sparrta_class(proc):
    assert set(SPARRTA_CLASSES) <= set(proc.classes())
    assert {"building", "bridge", "bench", "lamp_post", "bush"} <= set(proc.classes())
    assert len(proc.by_class("human")) >= 3
    tags = {t for i in proc.by_class("tree") for t in i.tags}
    assert {"conifer", "broadleaf"} <= tags


@pytest.mark.parametrize("asset_id", AssetLibrary.procedural().ids())
def test_procedural_asset_grounded_centred_plausible(proc, asset_id):
    info, mesh = proc.info(asset_id), proc.mesh(asset_id)
    assert info.cls in PLAUSIBLE, f"no plausible size for class {info.cls}"
    lo, hi = mesh.bounds()
    assert lo[2] == pytest.approx(0.0, abs=1e-3)  # sits on the ground
    assert np.allclose((lo[:2] + hi[:2]) / 2, 0.0, atol=1e-2)  # centred in XY
    kind, low, high = PLAUSIBLE[info.cls]
    assert low <= measure(proc.size_cm(asset_id), kind) <= high, (asset_id, proc.size_cm(asset_id))
    assert 8 <= mesh.n_triangles <= 5000
    if info.cls in VEHICLES:
        L, W, _ = proc.size_cm(asset_id)
        assert L > W, "vehicles point along +X (forward)"


def test_humans_are_distinct(proc):
    humans = proc.by_class("human")
    heights = {round(proc.size_cm(h.id)[2]) for h in humans}
    colours = {tuple(np.median(proc.mesh(h.id).colors, axis=0)) for h in humans}
    assert len(heights) >= 3 and len(colours) >= 3


def test_procedural_is_deterministic():
    a, b = AssetLibrary.procedural(), AssetLibrary.procedural()
    for i in ("proc_rock_a", "proc_tree_broadleaf", "proc_human_walker"):
        assert a.mesh(i).vertices.tobytes() == b.mesh(i).vertices.tobytes()
        assert a.mesh(i).colors.tobytes() == b.mesh(i).colors.tobytes()


def yellow_area_fraction(mesh) -> float:
    tri = mesh.vertices[mesh.faces].astype(float)
    area = np.linalg.norm(np.cross(tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0]), axis=1)
    c = mesh.colors[mesh.faces[:, 0]].astype(int)
    yellow = (c[:, 0] > 180) & (c[:, 1] > 140) & (c[:, 2] < 80)
    return float(area[yellow].sum() / area.sum())


def test_taxi_is_yellow(proc):
    assert yellow_area_fraction(proc.mesh("proc_taxi")) > 0.3
    assert yellow_area_fraction(proc.mesh("proc_car_blue")) == 0.0


def test_footprint_is_hull_of_xy(proc):
    fp = proc.footprint("proc_truck")
    L, W, _ = proc.size_cm("proc_truck")
    assert fp.shape[1] == 2 and len(fp) >= 4
    assert fp[:, 0].max() - fp[:, 0].min() == pytest.approx(L, rel=1e-3)
    assert fp[:, 1].max() - fp[:, 1].min() == pytest.approx(W, rel=1e-3)


def test_axes_matrix_maps_source_frame_to_ue():
    # glTF/SH3D style: Y up, front towards +Z. Right = forward x up = +Z x +Y = -X.
    r = axes_matrix("+y", "+z")
    assert np.allclose(r @ [0, 0, 1], [1, 0, 0])  # forward -> +X
    assert np.allclose(r @ [0, 1, 0], [0, 0, 1])  # up -> +Z
    assert np.allclose(r @ [-1, 0, 0], [0, 1, 0])  # right -> +Y
    assert np.isclose(np.linalg.det(r), -1.0)  # handedness flip (UE is left-handed)


def _pack(tmp_path, mesh_name: str, extra: str = "") -> str:
    p = tmp_path / "pack.yaml"
    p.write_text(
        textwrap.dedent(f"""\
        pack: user
        assets:
          - id: thing
            class: truck
            mesh: {mesh_name}
            license: cc-by-4.0
            units: m
            up: "+y"
            forward: "+z"
        {extra}""")
    )
    return p


def test_mesh_file_normalised_to_ue_cm(tmp_path):
    # A box 2 m wide (X), 3 m tall (Y up), 7 m long (Z forward), floating 5 m up and off-centre.
    box = trimesh.creation.box(extents=(2.0, 3.0, 7.0))
    box.apply_translation((4.0, 5.0, -1.0))
    box.export(tmp_path / "box.glb")
    lib = AssetLibrary.from_manifests([_pack(tmp_path, "box.glb")], cache_dir=tmp_path / "cache")
    assert lib.size_cm("thing") == pytest.approx((700.0, 200.0, 300.0), rel=1e-4)
    lo, hi = lib.mesh("thing").bounds()
    assert lo[2] == pytest.approx(0.0, abs=1e-3) and np.allclose((lo[:2] + hi[:2]) / 2, 0, atol=1e-3)
    assert list((tmp_path / "cache" / "meshes").glob("*.npz")), "on-disk cache written"


def test_size_target_and_disk_cache_reuse(tmp_path):
    trimesh.creation.box(extents=(2.0, 3.0, 7.0)).export(tmp_path / "box.obj")
    pack = _pack(tmp_path, "box.obj")
    pack.write_text(pack.read_text().replace("    forward", "    size: {height_cm: 150}\n    forward"))
    lib = AssetLibrary.from_manifests([pack], cache_dir=tmp_path / "cache")
    assert lib.size_cm("thing") == pytest.approx((350.0, 100.0, 150.0), rel=1e-4)
    (cached,) = (tmp_path / "cache" / "meshes").glob("*.npz")
    to_npz(AssetLibrary.procedural().mesh("proc_cone"), cached)  # tamper: a fresh library must read the cache
    lib2 = AssetLibrary.from_manifests([pack], cache_dir=tmp_path / "cache")
    assert lib2.size_cm("thing")[2] == pytest.approx(70.0, rel=1e-3)


def test_texture_baked_per_face(tmp_path):
    # A quad whose left half of the texture is red and right half blue.
    img = np.zeros((8, 8, 3), np.uint8)
    img[:, :4] = (255, 0, 0)
    img[:, 4:] = (0, 0, 255)
    v = np.array([[0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0], [2, 0, 0], [2, 1, 0]], float)
    f = np.array([[0, 1, 2], [0, 2, 3], [1, 4, 5], [1, 5, 2]])
    uv = np.array([[0, 0], [0.5, 0], [0.5, 1], [0, 1], [1, 0], [1, 1]], float)
    m = trimesh.Trimesh(v, f, process=False)
    mat = trimesh.visual.material.PBRMaterial(baseColorTexture=Image.fromarray(img), baseColorFactor=[255, 255, 255, 255])
    m.visual = trimesh.visual.TextureVisuals(uv=uv, material=mat)
    m.export(tmp_path / "quad.glb")
    lib = AssetLibrary.from_manifests([_pack(tmp_path, "quad.glb")], cache_dir=tmp_path / "c")
    colors = {tuple(c) for c in lib.mesh("thing").colors}
    assert (255, 0, 0) in colors and (0, 0, 255) in colors


def test_decimation_respects_budget(tmp_path):
    trimesh.creation.icosphere(subdivisions=5, radius=1.0).export(tmp_path / "ball.ply")
    lib = AssetLibrary.from_manifests([_pack(tmp_path, "ball.ply", "    triangle_budget: 500\n")], cache_dir=tmp_path / "c")
    assert 100 < lib.mesh("thing").n_triangles <= 500


def test_license_families():
    assert family_matches("cc-by-3.0", "cc-by") and family_matches("cc-by-3.0-us", "cc-by")
    assert not family_matches("cc-by-sa-3.0", "cc-by") and family_matches("cc0-1.0", "cc0")
    assert is_share_alike("cc-by-sa-3.0") and not is_share_alike("cc-by-3.0")
    only_by = AssetLibrary.from_manifests([PROCEDURAL_PACK], licenses=["cc-by"])
    assert only_by.ids() == []


def test_default_prefers_built_per_class_and_credits(tmp_path, proc):
    # Pretend the build produced the truck: any valid mesh file at the built path.
    to_npz(proc.mesh("proc_truck_blue"), built_path(tmp_path, "sh3d_truck"))
    lib = AssetLibrary.default(cache_dir=tmp_path)
    assert [i.id for i in lib.by_class("truck")] == ["sh3d_truck"]
    assert lib.info("sh3d_truck").license == "cc-by-3.0" and lib.info("sh3d_truck").origin == "built"
    assert "proc_truck" not in lib.active_ids() and "proc_truck" in lib.ids()  # shadowed, still resolvable
    assert lib.mesh("proc_truck").n_triangles > 0
    assert lib.by_class("cone")[0].origin == "procedural"
    assert lib.resolve("truck") == "sh3d_truck" and lib.resolve("proc_cone") == "proc_cone"
    assert any("cc-by-3.0" in a for a in lib.attributions(["sh3d_truck", "proc_cone"]))
    assert lib.fingerprint() != AssetLibrary.default(cache_dir=tmp_path / "empty").fingerprint()
    assert [i.id for i in AssetLibrary.default(cache_dir=tmp_path, licenses=["cc0"]).by_class("truck")][0] == "proc_truck"
    assert not lib.has_share_alike(lib.ids())


def test_licenses_are_explicit_never_from_the_environment(tmp_path, proc, monkeypatch):
    to_npz(proc.mesh("proc_bear"), built_path(tmp_path, "0ad_bear_brown"))
    assert AssetLibrary.default(cache_dir=tmp_path).has_share_alike(["0ad_bear_brown"])
    lib = AssetLibrary.default(cache_dir=tmp_path, licenses=["cc0", "cc-by"])
    assert "0ad_bear_brown" not in lib.ids() and lib.by_class("bear")[0].id == "proc_bear"
    monkeypatch.setenv("SCENEFORGE_LICENSES", "cc0,cc-by")  # the old variable has no effect any more
    assert "0ad_bear_brown" in AssetLibrary.default(cache_dir=tmp_path).ids()


def test_unknown_ids_and_classes(proc):
    with pytest.raises(AssetError, match="unknown asset id"):
        proc.info("nope")
    with pytest.raises(AssetError, match="neither an asset id nor a class"):
        proc.resolve("spaceship")


def test_shipped_manifests_validate():
    from sceneforge.assets_manifest.library import BUILT_PACKS

    for p in (PROCEDURAL_PACK, *BUILT_PACKS.values()):
        assert load_manifest(p).assets
