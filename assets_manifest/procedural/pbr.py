"""Procedural PBR materials for the procedural pack: noise albedo, roughness, facades with windows.

The procedural pack is the fallback and the test fixture; flat colours made it look like toys.
Each distinct part colour becomes a :class:`core.meshes.Material` whose albedo is a tileable
noise texture (mean = the part's colour, so the flat fallback and the material agree on average)
with a per-class roughness; UVs are box-projected in world centimetres so the grain has a real
size. Building and house walls get a facade texture (plaster/brick-like grain with a grid of
windows, one window per tile) projected at storey scale. Everything is generated (CC0),
deterministic and costs milliseconds.
"""

from __future__ import annotations

import functools

import numpy as np

from sceneforge.assets_manifest.decimate import corner_normals
from sceneforge.assets_manifest.noise import normal_from_height, tileable_noise
from sceneforge.core.meshes import Material, RenderMesh

GRAIN_CM = 120.0  # one noise tile covers this much surface
STOREY_CM = 350.0  # facade tile: one storey high
BAY_CM = 300.0  # ... and one window bay wide
# Animals: one fur tile covers this much skin (cm). The bear's is finer: at 24 cm its strands
# read as wrinkled skin and the classifier saw an elephant ("tusker").
FUR_CM = {"bear": 12.0, "fox": 16.0, "husky": 16.0, "deer": 24.0, "camel": 24.0}
FUR_CLASSES = set(FUR_CM)
ROUGHNESS = {
    "truck": 0.45,
    "taxi": 0.35,
    "car": 0.35,
    "bike": 0.5,
    "vespa": 0.4,
    "fire_hydrant": 0.5,
    "cone": 0.6,
    "trash_bin": 0.6,
    "barrel": 0.55,
    "lamp_post": 0.5,
    "sign": 0.5,
}


def _srgb_to_linear(c):
    c = np.asarray(c, float)
    return np.where(c <= 0.04045, c / 12.92, ((c + 0.055) / 1.055) ** 2.4)


@functools.lru_cache(maxsize=4)
def grain(size: int = 64, seed: int = 7) -> np.ndarray:
    """Tileable grey grain (sRGB uint8, mean ≈ 235) to modulate a part's colour."""
    n = 0.6 * tileable_noise(size, 3.0, seed) + 0.4 * tileable_noise(size, 16.0, seed + 1, beta=1.0)
    g = (205 + 50 * n).clip(0, 255).astype(np.uint8)
    img = np.repeat(g[..., None], 3, axis=2)
    img.setflags(write=False)
    return img


@functools.lru_cache(maxsize=2)
def fur(size: int = 128, seed: int = 23) -> tuple[np.ndarray, np.ndarray]:
    """Tileable fur: strands (noise stretched 8× along v, which box UVs put along height on the
    sides of a body) over a soft macro variation; (sRGB uint8 albedo, mean ≈ 215; normal map).
    Smooth, evenly coloured skin read as cloth to a classifier ("swimming trunks"); strands and
    their shading make it read as an animal's coat."""
    rng = np.random.default_rng(seed)
    fx = np.fft.fftfreq(size)[None, :]
    fy = np.fft.fftfreq(size)[:, None]
    f = np.sqrt((fx * size / 1.0) ** 2 + (fy * size / 8.0) ** 2)
    amp = 1.0 / np.maximum(f, 1.0) ** 1.1
    amp[0, 0] = 0
    n = np.real(np.fft.ifft2(amp * np.exp(2j * np.pi * rng.random((size, size)))))
    n = (n - n.min()) / max(float(np.ptp(n)), 1e-9)
    macro = tileable_noise(size, 2.0, seed + 1)
    h = 0.75 * n + 0.25 * macro
    g = (150 + 110 * h).clip(0, 255).astype(np.uint8)
    img = np.repeat(g[..., None], 3, axis=2)
    normal = normal_from_height(n, strength=1.5)
    img.setflags(write=False)
    normal.setflags(write=False)
    return img, normal


@functools.lru_cache(maxsize=16)
def facade(color: tuple, size: int = 64, seed: int = 11) -> np.ndarray:
    """One storey × one bay of wall: noisy wall colour, a recessed dark window with a light frame."""
    n = tileable_noise(size, 8.0, seed)
    wall = np.asarray(color, float)[None, None, :] * (0.85 + 0.25 * n[..., None])
    img = wall.copy()
    y0, y1, x0, x1 = int(0.25 * size), int(0.78 * size), int(0.25 * size), int(0.75 * size)
    img[y0 - 2 : y1 + 2, x0 - 2 : x1 + 2] = np.asarray((215, 212, 205), float)  # frame
    glass = np.linspace(1.0, 0.7, y1 - y0)[:, None, None] * np.asarray((70, 88, 110), float)
    img[y0:y1, x0:x1] = glass + 20 * n[y0:y1, x0:x1, None]  # sky reflection
    img[(y0 + y1) // 2, x0:x1] = (190, 188, 182)  # transom
    img[y1 + 2 : y1 + 4, x0 - 4 : x1 + 4] = np.asarray(color, float) * 0.6  # sill shadow
    out = img.clip(0, 255).astype(np.uint8)
    out.setflags(write=False)
    return out


def box_uvs(corners: np.ndarray, tile_u: float, tile_v: float) -> np.ndarray:
    """Per-corner UVs (T, 3, 2) by box projection along each face's dominant normal axis; walls
    get u = horizontal distance, v = height, so facades stand upright."""
    n = np.cross(corners[:, 1] - corners[:, 0], corners[:, 2] - corners[:, 0])
    axis = np.abs(n).argmax(axis=1)
    x, y, z = corners[..., 0], corners[..., 1], corners[..., 2]
    u = np.where((axis == 0)[:, None], y, x)
    v = np.where((axis == 2)[:, None], y, z)
    return np.stack([u / tile_u, v / tile_v], -1)


# Part colours of procedural/ground.py (and the stone bridge, the dunes) that stand for library
# surfaces (world-projected UVs).
SURFACE_COLOURS = {
    (64, 64, 68): "asphalt",
    (150, 146, 140): "paving",
    (170, 168, 162): "stone_tiles",
    (40, 70, 86): "water",
    (110, 98, 76): "dirt",
    (214, 184, 130): "sand",
}


def apply(mesh: RenderMesh, cls: str, surface=None) -> RenderMesh:
    """The mesh with unshared faces, UVs, crease normals and one material per part colour.
    ``surface(id) -> Material`` (the library's) textures the parts listed in SURFACE_COLOURS."""
    corners = mesh.vertices[mesh.faces].astype(float)
    face_rgb = mesh.colors[mesh.faces[:, 0]]
    colours, fm = np.unique(face_rgb, axis=0, return_inverse=True)
    fm = fm.reshape(-1)
    n = np.cross(corners[:, 1] - corners[:, 0], corners[:, 2] - corners[:, 0])
    area = np.linalg.norm(n, axis=1)
    vertical = np.abs(n[:, 2]) < 0.2 * np.maximum(area, 1e-9)
    wall = -1
    if cls in ("building", "house"):
        wall_area = np.bincount(fm, weights=area * vertical, minlength=len(colours))
        wall = int(wall_area.argmax())
    g = grain()
    g_mean = float(_srgb_to_linear(g[..., 0] / 255).mean())
    mats, uvs = [], np.zeros((len(corners), 3, 2))
    for k, c in enumerate(colours):
        sel = fm == k
        sid = SURFACE_COLOURS.get(tuple(int(x) for x in c)) if surface is not None else None
        if sid is not None:
            m = surface(sid)
            mats.append(m)
            uvs[sel] = box_uvs(corners[sel], m.tile_cm or 300.0, m.tile_cm or 300.0)
        elif k == wall:
            mats.append(Material(name=f"facade_{k}", albedo=facade(tuple(int(x) for x in c)), roughness=0.85, license="cc0-1.0"))
            uvs[sel] = box_uvs(corners[sel], BAY_CM, STOREY_CM)
        elif cls in FUR_CLASSES:
            coat, normal = fur()
            f_mean = float(_srgb_to_linear(coat[..., 0] / 255).mean())
            lin = _srgb_to_linear(c / 255) / f_mean
            mats.append(
                Material(
                    name=f"fur_{k}",
                    base_color=tuple(np.clip(lin, 0, 1).tolist()) + (1.0,),
                    albedo=coat,
                    normal_map=normal,
                    roughness=0.9,
                    license="cc0-1.0",
                )
            )
            uvs[sel] = box_uvs(corners[sel], FUR_CM[cls], FUR_CM[cls])
        else:
            lin = _srgb_to_linear(c / 255) / g_mean
            mats.append(
                Material(
                    name=f"part_{k}",
                    base_color=tuple(np.clip(lin, 0, 1).tolist()) + (1.0,),
                    albedo=g,
                    roughness=ROUGHNESS.get(cls, 0.75),
                    license="cc0-1.0",
                )
            )
            uvs[sel] = box_uvs(corners[sel], GRAIN_CM, GRAIN_CM)
    normals = corner_normals(corners, crease_deg=35.0).reshape(-1, 3)
    faces = np.arange(3 * len(corners), dtype=np.int32).reshape(-1, 3)
    colors = np.repeat(face_rgb, 3, axis=0)
    return RenderMesh(
        corners.reshape(-1, 3),
        faces,
        colors,
        dict(mesh.meta),
        normals=normals,
        uvs=uvs.reshape(-1, 2),
        materials=tuple(mats),
        face_materials=fm.astype(np.int32),
    )
