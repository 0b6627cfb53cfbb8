"""The previous pose of every GPU-skinned character's visible surface, for optical flow (issue 49).

Optical flow (engine/server/optical_flow.py) carries each pixel's surface point back to where it
was at the camera's previous request. For a character whose pose changed, the point moved by its
own skinning: :meth:`SkinFlow.draw` draws the character's current posed buffer (gl/skinning.py)
with, as a second vertex stream, the same vertices skinned with the previous pose's palette, and
writes per pixel the interpolated previous-pose position in the actor's frame (float32 RGBA:
xyz, w = 1 where a character was drawn). Each vertex is moved by its own skinning and a point
inside a triangle by the same barycentric blend of its corners: the rasteriser's perspective-
correct interpolation. The same triangles with the same positions and matrices as the id pass,
so the pixels are those of the character's instance id (cut-out parts are cut the same way).
"""

from __future__ import annotations

import moderngl
import numpy as np

from sceneforge.engine.server.gl import cutout_shaders as C
from sceneforge.engine.server.gl import frame as F
from sceneforge.engine.server.gl.program import Program

FLOW_VS = """
uniform mat4 u_view_proj;
uniform mat4 u_model;
in vec3 in_pos;
in vec3 in_prev;
out vec3 v_prev;
#ifdef ALPHA_TEST
in vec2 in_uv;
out vec2 v_uv;
#endif
void main() {
    v_prev = in_prev;
#ifdef ALPHA_TEST
    v_uv = in_uv;
#endif
    gl_Position = u_view_proj * (u_model * vec4(in_pos, 1.0));
}
"""

FLOW_FS = (
    "in vec3 v_prev;\n#ifdef ALPHA_TEST\n"
    + C._ALPHA_TEST
    + "#endif\nlayout(location = 0) out vec4 f_prev;\nvoid main() {\n#ifdef ALPHA_TEST\n"
    + C._DISCARD
    + "#endif\n    f_prev = vec4(v_prev, 1.0);\n}\n"
)
POS = ("3f 28x", "in_pos")  # resources.VERTEX_DTYPE: position only
POS_UV = ("3f 16x 2f 4x", "in_pos", "in_uv")
PREV = ("3f 28x", "in_prev")


class SkinFlow:
    """The float target and the two programs of the previous-pose pass (one GL context)."""

    def __init__(self, ctx: moderngl.Context):
        self.ctx = ctx
        self._progs: dict[bool, Program] = {}
        self._target: tuple[tuple[int, int], moderngl.Framebuffer] | None = None

    def program(self, alpha: bool) -> Program:
        if alpha not in self._progs:
            self._progs[alpha] = Program(self.ctx, FLOW_VS, FLOW_FS, ("ALPHA_TEST",) if alpha else ())
        return self._progs[alpha]

    def target(self, size: tuple[int, int]) -> moderngl.Framebuffer:
        if self._target is None or self._target[0] != size:
            self.release_target()
            fbo = self.ctx.framebuffer(
                color_attachments=[self.ctx.texture(size, 4, dtype="f4")], depth_attachment=self.ctx.depth_renderbuffer(size)
            )
            self._target = (size, fbo)
        return self._target[1]

    def draw(self, frame, pairs: list, bind_alpha) -> np.ndarray:
        """(H, W, 4) float32, row 0 at the top: previous-pose points (actor frame, cm) of the
        characters in ``pairs`` ((Draw, GpuMesh of the previous pose) each), w = 1 where drawn.
        ``bind_alpha(program, part)`` binds a cut-out part's albedo (Passes.bind_alpha)."""
        cam = frame.camera
        size = (int(cam.width), int(cam.height))
        fbo = self.target(size)
        fbo.scissor = None
        fbo.use()
        fbo.clear(0.0, 0.0, 0.0, 0.0, depth=1.0)
        self.ctx.enable(moderngl.DEPTH_TEST)
        vp = F.gl_bytes(frame.view_proj)
        for d, then in pairs:
            for first, count, part in d.mesh.draw_runs():
                prog = self.program(part is not None)
                prog.set("u_view_proj", vp)
                prog.set("u_model", d.placed.model_bytes)
                if part is not None:
                    bind_alpha(prog, part)
                vao = self.ctx.vertex_array(
                    prog.prog, [(d.mesh.vbo, *(POS_UV if part is not None else POS)), (then.vbo, *PREV)], d.mesh.ibo
                )
                try:
                    vao.render(vertices=count, first=first)
                finally:
                    vao.release()
        raw = np.frombuffer(fbo.read(components=4, dtype="f4"), np.float32).reshape(size[1], size[0], 4)
        return np.ascontiguousarray(raw[::-1])

    def release_target(self) -> None:
        if self._target is not None:
            fbo = self._target[1]
            for a in (*fbo.color_attachments, fbo.depth_attachment):
                a.release()
            fbo.release()
            self._target = None

    def release(self) -> None:
        self.release_target()
        for p in self._progs.values():
            p.prog.release()
        self._progs = {}
