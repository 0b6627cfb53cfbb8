"""GPU-side resources of the GL backend: uploaded meshes, the ground, and render targets.

Each asset is uploaded once (one interleaved VBO + IBO, keyed by asset id) and drawn per actor
with a model-matrix uniform; framebuffers are cached per resolution, so a frame allocates no GL
objects once the scene's assets and the camera's resolution have been seen.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import moderngl
import numpy as np

from sceneforge.core.meshes import RenderMesh
from sceneforge.engine.server.gl.casters import casting_faces
from sceneforge.engine.server.gl.ground import ground_grid, ground_tiles  # noqa: F401  (re-exported: resources.ground_grid)

# Interleaved vertex: position (3 f4), normal (3 f4), colour (3 u8 normalised + 1 pad), uv (2 f4)
# = 36 B. Programs bind the subset they read (a VAO per program variant).
LIT_FORMAT = "3f 3f 3f1 x 12x"  # flat look: position, normal, colour
PBR_FORMAT = "3f 3f 3f1 x 2f 4f1"  # pbr look: + uv + material base colour (sRGB, per vertex)
POS_FORMAT = "3f 28x"  # ids / shadow / coverage
POS_UV_FORMAT = "3f 16x 2f 4x"  # ids / shadow / coverage of alpha-tested parts
VERTEX_DTYPE = np.dtype(
    [("pos", "<f4", 3), ("nrm", "<f4", 3), ("col", "u1", 3), ("pad", "u1"), ("uv", "<f4", 2), ("base", "u1", 4)]
)
_ATTRS = {
    LIT_FORMAT: ("in_pos", "in_normal", "in_color"),
    PBR_FORMAT: ("in_pos", "in_normal", "in_color", "in_uv", "in_base"),
    POS_FORMAT: ("in_pos",),
    POS_UV_FORMAT: ("in_pos", "in_uv"),
}


CREASE_COS = math.cos(math.radians(40.0))  # faces meeting at a sharper angle get a hard edge
MAX_GROUP = 48  # faces around one vertex considered pairwise (bigger fans: flat per face)


_SIZES = {"f": 4, "f1": 1}


def _used(prog: moderngl.Program, fmt: str) -> tuple[str, ...]:
    """``fmt`` and its attribute names with the attributes ``prog`` does not read (the GLSL
    compiler drops unused inputs) turned into padding."""
    tokens, names, out = fmt.split(), list(_ATTRS[fmt]), []
    members = set(prog)
    for tok in tokens:
        if tok.endswith("x"):
            out.append(tok)
            continue
        name = names.pop(0)
        n, kind = int(tok[0]), tok[1:]
        if name in members:
            out.append(tok)
            out.append(name)
        else:
            out.append(f"{n * _SIZES[kind]}x")
    fmt_tokens = [t for t in out if not t.startswith("in_")]
    used = [t for t in out if t.startswith("in_")]
    return (" ".join(fmt_tokens), *used)


def vertex_normals(vertices: np.ndarray, faces: np.ndarray) -> np.ndarray:
    """Area-weighted vertex normals (unit, or 0 where undefined), no crease handling."""
    v = vertices.astype(np.float64)
    fn = np.cross(v[faces[:, 1]] - v[faces[:, 0]], v[faces[:, 2]] - v[faces[:, 0]])
    acc = np.zeros_like(v)
    for k in range(3):
        np.add.at(acc, faces[:, k], fn)
    return _unit(acc)


def _unit(a: np.ndarray) -> np.ndarray:
    norm = np.linalg.norm(a, axis=-1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(norm > 1e-12, a / norm, 0.0).astype(np.float32)


def _group_pairs(keys: np.ndarray, max_group: int = MAX_GROUP) -> tuple[np.ndarray, np.ndarray]:
    """All (i, j) index pairs with keys[i] == keys[j] (i == j included).

    Groups larger than ``max_group`` (fan centres of caps, poles) only pair each member with
    itself, which bounds the cost at ``len(keys) * max_group`` pairs.
    """
    order = np.argsort(keys, kind="stable")
    _, start, size = np.unique(keys[order], return_index=True, return_counts=True)
    big = size > max_group
    if big.any():  # each member of a big group becomes a group of its own
        members = np.concatenate([np.arange(s0, s0 + n) for s0, n in zip(start[big], size[big])])
        start = np.concatenate([start[~big], members])
        size = np.concatenate([size[~big], np.ones(len(members), dtype=size.dtype)])
    sq = size.astype(np.int64) ** 2
    group = np.repeat(np.arange(len(size)), sq)
    local = np.arange(int(sq.sum())) - np.repeat(np.cumsum(sq) - sq, sq)
    a = start[group] + local // size[group]
    b = start[group] + local % size[group]
    return order[a], order[b]


def crease_split(mesh: RenderMesh) -> tuple[RenderMesh, np.ndarray]:
    """Per-corner normals smoothed only across edges flatter than 40 degrees, then vertices
    split where one vertex needs several normals (box edges, cylinder rims stay sharp).

    Robust to inconsistent winding: neighbouring face normals are sign-aligned to the corner's
    own face before averaging (the shader turns normals towards the camera anyway).
    """
    v, f = mesh.vertices.astype(np.float64), mesh.faces
    fn = np.cross(v[f[:, 1]] - v[f[:, 0]], v[f[:, 2]] - v[f[:, 0]])
    fu = _unit(fn).astype(np.float64)
    corner_face = np.repeat(np.arange(len(f)), 3)
    i, j = _group_pairs(f.ravel())
    d = np.einsum("ij,ij->i", fu[corner_face[i]], fu[corner_face[j]])
    w = np.where(np.abs(d) >= CREASE_COS, np.sign(d), 0.0)
    contrib = w[:, None] * fn[corner_face[j]]
    acc = np.stack([np.bincount(i, contrib[:, k], minlength=len(corner_face)) for k in range(3)], axis=1)
    normals = _unit(acc)
    key = np.concatenate([f.reshape(-1, 1).astype(np.float64), np.round(normals * 1e4)], axis=1)
    uniq, inverse = np.unique(key, axis=0, return_inverse=True)
    src = uniq[:, 0].astype(np.int64)
    first = np.zeros(len(uniq), dtype=np.int64)
    first[inverse.ravel()[::-1]] = np.arange(len(inverse))[::-1]
    split = RenderMesh(
        mesh.vertices[src],
        inverse.reshape(-1, 3).astype(np.int32),
        mesh.colors[src],
        mesh.meta,
        uvs=None if mesh.uvs is None else mesh.uvs[src],
        materials=mesh.materials,
        face_materials=mesh.face_materials,
    )
    return split, normals[first]


def interleave(
    vertices: np.ndarray, normals: np.ndarray, colors: np.ndarray, uvs: np.ndarray | None = None, base: np.ndarray | None = None
) -> bytes:
    data = np.zeros(len(vertices), dtype=VERTEX_DTYPE)
    data["pos"], data["nrm"], data["col"] = vertices, normals, colors
    if uvs is not None:
        data["uv"] = uvs
    data["base"] = 255 if base is None else base
    return data.tobytes()


def _srgb8(linear) -> np.ndarray:
    c = np.clip(np.asarray(linear, dtype=np.float64), 0.0, 1.0)
    s = np.where(c <= 0.0031308, c * 12.92, 1.055 * c ** (1 / 2.4) - 0.055)
    return np.round(s * 255).astype(np.uint8)


def merge_materials(mesh: RenderMesh, normals: np.ndarray, return_src: bool = False):
    """Materials that differ only in their base colour (same textures and factors: e.g. one noise
    texture tinted per part) become one material, the colour moving to a per-vertex attribute
    (vertices split where materials meet). Returns ``(mesh, normals, base)``: base = (N, 4) sRGB
    uint8 colour factors per vertex. One draw per texture set instead of per material: draw calls
    dominate on llvmpipe for meshes with dozens of tinted parts. ``return_src``: also the source
    vertex of each output vertex (per-vertex data to carry along: a rig's skin weights)."""
    from dataclasses import replace

    mats = mesh.materials
    n_v = len(mesh.vertices)
    if len(mats) <= 1 or mesh.uvs is None:
        base = np.full((n_v, 4), 255, np.uint8)
        if len(mats) == 1:
            base[:] = np.concatenate([_srgb8(mats[0].base_color[:3]), [255]])
            mats = (replace(mats[0], base_color=(1.0, 1.0, 1.0, mats[0].base_color[3])),)
            mesh = replace(mesh, materials=mats)
        return (mesh, normals, base, np.arange(n_v)) if return_src else (mesh, normals, base)
    keys = [
        (
            id(m.albedo),
            id(m.normal_map),
            id(m.orm_map),
            m.roughness,
            m.metallic,
            m.alpha_cutoff,
            m.base_color[3],
            m.double_sided,
            m.normal_space,
        )
        for m in mats
    ]
    uniq = {k: i for i, k in reversed(list(enumerate(keys)))}  # key -> first material with it
    group = np.array([sorted(uniq.values()).index(uniq[k]) for k in keys], np.int32)
    reps = [mats[i] for i in sorted(uniq.values())]
    fm = mesh.face_materials if mesh.face_materials is not None else np.zeros(len(mesh.faces), np.int32)
    corner_v, corner_m = mesh.faces.ravel(), np.repeat(fm, 3)
    pairs, inverse = np.unique(np.stack([corner_v, corner_m], 1), axis=0, return_inverse=True)
    src, mat_of = pairs[:, 0], pairs[:, 1]
    colors = np.array([np.concatenate([_srgb8(m.base_color[:3]), [255]]) for m in mats], np.uint8)
    merged = RenderMesh(
        mesh.vertices[src],
        inverse.reshape(-1, 3).astype(np.int32),
        mesh.colors[src],
        mesh.meta,
        uvs=mesh.uvs[src],
        materials=tuple(replace(m, base_color=(1.0, 1.0, 1.0, m.base_color[3])) for m in reps),
        face_materials=group[fm],
    )
    if return_src:
        return merged, normals[src], colors[mat_of], src
    return merged, normals[src], colors[mat_of]


@dataclass
class Part:
    """A run of the index buffer drawn with one material (faces are sorted by material at upload)."""

    first: int  # first index (3 per triangle)
    count: int  # number of indices
    material: object | None  # core.meshes.Material, or None = vertex colours only

    @property
    def alpha_tested(self) -> bool:
        m = self.material
        return (
            m is not None
            and m.alpha_cutoff is not None
            and m.albedo is not None
            and m.albedo.ndim == 3
            and m.albedo.shape[2] == 4
        )


@dataclass
class GpuMesh:
    """One uploaded asset. VAOs are created lazily per program (a VAO is bound to a program)."""

    vbo: moderngl.Buffer
    ibo: moderngl.Buffer
    n_triangles: int
    center: np.ndarray  # local bounding-sphere centre, cm
    radius: float
    max_luma: float  # brightest vertex colour (0..1): a tint maps it to exactly the tint colour
    parts: list = field(default_factory=list)  # list[Part]; empty = one untextured part
    vaos: dict = field(default_factory=dict)
    # Vertices are welded (see :func:`weld`); when the weld ignored the colour attribute (meshes
    # with materials: the PBR look never reads it) a program that reads ``in_color`` (the flat
    # look) draws from this unwelded copy instead, built on first use: (vertex bytes, index bytes).
    unwelded: tuple[bytes, bytes] | None = None
    _flat: tuple | None = None  # (vbo, ibo) of ``unwelded`` once uploaded
    # The faces that can cast a visible shadow when the mesh stands upright (:func:`casting_faces`),
    # as index bytes (b"": none, a wholly flat mesh); None = every face (nothing to leave out, or
    # alpha-tested parts).
    upright_casters: bytes | None = None
    _casters: object = None  # moderngl.Buffer of ``upright_casters`` once uploaded
    _runs: tuple | None = None  # draw_runs(), computed on first use (the parts are final by then)
    # what ``vbo`` holds, for caches keyed on mesh content (the shadow map): a GPU-skinned mesh
    # (gl/skinning.py) rewrites its buffer in place for each new pose and counts it here
    pose_serial: int = 0

    @property
    def content_key(self) -> tuple[int, int]:
        """Equal for two draws of the same vertex data: the buffer and the pose written in it."""
        return (self.vbo.glo, self.pose_serial)

    @property
    def alpha_tested(self) -> bool:
        return any(p.alpha_tested for p in self.parts)

    def draw_runs(self) -> tuple:
        """The parts as draw calls, for a pass that draws every opaque part with the same program
        and state (``Passes.draw_mesh``: depth, ids, coverage, the flat look): each alpha-tested
        part alone as ``(first, count, part)``, and each stretch of consecutive opaque parts that
        lie end to end in the index buffer as one ``(first, count, None)``. The same triangles
        in the same order as one draw per part, so the same pixels, in fewer draw calls: a city
        ego image's shadow map drew its alpha-tested casters (cars with cut-out glass, bushes)
        in 23.5 draws, now 10.7 (2026-11-26)."""
        if self._runs is None:
            runs: list = []
            for p in self.parts:
                last = runs[-1] if runs else None
                if not p.alpha_tested and last is not None and last[2] is None and last[0] + last[1] == p.first:
                    runs[-1] = (last[0], last[1] + p.count, None)
                else:
                    runs.append((p.first, p.count, p if p.alpha_tested else None))
            self._runs = tuple(runs)
        return self._runs

    def vao(self, ctx: moderngl.Context, prog: moderngl.Program, key: str, with_attrs: bool | str, upright_casters: bool = False):
        """The VAO of ``prog`` (``key`` names the program). ``with_attrs``: True = flat-look
        attributes, False = position only, or a format string (PBR_FORMAT, POS_UV_FORMAT).
        ``upright_casters``: only the faces that cast a visible shadow when upright (the shadow
        pass; same as every face when the mesh has nothing to leave out)."""
        if upright_casters and self.upright_casters is not None:
            ckey = key + "\0casters"
            if ckey not in self.vaos:
                if self._casters is None:
                    self._casters = ctx.buffer(self.upright_casters)
                self.vaos[ckey] = ctx.vertex_array(prog, [(self.vbo, *_used(prog, POS_FORMAT))], self._casters)
            return self.vaos[ckey]
        if key not in self.vaos:
            fmt = with_attrs if isinstance(with_attrs, str) else (LIT_FORMAT if with_attrs else POS_FORMAT)
            layout = _used(prog, fmt)
            vbo, ibo = self.vbo, self.ibo
            if self.unwelded is not None and "in_color" in layout:
                if self._flat is None:
                    self._flat = (ctx.buffer(self.unwelded[0]), ctx.buffer(self.unwelded[1]))
                vbo, ibo = self._flat
            self.vaos[key] = ctx.vertex_array(prog, [(vbo, *layout)], ibo)
        return self.vaos[key]

    def release(self) -> None:
        for vao in self.vaos.values():
            vao.release()
        self.vbo.release()
        self.ibo.release()
        for buf in self._flat or ():
            buf.release()
        if self._casters is not None:
            self._casters.release()


def upload(ctx: moderngl.Context, mesh: RenderMesh, normals: np.ndarray | None = None) -> GpuMesh:
    """Upload a :class:`RenderMesh` (and compute its smooth normals) once."""
    if normals is None:
        if mesh.normals is not None:  # the source's smooth normals win over our crease split
            normals = mesh.normals
        else:
            mesh, normals = crease_split(mesh)
    mesh, normals, base = merge_materials(mesh, normals)
    v, f, n = mesh.vertices, mesh.faces, normals
    f, parts = _material_parts(mesh, f)
    lo, hi = v.min(axis=0), v.max(axis=0)
    center = 0.5 * (lo + hi).astype(np.float64)
    radius = float(np.max(np.linalg.norm(v - center, axis=1))) if len(v) else 0.0
    luma = mesh.colors.astype(np.float64) @ np.array([0.299, 0.587, 0.114]) / 255.0
    data = interleave(v, n, mesh.colors, mesh.uvs, base)
    ignore_color = bool(mesh.materials)  # every part has a material: the PBR look reads no colour
    vertices, indices = weld(data, f, ignore_color)
    casting = None
    if not any(p.alpha_tested for p in parts):  # cut-out parts are drawn part by part: all kept
        keep = casting_faces(v, f)
        if not keep.all():
            casting = np.frombuffer(indices, np.int32).reshape(-1, 3)[keep].tobytes()
    return GpuMesh(
        vbo=ctx.buffer(vertices),
        ibo=ctx.buffer(indices),
        n_triangles=len(f),
        center=center,
        radius=radius,
        max_luma=max(float(luma.max()) if len(luma) else 1.0, 1e-3),
        parts=parts,
        unwelded=(data, f.tobytes()) if ignore_color else None,
        upright_casters=casting,
    )


def weld(data: bytes, faces: np.ndarray, ignore_color: bool = False) -> tuple[bytes, bytes]:
    """Interleaved vertices with identical bytes merged, and the index buffer remapped.

    Meshes arrive unshared (3 vertices per face, so every face can carry its own colour); llvmpipe
    shades each distinct index once per batch, so sharing the vertices that are equal in every
    attribute the shaders read cuts vertex work 1.5-3x with bit-identical output (the same
    triangles with the same attribute values, drawn in the same order). ``ignore_color``: the
    colour attribute is left out of the comparison (zeroed), for buffers whose colour no program
    reads. Vertices keep the order of their first use (cache locality); deterministic.
    """
    verts = np.frombuffer(data, dtype=VERTEX_DTYPE).copy()
    if ignore_color:
        verts["col"] = 0
    if len(verts) == 0:
        return verts.tobytes(), np.ascontiguousarray(faces, np.int32).tobytes()
    raw = verts.view(np.dtype((np.void, VERTEX_DTYPE.itemsize)))
    _, first, inverse = np.unique(raw, return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")  # unique vertices in order of first use
    rank = np.empty(len(order), np.int64)
    rank[order] = np.arange(len(order))
    remap = rank[inverse.reshape(-1)]
    welded = verts[first[order]]
    return welded.tobytes(), np.ascontiguousarray(remap[faces], dtype=np.int32).tobytes()


def _material_parts(mesh: RenderMesh, faces: np.ndarray) -> tuple[np.ndarray, list[Part]]:
    """Faces sorted (stably) by material, and one :class:`Part` per material used. Materials
    without UVs on the mesh keep their factors (base colour, roughness) but no textures."""
    if not mesh.materials:
        return faces, [Part(0, 3 * len(faces), None)]
    mats = mesh.materials
    if mesh.uvs is None:  # textures cannot be mapped: keep factors only
        from dataclasses import replace

        mats = tuple(replace(m, albedo=None, normal_map=None, orm_map=None) for m in mats)
    fm = mesh.face_materials if mesh.face_materials is not None else np.zeros(len(faces), np.int32)
    order = np.argsort(fm, kind="stable")
    faces = np.ascontiguousarray(faces[order])
    used, starts, counts = np.unique(fm[order], return_index=True, return_counts=True)
    return faces, [Part(3 * int(s), 3 * int(c), mats[int(u)]) for u, s, c in zip(used, starts, counts)]


def noise_image(size: int = 256, seed: int = 20261122) -> np.ndarray:
    """Tileable smooth noise (uint8, size x size) for the ground texture; fixed seed, so every
    render is reproducible. Band-limited white noise via FFT, hence periodic (no seams)."""
    rng = np.random.default_rng(seed)
    spectrum = np.fft.fft2(rng.standard_normal((size, size)))
    f = np.fft.fftfreq(size)
    radius = np.sqrt(f[:, None] ** 2 + f[None, :] ** 2)
    smooth = np.real(np.fft.ifft2(spectrum * np.exp(-((radius / 0.06) ** 2))))
    smooth = (smooth - smooth.min()) / (smooth.max() - smooth.min())
    return np.round(smooth * 255).astype(np.uint8)
