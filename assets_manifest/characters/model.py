"""A character of the pack, posed: skinned body + props, as a textured :class:`RenderMesh`.

:func:`load` resolves an actor (:mod:`.actors`), reads its body mesh, skins, clips and its props
(recursively: a head prop carries a helmet), and scales it so that the assembled figure standing
in its walk pose at phase 0 is the species' real height (:data:`SPECIES`; 0 A.D. draws small
animals oversized: a chicken is 1.37 units tall, a man 3.86). :meth:`Character.mesh` skins it at a
clip and phase and returns one mesh in UE axes and cm with the model origin (the ground point
under the figure) at (0, 0, 0), facing +X: every part (props included) is one actor, so masks give
a character one id.

Materials: ``player_*`` skins use alpha as the player-colour area, ``rgb *= mix(colour, 1,
alpha)`` (a per-character colour); ``objectcolor`` tints by the actor's ``<color>``; other
``*trans*`` / ``*alpha*`` materials use alpha as coverage (cut at 0.5).
"""

from __future__ import annotations

import io
import threading
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from sceneforge.assets_manifest.characters import actors as A
from sceneforge.assets_manifest.characters import formats as F
from sceneforge.assets_manifest.characters import ik
from sceneforge.core.errors import AssetError
from sceneforge.core.meshes import Material, RenderMesh, SkinRig

MAX_PROP_DEPTH = 3
FLIP_V = False  # PMD v already has row 0 (top) at v = 1, the RenderMesh (OpenGL) convention
# class -> (actor paths under art/actors/, real height of the assembled figure in cm, props allowed)
SPECIES: dict[str, tuple[tuple[str, ...], float]] = {
    "human": (
        (
            "units/athenians/female_citizen.xml",
            "units/celts/female_citizen.xml",
            "units/persians/female_citizen.xml",
            "units/romans/female_citizen.xml",
            "units/han/female_citizen.xml",
            "units/kushites/female_citizen.xml",
            "units/athenians/infantry_spearman_b.xml",
            "units/celts/infantry_spearman_b.xml",
        ),
        170.0,
    ),
    "horse": (("fauna/horse_brown.xml", "fauna/horse_black.xml", "fauna/horse_white.xml", "fauna/horse_chestnut_01.xml"), 210.0),
    "deer": (("fauna/deer.xml",), 170.0),
    "wolf": (("fauna/wolf.xml", "fauna/arctic_wolf.xml"), 85.0),
    "husky": (("fauna/wolf.xml", "fauna/arctic_wolf.xml"), 75.0),
    "fox": (("fauna/fox_red.xml", "fauna/fox_arctic.xml"), 45.0),
    "bear": (("fauna/bear_brown.xml", "fauna/bear_black.xml"), 130.0),
    "camel": (("fauna/camel.xml",), 210.0),
    "elephant": (("fauna/elephant_asian.xml", "fauna/elephant_african_bush.xml"), 290.0),
    "cattle": (("fauna/cow.xml", "fauna/bull.xml"), 150.0),
    "pig": (("fauna/pig1.xml",), 90.0),
    "sheep": (("fauna/sheep1.xml",), 95.0),
    "goat": (("fauna/goat.xml",), 90.0),
    "zebra": (("fauna/zebra.xml",), 160.0),
    "giraffe": (("fauna/giraffe_adult.xml",), 500.0),
    "lion": (("fauna/lion.xml", "fauna/lioness.xml"), 120.0),
    "gazelle": (("fauna/gazelle.xml",), 100.0),
    "boar": (("fauna/boar.xml",), 95.0),
    "dog": (("fauna/mastiff.xml",), 80.0),
    "donkey": (("fauna/donkey.xml",), 140.0),
    "chicken": (("fauna/chicken.xml",), 45.0),
}
PLAYER_COLOURS = ((0.55, 0.17, 0.14), (0.20, 0.30, 0.55), (0.30, 0.45, 0.22), (0.55, 0.45, 0.20), (0.40, 0.40, 0.42))
LOCKED_CLIPS = ("walk", "run")  # clips whose planted feet are locked by IK (ik.py); idle stands as drawn
PROP_ATTACH_OFF = ("weapon_R", "weapon_L", "shield_arm", "shield", "helmet", "quiver", "weapon_bow", "weapon_sword")


@dataclass
class Part:
    """One mesh of the figure: the body (skinned) or a prop hung on a parent's prop point."""

    mesh: F.SkinnedMesh
    material: Material
    parent: int = -1  # index of the part it hangs on (-1: the body)
    point: str = ""  # the parent's prop point


@dataclass
class Character:
    """A loaded character (all model units until :meth:`mesh`)."""

    actor: str
    cls: str
    parts: list[Part]
    clips: dict[str, F.Clip]
    clip_files: dict[str, str]
    scale_cm: float = 1.0  # cm per model unit
    meta: dict = field(default_factory=dict)
    _locks: dict = field(default_factory=dict, repr=False, compare=False)
    _lock_guard: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def foot_lock(self, clip: str):
        """The clip's foot lock (:func:`.ik.lock`: planted feet held by two-bone IK), made once."""
        with self._lock_guard:
            if clip not in self._locks:
                self._locks[clip] = ik.lock(self, clip)
            return self._locks[clip]

    def pose(self, clip: str, phase: float, planted: bool = True) -> list[tuple[np.ndarray, np.ndarray]]:
        """(positions, normals) per part in model units and the data's axes."""
        bones = self.pose_bones(clip, phase, planted)
        out: list[tuple[np.ndarray, np.ndarray]] = []
        for p, m in zip(self.parts, self._placements(bones), strict=True):
            if p.parent < 0:
                out.append(F.skin(p.mesh, bones))
                continue
            if m is None:
                out.append((np.zeros((0, 3)), np.zeros((0, 3))))
                continue
            pos = p.mesh.positions @ m[:3, :3].T + m[:3, 3]
            nrm = p.mesh.normals @ m[:3, :3].T
            out.append((pos, nrm / np.maximum(np.linalg.norm(nrm, axis=1, keepdims=True), 1e-12)))
        return out

    def pose_bones(self, clip: str, phase: float, planted: bool = True) -> np.ndarray:
        """(B, 4, 4) model-space bone matrices of the body at ``clip`` / ``phase``: what both the CPU
        skinning (:meth:`pose`) and the GPU palette (:meth:`palette`) pose the figure with. Walk and
        run have their planted feet locked (``planted``: :mod:`.ik`, the pose a video plays with the
        clip's root travel, :mod:`.motion`); idle is the clip's own."""
        if clip not in self.clips:
            raise AssetError(f"{self.actor}: no clip {clip!r} (has {', '.join(sorted(self.clips))})")
        if planted and clip in LOCKED_CLIPS:
            return self.foot_lock(clip).bones(phase)
        return F.pose_at(self.clips[clip], phase)

    def _drawn_parts(self) -> list[int]:
        """Indices of the parts :meth:`mesh` draws: the body, and every prop whose prop point exists."""
        return [
            i for i, p in enumerate(self.parts) if p.parent < 0 or any(q[0] == p.point for q in self.parts[p.parent].mesh.props)
        ]

    def palette(self, clip: str, phase: float) -> np.ndarray:
        """(S, 4, 4) float32 skinning palette of ``clip`` / ``phase`` for :meth:`rig` (core.meshes.SkinRig):
        slots 0..B-1 the body's bones (``U P B^-1``), B the body's unbound vertices (``U``), B+i prop
        part i's placement (``U M_i``), where ``U`` maps the data's axes and units to UE cm. Mirrors
        :meth:`pose` matrix for matrix."""
        bones = self.pose_bones(clip, phase)
        body = self.parts[0].mesh
        u = np.eye(4)
        u[:3, :3] = F.TO_UE * self.scale_cm
        slots = [F.skin_matrices(body, bones)]  # (B+1): the last is the identity
        slots += [(np.eye(4) if m is None else m)[None] for m in self._placements(bones)[1:]]
        return (u @ np.concatenate(slots, 0)).astype(np.float32)

    def _placements(self, bones: np.ndarray) -> list[np.ndarray | None]:
        """Each part's model matrix under ``bones`` (what :meth:`pose` and :meth:`palette` both place
        the parts with): the identity for the body; for a prop, its parent's matrix times its prop
        point's (a point bound to a bone of the body follows that bone); None where the parent has no
        such prop point (the prop is not drawn)."""
        world: list[np.ndarray | None] = []
        for p in self.parts:
            if p.parent < 0:
                world.append(np.eye(4))
                continue
            pt = next((q for q in self.parts[p.parent].mesh.props if q[0] == p.point), None)
            if pt is None:
                world.append(None)
                continue
            _, t, q, bone = pt
            if bone >= 0 and p.parent == 0:
                world.append(bones[bone] @ F.bone_matrices(t, q))
            else:
                base = world[p.parent]
                world.append((np.eye(4) if base is None else base) @ F.bone_matrices(t, q))
        return world

    def rig(self, key: str) -> SkinRig:
        """The figure in its bind pose with the skin weights of :meth:`palette`'s slots: vertex for
        vertex the mesh :meth:`mesh` builds (same parts, order, colours, UVs, faces, materials), for
        a renderer that skins on the GPU. Bind space: the data's axes and model units."""
        body = self.parts[0].mesh
        nb = body.n_bones
        idx, w = F.blend_weights(body)
        verts, norms, uvs, faces, fmat, colours, bones, weights = [], [], [], [], [], [], [], []
        base = 0
        for i in self._drawn_parts():
            p = self.parts[i]
            n = len(p.mesh.positions)
            verts.append(p.mesh.positions.astype(np.float32))
            norms.append(p.mesh.normals.astype(np.float32))
            uv = p.mesh.uvs[:, 0, :].astype(np.float64)
            uvs.append(np.column_stack([uv[:, 0], 1.0 - uv[:, 1]]) if FLIP_V else uv)
            # the data winds clockwise about its normals: reversed, as every RenderMesh (Cycles shades the front)
            faces.append(p.mesh.faces[:, ::-1] + base)
            fmat.append(np.full(len(p.mesh.faces), i, np.int32))
            colours.append(_vertex_colours(p.material, uvs[-1]))
            if i == 0:
                bones.append(idx.astype(np.int32))
                weights.append(w.astype(np.float32))
            else:
                bones.append(np.full((n, 4), nb + i, np.int32))
                weights.append(np.tile(np.array([1.0, 0.0, 0.0, 0.0], np.float32), (n, 1)))
            base += n
        mesh = RenderMesh(
            np.concatenate(verts),
            np.concatenate(faces),
            np.concatenate(colours),
            meta={"id": key, "license": "cc-by-sa-3.0", "skinned": True, "bind_pose": True},
            normals=np.concatenate(norms),
            uvs=np.concatenate(uvs).astype(np.float32),
            materials=tuple(p.material for p in self.parts),
            face_materials=np.concatenate(fmat),
        )
        bones_a, weights_a = np.concatenate(bones), np.concatenate(weights)
        spheres = np.full((nb + len(self.parts), 4), -1.0)
        v = mesh.vertices.astype(np.float64)
        for s in np.unique(bones_a[weights_a > 0]).tolist():
            pts = v[((bones_a == s) & (weights_a > 0)).any(1)]
            lo, hi = pts.min(0), pts.max(0)
            c = 0.5 * (lo + hi)
            spheres[s] = (*c, float(np.max(np.linalg.norm(pts - c, axis=1))) * (1.0 + 1e-5) + 1e-6)
        return SkinRig(mesh, bones_a, weights_a, spheres, key)

    def mesh(self, clip: str, phase: float, asset_id: str | None = None, planted: bool = True) -> RenderMesh:
        """The figure skinned at ``clip`` / ``phase``: UE axes, cm, origin on the ground, +X forward
        (walk and run with the planted feet locked unless ``planted`` is False)."""
        posed = self.pose(clip, phase, planted)
        verts, norms, uvs, faces, fmat, colours = [], [], [], [], [], []
        base = 0
        for i, (p, (pos, nrm)) in enumerate(zip(self.parts, posed)):
            if not len(pos):
                continue
            verts.append(F.to_ue(pos, self.scale_cm))
            norms.append(F.to_ue(nrm, 1.0))
            uv = p.mesh.uvs[:, 0, :].astype(np.float64)
            uvs.append(np.column_stack([uv[:, 0], 1.0 - uv[:, 1]]) if FLIP_V else uv)
            # the data winds clockwise about its normals: reversed, as every RenderMesh (Cycles shades the front)
            faces.append(p.mesh.faces[:, ::-1] + base)
            fmat.append(np.full(len(p.mesh.faces), i, np.int32))
            colours.append(_vertex_colours(p.material, uvs[-1]))
            base += len(pos)
        return RenderMesh(
            np.concatenate(verts).astype(np.float32),
            np.concatenate(faces),
            np.concatenate(colours),
            meta={"id": asset_id or f"character:{self.actor}:{clip}:{phase:.4f}", "license": "cc-by-sa-3.0", "skinned": True},
            normals=np.concatenate(norms).astype(np.float32),
            uvs=np.concatenate(uvs).astype(np.float32),
            materials=tuple(p.material for p in self.parts),
            face_materials=np.concatenate(fmat),
        )

    def height_units(self) -> float:
        """The figure's height standing in its walk pose at phase 0, without its optional props
        (a spear above a hoplite's head must not shrink him): the same with props on or off."""
        clip = "walk" if "walk" in self.clips else next(iter(self.clips))
        posed = self.pose(clip, 0.0, planted=False)  # before the scale is known
        pts = np.concatenate([p for i, (p, _) in enumerate(posed) if len(p) and not self.optional(i)])
        return float(pts[:, 1].max() - min(0.0, pts[:, 1].min()))

    def optional(self, i: int) -> bool:
        """Whether part ``i`` is an optional prop (hung, itself or through a parent, on one of
        :data:`PROP_ATTACH_OFF`'s points): a helmet, a shield, a weapon."""
        depth = 0
        while i >= 0 and depth <= MAX_PROP_DEPTH + 1:
            if self.parts[i].parent >= 0 and self.parts[i].point in PROP_ATTACH_OFF:
                return True
            i, depth = self.parts[i].parent, depth + 1
        return False


def _vertex_colours(m: Material, uv: np.ndarray) -> np.ndarray:
    if m.albedo is None:
        return np.full((len(uv), 3), 180, np.uint8)
    h, w = m.albedo.shape[:2]
    col = np.clip((uv[:, 0] % 1.0) * w, 0, w - 1).astype(int)
    row = np.clip((1.0 - uv[:, 1] % 1.0) * h, 0, h - 1).astype(int)
    return m.albedo[row, col, :3].astype(np.uint8)


def _material(root: Path, spec: A.ActorSpec, colour: tuple[float, float, float]) -> Material:
    from PIL import Image

    name = spec.textures.get("baseTex")
    if not name:
        return Material(name=spec.path, base_color=(0.7, 0.7, 0.7, 1.0), roughness=0.85, license="cc-by-sa-3.0")
    img = np.asarray(Image.open(io.BytesIO(A.read(root, A.skin_file(name)))).convert("RGBA"), np.float32) / 255.0
    rgb, a = img[..., :3], img[..., 3:]
    mat = spec.material.lower()
    cutoff = None
    if "player" in mat:
        rgb = rgb * (np.asarray(colour) * (1.0 - a) + a)
        out = rgb
    elif "objectcolor" in mat and spec.color is not None:
        out = rgb * (np.asarray(spec.color) * (1.0 - a) + a)
    elif "trans" in mat or "alpha" in mat:
        out = np.concatenate([rgb, a], -1)
        cutoff = 0.5
    else:
        out = rgb
    arr = np.clip(out * 255.0 + 0.5, 0, 255).astype(np.uint8)
    return Material(name=name, albedo=arr, roughness=0.85, alpha_cutoff=cutoff, double_sided=True, license="cc-by-sa-3.0")


def load(
    root: Path, actor: str, cls: str, height_cm: float | None = None, props: bool = True, colour_index: int = 0
) -> Character:
    """Load ``actor`` (path under ``art/actors/``) from the installed pack at ``root``."""
    root = Path(root)
    spec = A.resolve(root, actor)
    if spec.mesh is None:
        raise AssetError(f"{actor}: the actor names no mesh")
    colour = PLAYER_COLOURS[colour_index % len(PLAYER_COLOURS)]
    body = F.read_pmd(A.read(root, A.mesh_file(spec.mesh)))
    parts = [Part(body, _material(root, spec, colour))]
    _add_props(root, spec, 0, parts, props, colour, 1)
    clips, files = {}, {}
    for name in ("walk", "run", "idle"):
        for f, _speed in spec.clips.get(name, [])[:1]:
            clip = F.read_psa(A.read(root, A.clip_file(f)))
            if clip.n_bones == body.n_bones:
                clips[name], files[name] = clip, f
    if "walk" not in clips:
        raise AssetError(f"{actor}: no walk clip matching its {body.n_bones}-bone skeleton")
    ch = Character(actor, cls, parts, clips, files, 1.0, {"mesh": spec.mesh, "material": spec.material})
    real = height_cm if height_cm is not None else SPECIES.get(cls, ((), 170.0))[1]
    ch.scale_cm = real / ch.height_units()
    return ch


def _add_props(root: Path, spec: A.ActorSpec, parent: int, parts: list[Part], keep_all: bool, colour, depth: int) -> None:
    if depth > MAX_PROP_DEPTH:
        return
    for point, actor in sorted(spec.props.items()):
        if not actor or (not keep_all and point in PROP_ATTACH_OFF):
            continue
        try:
            sub = A.resolve(root, actor)
            if sub.mesh is None:
                continue
            mesh = F.read_pmd(A.read(root, A.mesh_file(sub.mesh)))
        except AssetError:
            continue  # a prop missing from the pack (or a prop of a prop): the figure without it
        parts.append(Part(mesh, _material(root, sub, colour), parent, point))
        _add_props(root, sub, len(parts) - 1, parts, keep_all, colour, depth + 1)
