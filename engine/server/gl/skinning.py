"""Linear-blend skinning on the GPU for posed characters (issue 49; engine/server/characters.py).

A character's rig (:class:`core.meshes.SkinRig`: bind-pose vertices, up to four bone slots and
renormalised weights per vertex) is uploaded once per GL context. A pose is only its *palette*
(one 4x4 matrix per slot, ~50 for a person: 3 KB of uniforms). Each actor drawn as a character
owns a vertex buffer that a vertex shader fills with the posed vertices by transform feedback
(``SKIN_VS``: ``v' = sum_k w_k P[b_k] v``, the normal by the same blend's 3x3, renormalised),
written in the renderer's own interleaved vertex format (resources.VERTEX_DTYPE, colour, UVs and
material colour copied through). Every pass then draws that buffer as it draws any uploaded mesh:
lit (flat and PBR), depth, normals, instance ids (one id per character, its props included:
the figure is one mesh), pixel counts and the sun's shadow map; the skinning runs once per new
pose, not once per pass. The buffer is rewritten only when the actor's pose changes
(``GpuMesh.pose_serial`` counts the rewrites, so the shadow map's cache sees the new shape).

Why transform feedback rather than skinning in every pass's vertex shader: the renderer has a
dozen vertex-shader variants (lit, PBR, ids, coverage, shadow, their alpha-tested twins), and a
frame draws a character in up to four passes; one skinning pre-pass keeps them all unchanged and
does the blend once. The bind pose never leaves the GPU; per pose the CPU computes the palette
(~0.3 ms) and a bounding sphere from the slots' bind spheres (``SkinRig.bounding_sphere``).

The palette is a uniform array (``mat4 u_bones[N]``, N the rig's slots rounded up to 64): a rig
whose slots do not fit ``GL_MAX_VERTEX_UNIFORM_COMPONENTS`` is drawn from the CPU-skinned mesh
instead (:meth:`SkinnedMeshes.supports`), as is every character when the backend is made with
``gpu_skinning=False``.
"""

from __future__ import annotations

import itertools
import logging
from collections import OrderedDict
from dataclasses import dataclass

import moderngl
import numpy as np

from sceneforge.core.meshes import SkinRig
from sceneforge.engine.server.gl.resources import GpuMesh, _material_parts, interleave, merge_materials

log = logging.getLogger(__name__)
SLOT_ROUND = 64  # palette array sizes compiled: multiples of this (one program per size)
MAX_POSED = 256  # actors' posed buffers kept per context (least recently used released, never one of the current frame)
SRC_FORMAT = ("3f 3f u 2f u", "in_pos", "in_normal", "in_col", "in_uv", "in_base")  # = resources.VERTEX_DTYPE, 40 B
SKIN_FORMAT = ("4i 4f", "in_bones", "in_weights")
VARYINGS = ("o_pos", "o_nrm", "o_col", "o_uv", "o_base")  # interleaved: the same 40-byte record

SKIN_VS = """#version 330 core
// One point per bind-pose vertex; the outputs are captured (transform feedback) as the posed
// vertex, in the renderer's interleaved format: position, normal, colour, uv, material colour.
uniform mat4 u_bones[N_SLOTS];
in vec3 in_pos;
in vec3 in_normal;
in uint in_col;
in vec2 in_uv;
in uint in_base;
in ivec4 in_bones;
in vec4 in_weights;
out vec3 o_pos;
out vec3 o_nrm;
flat out uint o_col;
out vec2 o_uv;
flat out uint o_base;
void main() {
    mat4 m = in_weights.x * u_bones[in_bones.x] + in_weights.y * u_bones[in_bones.y]
           + in_weights.z * u_bones[in_bones.z] + in_weights.w * u_bones[in_bones.w];
    o_pos = (m * vec4(in_pos, 1.0)).xyz;
    vec3 n = mat3(m) * in_normal;
    float len = length(n);
    o_nrm = len > 1e-12 ? n / len : n;
    o_col = in_col;
    o_uv = in_uv;
    o_base = in_base;
}
"""

_SERIAL = itertools.count(1)  # pose_serial values: unique per write in the process


def palette_bytes(palette: np.ndarray, n_slots: int) -> bytes:
    """(S, 4, 4) row-major matrices -> ``n_slots`` column-major float32 mat4 (padded with identities)."""
    pal = np.asarray(palette, np.float32)
    out = np.tile(np.eye(4, dtype=np.float32), (n_slots, 1, 1))
    out[: len(pal)] = pal
    return np.ascontiguousarray(out.transpose(0, 2, 1)).tobytes()


@dataclass
class UploadedRig:
    """A rig's bind pose on the GPU: the source records, the skin attributes, the draw order."""

    src: moderngl.Buffer
    skin: moderngl.Buffer
    indices: bytes  # int32 triangles (faces sorted by material, as resources.upload)
    parts: list
    n_vertices: int
    n_triangles: int
    max_luma: float
    n_slots: int  # the compiled palette size
    vao: moderngl.VertexArray | None = None

    def release(self) -> None:
        if self.vao is not None:
            self.vao.release()
        self.src.release()
        self.skin.release()


def upload_rig(ctx: moderngl.Context, rig: SkinRig, n_slots: int) -> UploadedRig:
    """The bind pose as resources.upload would lay out the posed mesh (materials merged, faces
    sorted by material), without the weld: each output vertex keeps its skin weights."""
    mesh, normals, base, src = merge_materials(rig.mesh, rig.mesh.normals, return_src=True)
    faces, parts = _material_parts(mesh, mesh.faces)
    data = interleave(mesh.vertices, normals, mesh.colors, mesh.uvs, base)
    skin = np.zeros(len(src), dtype=[("b", "<i4", 4), ("w", "<f4", 4)])
    skin["b"], skin["w"] = rig.bones[src], rig.weights[src]
    luma = mesh.colors.astype(np.float64) @ np.array([0.299, 0.587, 0.114]) / 255.0
    return UploadedRig(
        src=ctx.buffer(data),
        skin=ctx.buffer(skin.tobytes()),
        indices=np.ascontiguousarray(faces, np.int32).tobytes(),
        parts=parts,
        n_vertices=len(src),
        n_triangles=len(faces),
        max_luma=max(float(luma.max()) if len(luma) else 1.0, 1e-3),
        n_slots=n_slots,
    )


class SkinnedMeshes:
    """Rigs and posed buffers of one GL context (see the module docstring)."""

    def __init__(self, ctx: moderngl.Context):
        self.ctx = ctx
        limit = ctx.info.get("GL_MAX_VERTEX_UNIFORM_COMPONENTS", 1024)
        self.max_slots = (int(limit) - 64) // 16  # mat4s that fit beside a few spare components
        self.rigs: dict[str, UploadedRig] = {}
        self.buffers: OrderedDict[tuple[str, str], tuple[GpuMesh, bytes]] = OrderedDict()  # -> (mesh, palette bytes)
        self._progs: dict[int, moderngl.Program] = {}
        self._generation = 0
        self._fbo: moderngl.Framebuffer | None = None
        self._used: dict[tuple[str, str], int] = {}  # slot -> generation it was last drawn in

    def supports(self, rig: SkinRig) -> bool:
        """Whether the rig's palette fits this context's vertex uniforms (else: CPU skinning)."""
        return self._slots(rig) <= self.max_slots

    @staticmethod
    def _slots(rig: SkinRig) -> int:
        return -(-max(rig.n_slots, 1) // SLOT_ROUND) * SLOT_ROUND

    def begin(self) -> None:
        """A new set of draws starts: posed buffers used from now on are not released until the next."""
        self._generation += 1

    def program(self, n_slots: int) -> moderngl.Program:
        if n_slots not in self._progs:
            self._progs[n_slots] = self.ctx.program(
                vertex_shader=SKIN_VS.replace("N_SLOTS", str(n_slots)), varyings=VARYINGS, varyings_capture_mode="interleaved"
            )
        return self._progs[n_slots]

    def rig(self, rig: SkinRig) -> UploadedRig:
        if rig.key not in self.rigs:
            self.rigs[rig.key] = upload_rig(self.ctx, rig, self._slots(rig))
            log.debug("uploaded rig %s: %d vertices, %d slots", rig.key, self.rigs[rig.key].n_vertices, rig.n_slots)
        return self.rigs[rig.key]

    def posed(self, rig: SkinRig, palette: np.ndarray, owner: str) -> GpuMesh:
        """``owner``'s posed mesh (one buffer per actor name and rig), skinned to ``palette`` on the
        GPU unless the buffer already holds exactly that pose."""
        up = self.rig(rig)
        key = (rig.key, owner)
        pal = palette_bytes(palette, up.n_slots)
        entry = self.buffers.get(key)
        if entry is None:
            mesh = GpuMesh(
                vbo=self.ctx.buffer(reserve=max(up.n_vertices * 40, 4)),
                ibo=self.ctx.buffer(up.indices),
                n_triangles=up.n_triangles,
                center=np.zeros(3),
                radius=0.0,
                max_luma=up.max_luma,
                parts=up.parts,
            )
            entry = (mesh, b"")
        self.buffers[key] = entry
        self.buffers.move_to_end(key)
        self._used[key] = self._generation
        mesh, written = entry
        if written != pal:
            self.skin_into(up, pal, mesh.vbo)
            mesh.center, mesh.radius = rig.bounding_sphere(palette)
            mesh.pose_serial = next(_SERIAL)
            self.buffers[key] = (mesh, pal)
        self._trim()
        return mesh

    def skin_into(self, up: UploadedRig, pal: bytes, out: moderngl.Buffer) -> None:
        """Run the skinning vertex shader over the bind pose with palette ``pal``, into ``out``."""
        prog = self.program(up.n_slots)
        if up.vao is None:
            up.vao = self.ctx.vertex_array(prog, [(up.src, *SRC_FORMAT), (up.skin, *SKIN_FORMAT)])
        prog["u_bones"].write(pal)
        if self._fbo is None:  # a draw, even with the rasteriser off, needs a complete framebuffer bound
            self._fbo = self.ctx.simple_framebuffer((1, 1), components=1)
        previous = self.ctx.fbo
        self._fbo.use()
        up.vao.transform(out, mode=moderngl.POINTS, vertices=up.n_vertices)
        if previous is not None:
            previous.use()

    def _trim(self) -> None:
        while len(self.buffers) > MAX_POSED:
            key = next(iter(self.buffers))
            if self._used.get(key, -1) >= self._generation:
                break  # every older buffer is in the current draws: keep them (a scene with that many characters)
            mesh, _ = self.buffers.pop(key)
            self._used.pop(key, None)
            mesh.release()

    def release(self) -> None:
        for mesh, _ in self.buffers.values():
            mesh.release()
        for up in self.rigs.values():
            up.release()
        for prog in self._progs.values():
            prog.release()
        if self._fbo is not None:
            self._fbo.release()
            self._fbo = None
        self.buffers, self.rigs, self._progs, self._used = OrderedDict(), {}, {}, {}
