"""Textures, UVs, normals and alpha cut-outs survive import, decimation and the mesh cache."""

from __future__ import annotations

import numpy as np
import pytest
import trimesh
from PIL import Image

from sceneforge.assets_manifest import AssetLibrary, normalize
from sceneforge.assets_manifest.materials import sample

TEX = 64


def _gradient_texture() -> np.ndarray:
    """u → red, v → green, so a texel's colour says where on the texture it is."""
    u = np.linspace(0, 255, TEX)
    img = np.zeros((TEX, TEX, 3), np.uint8)
    img[..., 0] = u[None, :]
    img[..., 1] = u[::-1, None]  # row 0 = top = v 1 → green 255
    img[..., 2] = 40
    return img


def _uv_sphere(n_lat: int, n_lon: int):
    """A UV sphere (radius 1 m) with a seam at longitude 0 (duplicated vertices), u = lon, v = lat."""
    lat = np.linspace(0, np.pi, n_lat + 1)
    lon = np.linspace(0, 2 * np.pi, n_lon + 1)
    la, lo = np.meshgrid(lat, lon, indexing="ij")
    v = np.stack([np.sin(la) * np.cos(lo), np.cos(la), np.sin(la) * np.sin(lo)], -1).reshape(-1, 3)
    uv = np.stack([lo / (2 * np.pi), 1 - la / np.pi], -1).reshape(-1, 2)
    idx = np.arange((n_lat + 1) * (n_lon + 1)).reshape(n_lat + 1, n_lon + 1)
    a, b, c, d = idx[:-1, :-1], idx[:-1, 1:], idx[1:, :-1], idx[1:, 1:]
    f = np.concatenate([np.stack([a, c, b], -1).reshape(-1, 3), np.stack([b, c, d], -1).reshape(-1, 3)])
    return v, f, uv


def _write_glb(path, v, f, uv, img):
    mat = trimesh.visual.material.PBRMaterial(baseColorTexture=Image.fromarray(img), baseColorFactor=[255, 255, 255, 255])
    tm = trimesh.Trimesh(v, f, visual=trimesh.visual.TextureVisuals(uv=uv, material=mat), process=False)
    path.write_bytes(tm.export(file_type="glb"))


def _manifest(tmp_path, budget):
    (tmp_path / "pack.yaml").write_text(
        "pack: user\nassets:\n"
        f"  - {{id: ball, class: rock, mesh: ball.glb, units: m, up: '+y', forward: '+z', license: cc0-1.0,"
        f" triangle_budget: {budget}}}\n"
    )
    return tmp_path / "pack.yaml"


@pytest.mark.parametrize("budget", [100000, 800])
def test_user_glb_keeps_texture_uvs_and_normals(tmp_path, budget):
    img = _gradient_texture()
    v, f, uv = _uv_sphere(40, 80)  # 6,400 triangles
    _write_glb(tmp_path / "ball.glb", v, f, uv, img)
    lib = AssetLibrary.from_manifests([_manifest(tmp_path, budget)], cache_dir=tmp_path / "cache")
    mesh = lib.mesh("ball")
    assert mesh.textured and mesh.normals is not None
    assert mesh.n_triangles <= max(budget * 1.1, 10) and (budget > 6400 or mesh.n_triangles < 6400)
    albedo = mesh.materials[0].albedo
    assert albedo.shape[:2] == (TEX, TEX)
    assert np.abs(albedo.reshape(-1, 3).mean(0) - img.reshape(-1, 3).mean(0)).max() < 2  # texture mean kept
    # every face's UV centroid must still point at the texel of its 3D position: lon → u, lat → v
    centre = (mesh.bounds()[0] + mesh.bounds()[1]) / 2
    cen = mesh.vertices[mesh.faces].mean(axis=1) - centre
    cen = cen / np.linalg.norm(cen, axis=1, keepdims=True)
    # UE frame: source +z forward → +X, source +y up → +Z, right = forward × up → +Y = -source x
    sx, sy, sz = -cen[:, 1], cen[:, 2], cen[:, 0]
    lon = np.mod(np.arctan2(sz, sx), 2 * np.pi) / (2 * np.pi)
    lat = 1 - np.arccos(np.clip(sy, -1, 1)) / np.pi
    got = sample(albedo, mesh.uvs[mesh.faces].mean(axis=1)).astype(float)
    want = sample(img, np.stack([lon, lat], 1)).astype(float)
    err = np.abs(got - want)[:, :2]
    away = (np.minimum(lon, 1 - lon) > 0.05) & (np.abs(lat - 0.5) < 0.4)  # off the seam and poles
    assert np.median(err[away]) < 8 and np.mean(err[away] < 24) > 0.95
    # normals: smooth (sphere) → nearly radial
    nrm = mesh.normals
    r = mesh.vertices - centre
    r /= np.linalg.norm(r, axis=1, keepdims=True)
    assert np.median(np.abs((nrm * r).sum(1))) > 0.97
    # a second library reads the .npz cache and gets the same texture and uvs
    again = AssetLibrary.from_manifests([_manifest(tmp_path, budget)], cache_dir=tmp_path / "cache").mesh("ball")
    assert np.array_equal(again.uvs, mesh.uvs) and np.array_equal(again.materials[0].albedo, albedo)


def test_alpha_cards_are_thinned_not_collapsed():
    """Leaf cards (alpha-cut) keep their quads whole when a budget forces fewer triangles."""
    from sceneforge.core.meshes import Material

    rng = np.random.default_rng(0)
    n = 2000
    c = rng.normal(size=(n, 3)) * 100
    quad = np.array([[-10, 0, -10], [10, 0, -10], [10, 0, 10], [-10, 0, 10]], float)
    v = (c[:, None, :] + quad[None]).reshape(-1, 3)
    base = np.arange(n)[:, None] * 4
    f = np.concatenate([base + [0, 1, 2], base + [0, 2, 3]])
    uv = np.tile(np.array([[0, 0], [1, 0], [1, 1], [0, 1]], float), (n, 1))
    leaf = np.zeros((8, 8, 4), np.uint8)
    leaf[..., 1], leaf[2:6, 2:6, 3] = 160, 255
    raw = normalize.RawMesh(
        v, f, np.zeros((len(f), 3), np.uint8), uv, [Material(albedo=leaf, alpha_cutoff=0.5)], np.zeros(len(f), np.int32)
    )
    mesh = normalize.normalise_raw(raw, up="+z", forward="+x", units_cm=1.0, budget=1000)
    assert 700 < mesh.n_triangles <= 1300  # about the budget, whole quads only
    assert mesh.n_triangles % 2 == 0 and mesh.materials[0].alpha_cutoff == 0.5
    tri = mesh.vertices[mesh.faces]
    area = np.linalg.norm(np.cross(tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0]), axis=1).sum() / 2
    assert 0.6 < area / (n * 400.0) < 1.6  # kept cards grow: the canopy keeps its coverage
    # every kept card is still a flat square with UVs spanning the whole leaf texture
    assert np.allclose(np.sort(np.unique(mesh.uvs, axis=0), axis=0).min(0), [0, 0])
