"""The id and pixel-count passes of :class:`engine.server.gl.passes.Passes` (a mixin).

``id_pass`` draws instance ids and depth only (masks, depth, the visibility rule's counts), and
with ``named`` also records those actors' coverage (image atomics, shaders.IDS_COVER_FS);
``coverage`` is the separate pass used where those cannot compile.
They use the ``Passes`` members ``ctx``, ``program``, ``target``, ``draw_mesh`` and
``_draw_ground``.
"""

from __future__ import annotations

import logging

import moderngl
import numpy as np

from sceneforge.engine.server.gl import frame as F
from sceneforge.engine.server.gl.frame import Draw, Frame
from sceneforge.engine.world import Ground

log = logging.getLogger(__name__)


def masked_counts(words: bytes, masks) -> list[int]:
    """For each mask, how many little-endian 32-bit words of ``words`` have a bit of it set: one
    vectorised AND and a contiguous ``count_nonzero`` per mask."""
    pixels = np.frombuffer(words, dtype="<u4")
    return [int(np.count_nonzero(pixels & np.uint32(m))) for m in masks]


def channel_counts(rgba: bytes, n: int) -> list[int]:
    """Non-zero pixels of each of the first ``n`` channels of RGBA8 pixels (:func:`masked_counts`
    with one byte mask per channel): numpy's ``count_nonzero(axis=0)`` on the (N, 4) bytes goes
    through a generic casting reduction, ~18x slower (0.7 ms per coverage chunk of a 224² view,
    a fifth of a visibility call)."""
    return masked_counts(rgba, [0xFF << (8 * k) for k in range(n)])


class CountPasses:
    """Id-only and coverage passes (see the module docstring)."""

    _one_pass: bool | None = None  # counts_in_one_pass, once known (per context: per Passes)

    def id_pass(
        self, frame: "Frame", draws, visible, ground: Ground | None, rect=None, named: "list[Draw] | None" = None
    ) -> None:
        """Instance ids + depth only: the cheapest pass (no shading, no shadow lookups).
        ``rect`` (x, y, w, h; GL rows, bottom-up): draw and clear only those pixels (a scissor;
        the rest of the buffers keep stale values: read only the rect).

        ``named`` (at most 32 draws; needs ``rect`` and :meth:`counts_in_one_pass`): also record
        their coverage. Each sets its bit (1 << position in ``named``) in ``Targets.cover_bits``
        on every pixel its fragments reach, before the depth test (shaders.IDS_COVER_FS): read
        with :meth:`read_coverage`, the same counts as :meth:`coverage` without drawing the named
        actors a second time."""
        t = self.target(frame.camera)
        bits = {}
        if named:
            t.cover_bits.write(bytes(4 * rect[2] * rect[3]), viewport=rect)
            t.cover_bits.bind_to_image(0, read=True, write=True)
            bits = {d.index: 1 << k for k, d in enumerate(named)}
        t.id_only.scissor = rect
        t.id_only.use()
        t.id_only.clear(0.0, 0.0, 0.0, 0.0, depth=1.0)
        try:
            self._draw_ids(frame, draws, visible, ground, bits)
        finally:
            t.id_only.scissor = None
        if named:
            self.ctx.memory_barrier()

    def _draw_ids(self, frame: "Frame", draws, visible, ground: Ground | None, bits: dict) -> None:
        """Ids of the visible ``draws`` (and the ground); a draw with a bit in ``bits`` (draw index
        -> bit) is drawn with the coverage-recording program."""
        vp = F.gl_bytes(frame.view_proj)
        prog = self.program("ids")
        prog.set("u_view_proj", vp)
        cprog = self.program("idcov") if bits else None
        if cprog is not None:
            cprog.set("u_view_proj", vp)
        self.ctx.enable(moderngl.DEPTH_TEST)
        if ground is not None:
            self._draw_ground(prog, ground, "ids", False, frame.ground)
        for d, vis in zip(draws, visible):
            if not vis:
                continue
            b = bits.get(d.index)
            p, key, akey = (prog, "ids", "aids") if b is None else (cprog, "idcov", "aidcov")
            p.set("u_model", d.placed.model_bytes)
            p.set("u_id", d.index + 1)
            if b is not None:
                p.set("u_bit", b)
            self.draw_mesh(
                d.mesh,
                p,
                key,
                False,
                akey,
                alpha_setup=lambda ap, d=d, b=b: (
                    ap.set("u_view_proj", vp),
                    ap.set("u_model", d.placed.model_bytes),
                    ap.set("u_id", d.index + 1),
                    ap.set("u_bit", b) if b is not None else None,
                ),
            )

    def counts_in_one_pass(self) -> bool:
        """Can this context record coverage in the id pass (GLSL 4.50 image atomics: Mesa's
        llvmpipe can)? Asked once; without it pixel counts draw the named actors twice."""
        if self._one_pass is None:
            try:
                self.program("idcov")
                self.program("aidcov_a")
                self._one_pass = True
            except moderngl.Error as e:
                log.info("pixel counts in two passes (no image atomics here: %s)", str(e).splitlines()[0][:120])
                self._one_pass = False
        return self._one_pass

    def read_coverage(self, frame: "Frame", rect, n: int) -> list[int]:
        """Pixels of ``rect`` with each of the first ``n`` bits set by ``id_pass(named=...)``."""
        raw = self.target(frame.camera).cover_bits_fbo.read(viewport=rect, components=1, dtype="u4")
        return masked_counts(raw, [1 << k for k in range(n)])

    def coverage(self, frame: "Frame", draws: list["Draw"], rect=None) -> list[int]:
        """Pixels each actor covers with nothing else drawn (no other actor, no ground).

        Four actors per pass: each writes a one-hot colour, MAX blending ORs them per channel
        and the depth test is off, so a channel counts exactly the actor's own silhouette.
        ``rect`` (x, y, w, h; bottom-up): only those pixels are drawn and counted (it must hold
        every pixel of the actors).
        """
        t = self.target(frame.camera)
        prog = self.program("cover")
        prog.set("u_view_proj", F.gl_bytes(frame.view_proj))
        counts: list[int] = []
        t.cover.scissor = rect
        try:
            for start in range(0, len(draws), 4):
                counts += self._cover_chunk(t, prog, frame, draws[start : start + 4], rect)
        finally:
            t.cover.scissor = None
        return counts

    def _cover_chunk(self, t, prog, frame: "Frame", chunk: list["Draw"], rect) -> list[int]:
        """Up to four actors' own pixel counts, one colour channel each (see :meth:`coverage`)."""
        t.cover.use()
        t.cover.clear(0.0, 0.0, 0.0, 0.0)
        self.ctx.disable(moderngl.DEPTH_TEST)
        self.ctx.enable(moderngl.BLEND)
        self.ctx.blend_equation = moderngl.MAX
        for k, d in enumerate(chunk):
            channel = tuple(1.0 if j == k else 0.0 for j in range(4))
            prog.set("u_model", d.placed.model_bytes)
            prog.set("u_channel", channel)
            self.draw_mesh(
                d.mesh,
                prog,
                "cover",
                False,
                "acover",
                alpha_setup=lambda ap, d=d, c=channel: (
                    ap.set("u_view_proj", F.gl_bytes(frame.view_proj)),
                    ap.set("u_model", d.placed.model_bytes),
                    ap.set("u_channel", c),
                ),
            )
        self.ctx.blend_equation = moderngl.FUNC_ADD
        self.ctx.disable(moderngl.BLEND)
        raw = t.cover.read(viewport=rect, components=4) if rect is not None else t.color.read()
        return channel_counts(raw, len(chunk))
