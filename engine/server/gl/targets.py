"""Render targets of the GL backend: the textures and framebuffers of one resolution, and
reading them back as numpy arrays (GL rows are bottom-up: row 0 of every array is the top)."""

from __future__ import annotations

import moderngl
import numpy as np


class Targets:
    """Textures and framebuffers for one resolution; the depth buffer is shared by all FBOs."""

    def __init__(self, ctx: moderngl.Context, width: int, height: int):
        size = (width, height)
        self.ctx, self.size = ctx, size
        self.color = ctx.texture(size, 4)
        self.ids = ctx.texture(size, 1, dtype="i4")
        self.depth = ctx.depth_texture(size)
        self.lit = ctx.framebuffer([self.color, self.ids], self.depth)
        self.id_only = ctx.framebuffer([self.ids], self.depth)
        self.cover = ctx.framebuffer([self.color])
        self._normal = None
        self._lit_normal = None
        self._post = None
        self._post_fbo = None
        self._cover_bits = None
        self._cover_bits_fbo = None
        self.post_valid = False  # True when the last lit frame's colour is in ``post`` (FXAA)

    @property
    def cover_bits(self) -> moderngl.Texture:
        """r32ui image: the named actors' coverage bits of a counting id pass (passes.py)."""
        if self._cover_bits is None:
            self._cover_bits = self.ctx.texture(self.size, 1, dtype="u4")
            self._cover_bits_fbo = self.ctx.framebuffer([self._cover_bits])
        return self._cover_bits

    @property
    def cover_bits_fbo(self) -> moderngl.Framebuffer:
        """Reads :attr:`cover_bits` back (a block of it)."""
        self.cover_bits  # noqa: B018 - allocates both
        return self._cover_bits_fbo

    @property
    def post_fbo(self) -> moderngl.Framebuffer:
        """Second colour texture for the FXAA output (allocated on first use)."""
        if self._post_fbo is None:
            self._post = self.ctx.texture(self.size, 4)
            self._post_fbo = self.ctx.framebuffer([self._post])
        return self._post_fbo

    @property
    def lit_normal(self) -> moderngl.Framebuffer:
        """Colour + ids + float normals (only allocated when normals are asked for)."""
        if self._lit_normal is None:
            self._normal = self.ctx.texture(self.size, 4, dtype="f4")
            self._lit_normal = self.ctx.framebuffer([self.color, self.ids, self._normal], self.depth)
        return self._lit_normal

    # --- read-back (GL rows are bottom-up: flip so row 0 is the top) -------------------------
    def read_color(self) -> np.ndarray:
        w, h = self.size
        if self.post_valid:  # FXAA output (PBR look): the colour attachment itself is untouched
            raw = self.post_fbo.read(components=3)
        else:
            raw = self.lit.read(components=3, attachment=0)  # the driver drops alpha: 2x faster
        return np.frombuffer(raw, np.uint8).reshape(h, w, 3)[::-1].copy()

    def read_ids(self, rect=None) -> np.ndarray:
        """Instance ids, row 0 at the top; ``rect`` (x, y, w, h; bottom-up): only that block
        (its rows flipped the same way)."""
        if rect is not None:
            ids = np.frombuffer(self.id_only.read(viewport=rect, components=1, dtype="i4"), np.int32)
            return np.ascontiguousarray(ids.reshape(rect[3], rect[2])[::-1])
        w, h = self.size
        return np.ascontiguousarray(np.frombuffer(self.ids.read(), np.int32).reshape(h, w)[::-1])

    def read_depth(self) -> np.ndarray:
        w, h = self.size
        return np.ascontiguousarray(np.frombuffer(self.depth.read(), np.float32).reshape(h, w)[::-1])

    def read_normal(self) -> np.ndarray:
        w, h = self.size
        n = np.frombuffer(self._normal.read(), np.float32).reshape(h, w, 4)
        return np.ascontiguousarray(n[::-1, :, :3])

    def release(self) -> None:
        for obj in (
            self.lit,
            self.id_only,
            self.cover,
            self._lit_normal,
            self._post_fbo,
            self._cover_bits_fbo,
            self.color,
            self.ids,
            self.depth,
            self._normal,
            self._post,
            self._cover_bits,
        ):
            if obj is not None:
                obj.release()
