"""Source materials → :class:`core.meshes.Material`, and textures in and out of the mesh cache.

Import keeps what a model file carries instead of baking it to one colour per face: the albedo
texture (with its alpha channel when it cuts out leaves or fences), the normal map and the
metal/roughness map, resized to at most :data:`MAX_TEXTURE` texels a side (what a 224² frame can
show; llvmpipe pays per texel fetched, not per texel stored, but the cache and upload pay per
texel stored). Both trimesh material kinds are read: ``PBRMaterial`` (glTF/GLB) and
``SimpleMaterial`` (OBJ/MTL, DAE).
"""

from __future__ import annotations

import io
import json

import numpy as np

from sceneforge.core.meshes import Material  # noqa: F401  (re-exported for builders)

MAX_TEXTURE = 512
GREY = np.array([180, 180, 180], np.uint8)


def srgb_to_linear(c: np.ndarray) -> np.ndarray:
    c = np.asarray(c, float)
    return np.where(c <= 0.04045, c / 12.92, ((c + 0.055) / 1.055) ** 2.4)


def linear_to_srgb(c: np.ndarray) -> np.ndarray:
    c = np.clip(np.asarray(c, float), 0, 1)
    return np.where(c <= 0.0031308, c * 12.92, 1.055 * c ** (1 / 2.4) - 0.055)


def image_array(img, keep_alpha: bool = True, max_side: int = MAX_TEXTURE) -> np.ndarray | None:
    """A PIL image → uint8 (H, W, 3|4), downsized to ``max_side``; alpha kept only if it cuts."""
    if img is None:
        return None
    from PIL import Image

    has_alpha = img.mode in ("RGBA", "LA", "PA") or (img.mode == "P" and "transparency" in img.info)
    img = img.convert("RGBA" if has_alpha else "RGB")
    if max(img.size) > max_side:
        s = max_side / max(img.size)
        img = img.resize((max(1, round(img.size[0] * s)), max(1, round(img.size[1] * s))), Image.LANCZOS)
    a = np.asarray(img, np.uint8)
    if a.shape[2] == 4 and (not keep_alpha or (a[..., 3] < 128).mean() < 0.002):
        a = np.ascontiguousarray(a[..., :3])  # an opaque alpha channel only costs
    return a


def _u8(c, n: int = 4) -> np.ndarray | None:
    if c is None:
        return None
    a = np.asarray(c, float).ravel()
    if a.max(initial=0) <= 1.0 and a.dtype.kind == "f" and not np.all(a == 0):
        a = a * 255
    return a[:n]


def from_trimesh(mat, name: str = "") -> Material:
    """Convert a trimesh material (PBR or simple) into our Material, textures as uint8 arrays."""
    if mat is None:
        return Material(name=name or "default", base_color=tuple(srgb_to_linear(GREY / 255).tolist()) + (1.0,))
    kind = type(mat).__name__
    if kind == "PBRMaterial":
        albedo = image_array(getattr(mat, "baseColorTexture", None))
        f = _u8(getattr(mat, "baseColorFactor", None))
        base = tuple((f / 255).tolist()) if f is not None else (1.0, 1.0, 1.0, 1.0)
        base = base + (1.0,) * (4 - len(base))
        mode = (getattr(mat, "alphaMode", None) or "OPAQUE").upper()
        cutoff = None
        if albedo is not None and albedo.shape[2] == 4:
            cutoff = float(getattr(mat, "alphaCutoff", None) or 0.5) if mode in ("MASK", "BLEND") else None
            if cutoff is None:
                albedo = np.ascontiguousarray(albedo[..., :3])
        normal = image_array(getattr(mat, "normalTexture", None), keep_alpha=False)
        mr = image_array(getattr(mat, "metallicRoughnessTexture", None), keep_alpha=False)
        occ = image_array(getattr(mat, "occlusionTexture", None), keep_alpha=False)
        orm = None
        if mr is not None:
            orm = mr.copy()
            orm[..., 0] = 255 if occ is None or occ.shape[:2] != mr.shape[:2] else occ[..., 0]
        rough = getattr(mat, "roughnessFactor", None)
        metal = getattr(mat, "metallicFactor", None)
        return Material(
            name=name or getattr(mat, "name", None) or "pbr",
            base_color=base,
            albedo=albedo,
            normal_map=normal,
            orm_map=orm,
            roughness=float(1.0 if rough is None else rough),
            metallic=float(0.0 if metal is None else metal),
            alpha_cutoff=cutoff,
            double_sided=bool(getattr(mat, "doubleSided", False)) or cutoff is not None,
        )
    # SimpleMaterial (OBJ/MTL): map_Kd is sRGB; Kd is ignored when a texture is present (what
    # Sweet Home 3D does), else it is the sRGB diffuse colour.
    albedo = image_array(getattr(mat, "image", None))
    d = _u8(getattr(mat, "diffuse", None))
    alpha = float(d[3] / 255) if d is not None and len(d) == 4 else 1.0
    if albedo is not None:
        base = (1.0, 1.0, 1.0, alpha)
    else:
        rgb = d[:3] / 255 if d is not None else GREY / 255
        base = tuple(srgb_to_linear(rgb).tolist()) + (alpha,)
    gloss = getattr(mat, "glossiness", None)
    rough = float(np.clip(1.0 - (float(gloss) / 128.0) ** 0.5, 0.15, 1.0)) if gloss else 0.7
    cutoff = 0.5 if albedo is not None and albedo.shape[2] == 4 else None
    return Material(
        name=name or getattr(mat, "name", None) or "obj",
        base_color=base,
        albedo=albedo,
        roughness=rough,
        alpha_cutoff=cutoff,
        double_sided=cutoff is not None,
    )


def material_srgb(m: Material) -> np.ndarray:
    """The material's mean displayed colour, uint8 sRGB (the flat fallback)."""
    lin = np.asarray(m.base_color[:3], float)
    if m.albedo is not None:
        rgb = m.albedo[..., :3].reshape(-1, 3).astype(float)
        if m.albedo.shape[2] == 4:
            keep = m.albedo[..., 3].reshape(-1) >= 128
            rgb = rgb[keep] if keep.any() else rgb
        lin = lin * srgb_to_linear(rgb / 255).mean(axis=0)
    return (linear_to_srgb(lin) * 255).round().astype(np.uint8)


def sample(img: np.ndarray, uv: np.ndarray) -> np.ndarray:
    """Nearest-texel lookup (wrapping), uv in OpenGL convention: v = 1 is the image's top row."""
    h, w = img.shape[:2]
    x = np.clip((np.mod(uv[:, 0], 1.0) * w).astype(int), 0, w - 1)
    y = np.clip(((1 - np.mod(uv[:, 1], 1.0)) * h).astype(int), 0, h - 1)
    return img[y, x]


# ---- cache serialisation -------------------------------------------------------------------
_TEXTURES = ("albedo", "normal_map", "orm_map")
_SCALARS = ("name", "base_color", "roughness", "metallic", "alpha_cutoff", "double_sided", "license", "tile_cm", "attribution")


def png_bytes(a: np.ndarray) -> np.ndarray:
    from PIL import Image

    buf = io.BytesIO()
    Image.fromarray(a).save(buf, format="PNG", compress_level=6)
    return np.frombuffer(buf.getvalue(), np.uint8)


def from_png(b: np.ndarray) -> np.ndarray:
    from PIL import Image

    return np.asarray(Image.open(io.BytesIO(b.tobytes())), np.uint8)


def pack(materials) -> dict[str, np.ndarray]:
    """Materials → npz arrays: scalars as one JSON string, textures as PNG bytes."""
    out = {"materials_json": np.array(json.dumps([{k: getattr(m, k) for k in _SCALARS} for m in materials]))}
    for i, m in enumerate(materials):
        for t in _TEXTURES:
            if getattr(m, t) is not None:
                out[f"mat{i}_{t}"] = png_bytes(getattr(m, t))
    return out


def unpack(z) -> tuple[Material, ...]:
    if "materials_json" not in z:
        return ()
    out = []
    for i, d in enumerate(json.loads(str(z["materials_json"]))):
        tex = {t: from_png(z[f"mat{i}_{t}"]) for t in _TEXTURES if f"mat{i}_{t}" in z}
        d["base_color"] = tuple(d["base_color"])
        d = {k: v for k, v in d.items() if k in _SCALARS}
        out.append(Material(**d, **tex))
    return tuple(out)
