"""A GL program with its uniforms resolved once, setting each value only when it changed."""

from __future__ import annotations

import moderngl

from sceneforge.engine.server.gl import shaders as S

_KEPT = (bytes, tuple, float, int)  # immutable uniform values: Program.set remembers them
_UNSET = object()


class Program:
    """A program plus its uniforms resolved once (unused uniforms are optimised out: skipped).

    A GL program keeps its uniforms' values between draws, so :meth:`set` skips a value equal to
    the one it last set (same type, immutable): a frame sets ~650 uniforms, most of them the same
    material or camera values again, and each write is a few µs of Python in moderngl. Every
    uniform of these programs is set through :meth:`set`."""

    def __init__(self, ctx: moderngl.Context, vs: str, fs: str, defines: tuple[str, ...] = ()):
        self.prog = ctx.program(vertex_shader=S.source(vs, defines), fragment_shader=S.source(fs, defines))
        self.u = {name: self.prog[name] for name in self.prog if isinstance(self.prog[name], moderngl.Uniform)}
        self._last: dict[str, object] = {}

    def set(self, name: str, value) -> None:
        u = self.u.get(name)
        if u is None:
            return
        last = self._last.get(name, _UNSET)
        if type(last) is type(value) and last == value:
            return
        if isinstance(value, bytes):
            u.write(value)
        else:
            u.value = value
        if type(value) in _KEPT:
            self._last[name] = value
        else:
            self._last.pop(name, None)
