"""The mesh record passed from the asset library to the renderer.

Assets are normalised once at load (see ``assets_manifest``): centimetres, UE axes (X forward,
Y right, Z up), base on z = 0, centred in XY. The renderer only ever sees :class:`RenderMesh`, so
a new mesh source (another pack format, procedural shapes) needs no renderer change.

A mesh always has per-vertex ``colors`` (the flat fallback every renderer can draw). It may also
carry what the source had: ``uvs`` + ``materials`` (PBR textures: albedo with alpha for
alpha-tested foliage, tangent-space normal map, roughness/metallic) assigned per face by
``face_materials``, and smooth vertex ``normals``. Textures are sRGB ``uint8`` images, never
baked into vertex colours when UVs exist.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass(frozen=True, eq=False)
class Material:
    """A metal/roughness PBR material (glTF's model). Texture arrays are row 0 = top (v = 1 - row).

    albedo:        (H, W, 3|4) uint8 sRGB base colour; a 4th channel is alpha (cut at ``alpha_cutoff``).
    normal_map:    (H, W, 3) uint8 tangent-space normal map (OpenGL convention, +Y up) or None
                   (``normal_space="object"``: the mesh frame's x, y, z instead).
    orm_map:       (H, W, 3) uint8 occlusion/roughness/metallic (glTF ORM packing) or None.
    base_color:    linear RGBA factor multiplied with ``albedo`` (or used alone without it).
    """

    name: str = "default"
    base_color: tuple[float, float, float, float] = (1.0, 1.0, 1.0, 1.0)
    albedo: np.ndarray | None = None
    normal_map: np.ndarray | None = None
    orm_map: np.ndarray | None = None
    roughness: float = 0.8
    metallic: float = 0.0
    alpha_cutoff: float | None = None
    double_sided: bool = False
    license: str | None = None  # licence of the textures when they differ from the mesh's
    tile_cm: float | None = None  # surfaces (ground, facades): world size of one texture repeat
    attribution: str = ""  # credit line(s) of the textures, for dataset cards
    normal_space: str = "tangent"  # "object": normal_map holds mesh-frame normals of the surface seen
    # from the side the vertex normals point to, mirrored through the
    # face when seen from the other side (impostor cards)


@dataclass(frozen=True, eq=False)
class RenderMesh:
    """Triangle mesh in an asset's local UE frame (cm).

    vertices: (N, 3) float32, cm, UE local frame, base at z = 0.
    faces:    (M, 3) int32 indices into ``vertices``. Winding is not relied on (no culling).
    colors:   (N, 3) uint8 sRGB albedo per vertex: the flat fallback for renderers that ignore
              materials (a textured face carries its texture's colour at the face's UV centroid);
              a material-aware renderer uses ``materials`` instead and must not multiply this in.
    normals:  (N, 3) float32 smooth unit normals, or None (the renderer uses face normals).
    uvs:      (N, 2) float32 texture coordinates, OpenGL convention: v = 1 is the texture's row 0
              (top), like :class:`Material`'s arrays; trimesh flips glTF's v at import. Or None.
    materials / face_materials: the mesh's materials and, per face, an index into them
              (None = every face uses ``materials[0]``; no materials = vertex colours only).
    """

    vertices: np.ndarray
    faces: np.ndarray
    colors: np.ndarray
    meta: dict = field(default_factory=dict)
    normals: np.ndarray | None = None
    uvs: np.ndarray | None = None
    materials: tuple[Material, ...] = ()
    face_materials: np.ndarray | None = None

    def __post_init__(self) -> None:
        v = np.ascontiguousarray(self.vertices, dtype=np.float32)
        f = np.ascontiguousarray(self.faces, dtype=np.int32)
        c = np.ascontiguousarray(self.colors, dtype=np.uint8)
        if v.ndim != 2 or v.shape[1] != 3:
            raise ValueError(f"vertices must be (N,3), got {v.shape}")
        if f.ndim != 2 or f.shape[1] != 3:
            raise ValueError(f"faces must be (M,3), got {f.shape}")
        if c.shape != v.shape:
            raise ValueError(f"colors must be (N,3) like vertices, got {c.shape}")
        if len(f) and (f.min() < 0 or f.max() >= len(v)):
            raise ValueError("face index out of range")
        object.__setattr__(self, "vertices", v)
        object.__setattr__(self, "faces", f)
        object.__setattr__(self, "colors", c)
        if self.normals is not None:
            n = np.ascontiguousarray(self.normals, dtype=np.float32)
            if n.shape != v.shape:
                raise ValueError(f"normals must be (N,3) like vertices, got {n.shape}")
            object.__setattr__(self, "normals", n)
        if self.uvs is not None:
            uv = np.ascontiguousarray(self.uvs, dtype=np.float32)
            if uv.shape != (len(v), 2):
                raise ValueError(f"uvs must be (N,2), got {uv.shape}")
            object.__setattr__(self, "uvs", uv)
        object.__setattr__(self, "materials", tuple(self.materials))
        if self.face_materials is not None:
            fm = np.ascontiguousarray(self.face_materials, dtype=np.int32)
            if fm.shape != (len(f),) or (len(fm) and (fm.min() < 0 or fm.max() >= max(1, len(self.materials)))):
                raise ValueError("face_materials must be (M,) indices into materials")
            object.__setattr__(self, "face_materials", fm)

    @property
    def textured(self) -> bool:
        """UVs and at least one material with an albedo texture."""
        return self.uvs is not None and any(m.albedo is not None for m in self.materials)

    @property
    def n_triangles(self) -> int:
        return int(len(self.faces))

    def bounds(self) -> np.ndarray:
        """(2, 3) min/max corner in cm."""
        return np.stack([self.vertices.min(axis=0), self.vertices.max(axis=0)])


@dataclass(frozen=True, eq=False)
class SkinRig:
    """A skinned mesh in its bind pose, for a renderer that skins on the GPU (issue 49).

    mesh:    the bind pose as a :class:`RenderMesh` whose ``vertices``/``normals`` are in the rig's
             own *bind space* (any units and axes: the palette maps them); colours, UVs, faces and
             materials are those of every posed mesh, vertex for vertex.
    bones:   (N, 4) int32 palette slots of each vertex's up to four influences.
    weights: (N, 4) float32 blend weights, each row summing to 1 (renormalised at build).
    spheres: (S, 4) float64 bounding sphere (centre xyz, radius) in bind space of the vertices
             each slot moves (radius < 0: the slot moves none), for conservative per-pose bounds.
    key:     one id per rig (e.g. ``character:human:0``): what a renderer uploads it once under.

    A pose is a *palette*: (S, 4, 4) float32 row-major matrices, column vectors, mapping bind
    space to the posed mesh's frame (cm, UE axes), so that the posed vertex is
    ``sum_k weights[k] * palette[bones[k]] @ (v, 1)``, its normal the 3x3 part of the same blend,
    renormalised: exactly the CPU mesh of that pose.
    """

    mesh: RenderMesh
    bones: np.ndarray
    weights: np.ndarray
    spheres: np.ndarray
    key: str

    @property
    def n_slots(self) -> int:
        return int(len(self.spheres))

    def skin(self, palette: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(N, 3) positions and unit normals of the pose ``palette`` on the CPU (float64): the
        reference a GPU skinning is tested against."""
        pal = np.asarray(palette, np.float64)
        m = np.einsum("nk,nkij->nij", self.weights.astype(np.float64), pal[self.bones])
        v = self.mesh.vertices.astype(np.float64)
        p = np.einsum("nij,nj->ni", m[:, :3, :3], v) + m[:, :3, 3]
        n = np.einsum("nij,nj->ni", m[:, :3, :3], self.mesh.normals.astype(np.float64))
        return p, n / np.maximum(np.linalg.norm(n, axis=1, keepdims=True), 1e-12)

    def bounding_sphere(self, palette: np.ndarray) -> tuple[np.ndarray, float]:
        """A sphere (centre, radius; posed frame) holding every vertex of the pose, from the
        slots' spheres alone (no skinning): a blended vertex is a convex combination of points
        each inside one moved slot sphere, so inside any ball holding them all."""
        pal = np.asarray(palette, np.float64)
        used = self.spheres[:, 3] >= 0
        c = np.einsum("sij,sj->si", pal[used, :3, :3], self.spheres[used, :3]) + pal[used, :3, 3]
        scale = np.abs(np.linalg.det(pal[used, :3, :3])) ** (1.0 / 3.0)
        r = self.spheres[used, 3] * scale
        if not len(c):
            return np.zeros(3), 0.0
        lo, hi = (c - r[:, None]).min(0), (c + r[:, None]).max(0)
        mid = 0.5 * (lo + hi)
        return mid, float(np.max(np.linalg.norm(c - mid, axis=1) + r))
