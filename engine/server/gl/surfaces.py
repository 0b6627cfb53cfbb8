"""Ground materials for the PBR look: procedural fallbacks and GPU textures for materials.

A ground ``surface`` id is looked up in the asset library (``catalog.surface(id)`` →
:class:`core.meshes.Material`); when there is none (no library, unknown id, nothing downloaded),
:func:`procedural_surface` makes one from ``Ground.texture`` and ``Ground.color``, so every
environment renders textured ground with no downloads. Procedural textures are tileable (FFT
noise), made from fixed seeds, and therefore identical in every process.
"""

from __future__ import annotations

from collections import OrderedDict
from functools import lru_cache

import moderngl
import numpy as np

from sceneforge.core.meshes import Material

SIZE = 256
TEXTURE_CACHE_BYTES = 256 * 2**20  # material textures kept on the GPU (least recently used dropped)


def _noise(size: int, seed: int, cutoff: float, aniso: tuple[float, float] = (1.0, 1.0)) -> np.ndarray:
    """Tileable band-limited noise in [0, 1] (float32); ``aniso`` stretches the spectrum."""
    rng = np.random.default_rng(seed)
    spectrum = np.fft.fft2(rng.standard_normal((size, size)))
    f = np.fft.fftfreq(size)
    fy, fx = f[:, None] * aniso[0], f[None, :] * aniso[1]
    smooth = np.real(np.fft.ifft2(spectrum * np.exp(-((fx**2 + fy**2) / cutoff**2))))
    lo, hi = smooth.min(), smooth.max()
    return ((smooth - lo) / max(hi - lo, 1e-9)).astype(np.float32)


def _height_and_tone(kind: str) -> tuple[np.ndarray, np.ndarray, float, float]:
    """(height, tone variation, roughness, normal strength) for a procedural ground kind."""
    n_fine = _noise(SIZE, 11, 0.25)
    n_mid = _noise(SIZE, 12, 0.06)
    n_low = _noise(SIZE, 13, 0.02)
    if kind == "grass":
        blades = _noise(SIZE, 14, 0.35, aniso=(0.25, 1.0))
        height = 0.6 * blades + 0.4 * n_fine
        tone = 0.55 + 0.35 * n_mid + 0.25 * blades - 0.15 * n_low
        return height, tone, 0.85, 2.0
    if kind == "sand":
        y = np.arange(SIZE)[:, None] / SIZE
        ripples = 0.5 + 0.5 * np.sin(2 * np.pi * (7 * y + 0.6 * n_mid))
        height = 0.7 * ripples + 0.3 * n_fine
        tone = 0.85 + 0.12 * n_mid + 0.06 * n_fine - 0.05 * ripples
        return height, tone, 0.9, 1.0
    if kind == "asphalt":
        speck = (n_fine > 0.62).astype(np.float32) * (n_fine - 0.62) * 3
        height = 0.5 * n_fine + 0.5 * speck
        tone = 0.85 + 0.35 * speck - 0.10 * n_mid + 0.08 * n_low
        return height, tone, 0.8, 0.4
    if kind == "snow":
        height = 0.5 * n_mid + 0.5 * n_low
        tone = 0.95 + 0.05 * n_mid
        return height, tone, 0.55, 1.2
    height = 0.6 * n_mid + 0.4 * n_fine
    return height, 0.8 + 0.2 * n_mid + 0.1 * n_fine, 0.85, 1.5


def normal_map(height: np.ndarray, strength: float) -> np.ndarray:
    """Tangent-space normal map (uint8, OpenGL +Y) from a tileable height field (wrap-around)."""
    dx = (np.roll(height, -1, axis=1) - np.roll(height, 1, axis=1)) * 0.5 * strength
    dy = (np.roll(height, 1, axis=0) - np.roll(height, -1, axis=0)) * 0.5 * strength  # row 0 = top
    n = np.stack([-dx, -dy, np.ones_like(height)], axis=-1)
    n /= np.linalg.norm(n, axis=-1, keepdims=True)
    return np.round((n * 0.5 + 0.5) * 255).astype(np.uint8)


@lru_cache(maxsize=32)
def procedural_surface(kind: str | None, color: tuple[int, int, int]) -> Material:
    """A tileable ground material of ``kind`` (grass, sand, asphalt, snow, noise; "flat" or None
    and unknown names = plain colour with a faint noise) tinted by ``color`` (sRGB)."""
    kind = (kind or "noise").lower()
    if kind in ("flat", "none"):
        albedo = np.broadcast_to(np.asarray(color, np.uint8), (4, 4, 3)).copy()
        return Material(name="flat", albedo=albedo, roughness=0.85)
    height, tone, rough, strength = _height_and_tone(kind)
    lin = (np.asarray(color, np.float32) / 255.0) ** 2.2
    rgb = lin[None, None, :] * tone[..., None]
    albedo = np.round(np.clip(rgb, 0, 1) ** (1 / 2.2) * 255).astype(np.uint8)
    return Material(name=f"procedural_{kind}", albedo=albedo, normal_map=normal_map(height, strength * 4.0), roughness=rough)


class TextureCache:
    """GPU textures of materials, keyed by the material object (kept alive here, so its id()
    cannot be reused) and the map name; mipmapped, repeating, trilinear (no anisotropy: ruinous
    on llvmpipe).

    Bounded (issue 39 item 6): every distinct ground colour is a new procedural material, so a
    client changing ``world.ground.color`` uploaded a new texture set each time and kept it
    forever. :meth:`trim` (called between frames, never during one: a texture handed out for
    the frame in progress is never released under it) drops the least recently used textures
    beyond ``max_bytes``."""

    def __init__(self, ctx: moderngl.Context, max_bytes: int = TEXTURE_CACHE_BYTES):
        self.ctx = ctx
        self.max_bytes = int(max_bytes)
        self._tex: OrderedDict[tuple[int, str], tuple[Material, moderngl.Texture, int]] = OrderedDict()
        self._bytes = 0
        self._white: moderngl.Texture | None = None

    def get(self, material: Material, which: str) -> moderngl.Texture | None:
        img = getattr(material, which)
        if img is None:
            return None
        key = (id(material), which)
        if key in self._tex:
            self._tex.move_to_end(key)
        else:
            img = np.asarray(img)
            size = img.size * (3 if img.ndim == 2 else 1) * 4 // 3  # uploaded as RGB(A) + mipmaps
            self._tex[key] = (material, self._upload(img, srgb=(which == "albedo")), size)
            self._bytes += size
        return self._tex[key][1]

    def trim(self) -> None:
        """Release the least recently used textures while the cache holds more than ``max_bytes``."""
        while self._bytes > self.max_bytes and len(self._tex) > 1:
            _, (_, tex, size) = self._tex.popitem(last=False)
            tex.release()
            self._bytes -= size

    @property
    def nbytes(self) -> int:
        """Texture bytes held (estimated: the uploaded images plus a third for mipmaps)."""
        return self._bytes

    def __len__(self) -> int:
        return len(self._tex)

    def _upload(self, img: np.ndarray, srgb: bool) -> moderngl.Texture:
        img = np.ascontiguousarray(img.astype(np.uint8))
        if img.ndim == 2:
            img = np.repeat(img[..., None], 3, axis=-1)
        h, w, c = img.shape
        # Rows are top-first and RenderMesh uvs are OpenGL's (v = 1 is row 0): GL's first row is
        # t = 0, so upload bottom row first.
        img = np.ascontiguousarray(img[::-1])
        tex = self.ctx.texture(
            (w, h), c, img.tobytes(), internal_format=({3: 0x8C41, 4: 0x8C43}[c] if srgb else None)
        )  # GL_SRGB8 / GL_SRGB8_ALPHA8
        tex.build_mipmaps()
        tex.filter = (moderngl.LINEAR_MIPMAP_LINEAR, moderngl.LINEAR)
        tex.repeat_x = tex.repeat_y = True
        return tex

    def release(self) -> None:
        for _, tex, _ in self._tex.values():
            tex.release()
        self._tex = OrderedDict()
        self._bytes = 0
