"""Articulated subjects: procedural rigs of rigid parts that walk, trot, run, roll and steer.

A rig is a set of rigid parts, each spawned as its own actor (the server's ``primitive_sphere``
as an ellipsoid, ``primitive_cube`` as a box, scaled and tinted), so articulation travels over
the protocol we already have: one ``vset /sceneforge/poses`` per frame sets every part. Nothing
on the server changes and the parts render, mask and count like any actor.

* ``biped`` (human): pelvis, torso, head, hair, upper/lower arms, thighs, shins, feet. Walks or
  runs (scenarios/videos/gait.py); arms swing against the legs.
* ``quadruped`` (bear, fox, husky, deer, camel): body, chest/rump/hump, neck, head, muzzle, ears,
  tail, four two-segment legs with hooves/paws, in the species' proportions (the sculpts of
  assets_manifest/procedural/animals.py). Walks (four-beat) or trots (diagonal pairs).
* ``vehicle`` (car, taxi, truck, bike, vespa): body parts + wheels. Each wheel spins by the
  distance its contact point rolls along the wheel's heading (angle = distance / radius, in
  radians) and front wheels steer by Ackermann geometry to the path's curvature (the inner
  wheel more; clipped at ±35°).

Legs are solved by two-bone IK towards the gait's foot targets; a planted foot is pinned to a
world point, so feet in stance do not slide (measured by :func:`foot_sliding` on the posed
parts). Turning in place steps the feet round (the turning gait). A rig is sized to the box of
the asset it stands in for and coloured from that asset's own vertex colours per region (shirt,
trousers, coat, legs, body, glass), so a clip keeps its subject asset (and every answer) and
only the geometry is articulated. Everything is a pure function of the rig parameters
(:meth:`Rig.to_record`), the root track and the ground, so a clip re-renders from its record.

Units: cm, degrees, UE axes (X forward, Y right, Z up); part sizes are full extents.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from sceneforge.engine.world import Actor, Rotator, Transform
from sceneforge.scenarios.videos import gait as ga
from sceneforge.core.types import PixelCount

PRIMITIVE = {"ellipsoid": "primitive_sphere", "box": "primitive_cube"}  # both 100 cm, base on z = 0
KINDS = {
    "human": "biped",
    "bear": "quadruped",
    "fox": "quadruped",
    "husky": "quadruped",
    "deer": "quadruped",
    "camel": "quadruped",
    "car": "vehicle",
    "taxi": "vehicle",
    "truck": "vehicle",
    "bike": "vehicle",
    "vespa": "vehicle",
}
RIG_CLASSES = tuple(KINDS)
MAX_STEER_DEG = 35.0
TYRE, HUB, GLASS, DARK = (32, 32, 34), (175, 175, 180), (60, 80, 100), (28, 24, 22)


def rigged(cls: str) -> bool:
    """True when class ``cls`` has a procedural rig."""
    return cls in KINDS


# --- rotations -----------------------------------------------------------------------------------
def rotator_from_matrix(R: np.ndarray) -> Rotator:
    """The UE rotator whose ``matrix()`` is ``R`` (columns forward, right, up)."""
    f, r, u = R[:, 0], R[:, 1], R[:, 2]
    pitch = math.degrees(math.asin(max(-1.0, min(1.0, float(f[2])))))
    if math.hypot(f[0], f[1]) > 1e-9:
        return Rotator(pitch, math.degrees(math.atan2(f[1], f[0])), math.degrees(math.atan2(-r[2], u[2])))
    return Rotator(pitch, math.degrees(math.atan2(-r[0], r[1])), 0.0)


def yaw_matrix(deg: float) -> np.ndarray:
    return Rotator(0.0, float(deg), 0.0).matrix()


def axis_frame(z: np.ndarray, ref: np.ndarray, alt: np.ndarray) -> np.ndarray:
    """A rotation whose local Z is ``z`` and local X is ``ref`` made orthogonal to it (``alt``
    when ``ref`` is nearly parallel to ``z``)."""
    z = z / np.linalg.norm(z)
    x = ref - (ref @ z) * z
    if np.linalg.norm(x) < 0.2:
        x = alt - (alt @ z) * z
    x = x / np.linalg.norm(x)
    return np.column_stack([x, np.cross(z, x), z])


def placed(shape: str, size, centre: np.ndarray, R: np.ndarray) -> Transform:
    """The transform that puts a primitive of full extents ``size`` with its centre at ``centre``
    and rotation ``R`` (the primitives' pivot is their base centre)."""
    size = np.asarray(size, float)
    loc = np.asarray(centre, float) - R @ np.array([0.0, 0.0, size[2] / 2.0])
    return Transform(tuple(float(v) for v in loc), rotator_from_matrix(R), tuple(float(v) for v in size / 100.0))


# --- rig description -----------------------------------------------------------------------------
@dataclass(frozen=True)
class Part:
    """A rigid part: ``kind`` body (fixed to the root: centre + axis-aligned), limb (between
    two body points ``a`` -> ``b``, radius ``r``), leg/arm segments, foot, wheel or spoke."""

    name: str
    shape: str
    size: tuple[float, float, float]
    color: tuple[int, int, int]
    kind: str = "body"
    centre: tuple[float, float, float] = (0.0, 0.0, 0.0)
    a: tuple[float, float, float] | None = None
    b: tuple[float, float, float] | None = None
    index: int = -1  # leg / wheel / arm index
    angle: float = 0.0  # spoke: extra spin offset (deg)


@dataclass(frozen=True)
class Leg:
    hip: tuple[float, float, float]  # body frame, cm
    upper: float
    lower: float
    bend: float  # +1: the middle joint points forward (knee), -1: back (hock)
    foot_z: float  # height of the foot point (ankle / fetlock) above the ground


@dataclass(frozen=True)
class Wheel:
    centre: tuple[float, float, float]
    radius: float
    steer: bool


@dataclass(frozen=True)
class Rig:
    """A rig: class, kind, box size, its parts, legs and wheels (body frame: base centre, X forward)."""

    cls: str
    kind: str
    size: tuple[float, float, float]
    parts: tuple[Part, ...]
    legs: tuple[Leg, ...] = ()
    wheels: tuple[Wheel, ...] = ()
    arms: tuple[tuple[tuple[float, float, float], float, float], ...] = ()  # shoulder, upper, lower
    palette: dict = field(default_factory=dict)

    def to_record(self) -> dict:
        """What rebuilds this rig: class, size and palette (:func:`build_rig`)."""
        return {
            "class": self.cls,
            "kind": self.kind,
            "size_cm": list(self.size),
            "palette": {k: list(v) for k, v in sorted(self.palette.items())},
        }

    @property
    def leg_cm(self) -> float:
        return float(np.mean([lg.hip[2] - lg.foot_z for lg in self.legs])) if self.legs else 0.0

    def neutral_feet(self) -> np.ndarray:
        return np.array([[lg.hip[0], lg.hip[1], lg.foot_z] for lg in self.legs], float)

    def reach_cm(self) -> float:
        """Horizontal reach of a foot from below its hip with the leg nearly straight."""
        return float(
            min(math.sqrt(max((0.98 * (lg.upper + lg.lower)) ** 2 - (lg.hip[2] - lg.foot_z) ** 2, 1.0)) for lg in self.legs)
        )


def _c(palette: dict, key: str, default) -> tuple[int, int, int]:
    return tuple(int(v) for v in palette.get(key, default))


# Palette regions in the asset's box (x, y in [-0.5, 0.5] of L, W; z in [0, 1] of H) and fallbacks.
REGIONS = {
    "biped": {
        "shirt": ((-0.3, 0.3), (-0.25, 0.25), (0.58, 0.76), (40, 90, 160)),
        "pants": ((-0.3, 0.3), (-0.5, 0.5), (0.15, 0.42), (45, 45, 60)),
        "skin": ((-0.5, 0.5), (-0.5, 0.5), (0.84, 0.9), (224, 180, 150)),
        "hair": ((-0.5, 0.5), (-0.5, 0.5), (0.95, 1.0), (60, 40, 25)),
        "shoes": ((-0.5, 0.5), (-0.5, 0.5), (0.0, 0.04), (35, 30, 30)),
    },
    "quadruped": {
        "coat": ((-0.25, 0.25), (-0.5, 0.5), (0.35, 0.8), (150, 110, 70)),
        "legs": ((-0.5, 0.5), (-0.5, 0.5), (0.04, 0.2), (120, 90, 60)),
        "head": ((0.3, 0.5), (-0.5, 0.5), (0.4, 1.0), (150, 110, 70)),
        "hoof": ((-0.5, 0.5), (-0.5, 0.5), (0.0, 0.03), DARK),
    },
    "vehicle": {
        "body": ((-0.45, 0.45), (-0.5, 0.5), (0.3, 0.5), (40, 70, 140)),
        "top": ((-0.3, 0.3), (-0.3, 0.3), (0.85, 1.0), GLASS),
    },
}


def palette_of(mesh, kind: str) -> dict:
    """Each region's dominant colour on ``mesh`` (a RenderMesh; None = fallbacks): the colour
    (quantised to 16 levels) covering the most surface area among the triangles whose centroid
    lies in the region, skipping near-black ones (tyres, shadows) when others are present."""
    out = {key: tuple(int(c) for c in r[3]) for key, r in REGIONS[kind].items()}
    if mesh is None or not len(mesh.faces):
        return out
    v, f = np.asarray(mesh.vertices, float), np.asarray(mesh.faces, np.int64)
    col = np.asarray(mesh.colors, float)[f].mean(1)
    tri = v[f]
    area = 0.5 * np.linalg.norm(np.cross(tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0]), axis=1)
    lo, hi = v.min(0), v.max(0)
    n = (tri.mean(1) - (lo + hi) / 2.0) / np.maximum(hi - lo, 1e-6)
    n[:, 2] += 0.5
    q = (col // 16).astype(np.int64)
    code = q[:, 0] * 256 + q[:, 1] * 16 + q[:, 2]
    luma = col @ np.array([0.299, 0.587, 0.114])
    for key, (xr, yr, zr, _) in REGIONS[kind].items():
        sel = (
            (n[:, 0] >= xr[0])
            & (n[:, 0] <= xr[1])
            & (n[:, 1] >= yr[0])
            & (n[:, 1] <= yr[1])
            & (n[:, 2] >= zr[0])
            & (n[:, 2] <= zr[1])
            & (area > 0)
        )
        bright = sel & (luma >= 45)
        sel = bright if bright.any() and key not in ("hair", "shoes", "hoof") else sel
        if not sel.any():
            continue
        codes, inv = np.unique(code[sel], return_inverse=True)
        best = int(np.argmax(np.bincount(inv, weights=area[sel])))
        pick = sel.copy()
        pick[sel] = inv == best
        out[key] = tuple(int(c) for c in np.average(col[pick], axis=0, weights=area[pick]).round())
    skin = out.get("skin")
    if skin is not None and not skin[0] >= skin[1] >= skin[2] - 10:  # collar or hat, not a face
        out["skin"] = REGIONS[kind]["skin"][3]
    return out


def build_rig(cls: str, size, palette: dict | None = None) -> Rig:
    """The rig of class ``cls`` fitted to the box ``size`` (L, W, H cm)."""
    kind = KINDS[cls]
    pal = dict(palette or {k: v[3] for k, v in REGIONS[kind].items()})
    size = tuple(float(s) for s in size)
    if kind == "biped":
        return _biped(cls, size, pal)
    if kind == "quadruped":
        return _quadruped(cls, size, pal)
    return _vehicle(cls, size, pal)


def rig_from_record(d: dict) -> Rig:
    return build_rig(d["class"], d["size_cm"], {k: tuple(v) for k, v in d["palette"].items()})


def _biped(cls: str, size, pal: dict) -> Rig:
    H = size[2]
    shirt, pants, skin = _c(pal, "shirt", (0, 0, 0)), _c(pal, "pants", (0, 0, 0)), _c(pal, "skin", (0, 0, 0))
    parts = [
        Part("pelvis", "ellipsoid", (0.13 * H, 0.2 * H, 0.12 * H), pants, centre=(0, 0, 0.5 * H)),
        Part("torso", "ellipsoid", (0.15 * H, 0.27 * H, 0.32 * H), shirt, centre=(0, 0, 0.67 * H)),
        Part("neck", "ellipsoid", (0.06 * H, 0.06 * H, 0.1 * H), skin, centre=(0, 0, 0.84 * H)),
        Part("head", "ellipsoid", (0.12 * H, 0.1 * H, 0.13 * H), skin, centre=(0.01 * H, 0, 0.92 * H)),
        Part(
            "hair", "ellipsoid", (0.125 * H, 0.105 * H, 0.085 * H), _c(pal, "hair", (0, 0, 0)), centre=(-0.012 * H, 0, 0.955 * H)
        ),
    ]
    legs, arms = [], []
    foot_z = 0.035 * H
    for i, (side, y) in enumerate((("l", -0.055 * H), ("r", 0.055 * H))):
        hip = (0.0, y, 0.5 * H)
        legs.append(Leg(hip, 0.255 * H, 0.255 * H, +1.0, foot_z))
        parts += [
            Part(f"thigh_{side}", "ellipsoid", (0.09 * H, 0.09 * H, 0.0), pants, "upper", index=i),
            Part(f"shin_{side}", "ellipsoid", (0.07 * H, 0.07 * H, 0.0), pants, "lower", index=i),
            Part(
                f"foot_{side}",
                "box",
                (0.14 * H, 0.055 * H, 0.04 * H),
                _c(pal, "shoes", DARK),
                "foot",
                centre=(0.035 * H, 0, -foot_z + 0.02 * H),
                index=i,
            ),
        ]
        arms.append(((0.0, 2.6 * y + (0.035 * H if y > 0 else -0.035 * H), 0.8 * H), 0.17 * H, 0.17 * H))
        parts += [
            Part(f"upperarm_{side}", "ellipsoid", (0.065 * H, 0.065 * H, 0.0), shirt, "arm_upper", index=i),
            Part(f"forearm_{side}", "ellipsoid", (0.055 * H, 0.055 * H, 0.0), skin, "arm_lower", index=i),
        ]
    return Rig(cls, "biped", size, tuple(parts), tuple(legs), (), tuple(arms), pal)


# Quadruped sculpts in their natural units (assets_manifest/procedural/animals.py), simplified:
# body ellipsoids (centre, radii, colour key), limbs (a, b, radius, key), legs (x front, x hind,
# half-track y, hip z front, hip z hind, upper radius, lower radius), hoof (radii).
SPECIES = {
    "bear": {
        "body": [
            ((0, 0, 80), (60, 31, 34), "coat"),
            ((34, 0, 96), (30, 28, 28), "coat"),
            ((-44, 0, 82), (32, 30, 33), "coat"),
            ((94, 0, 92), (19, 20, 18.5), "head"),
            ((87, -15, 110), (4, 7.5, 8), "head"),
            ((87, 15, 110), (4, 7.5, 8), "head"),
            ((-76, 0, 92), (7, 7, 7), "coat"),
        ],
        "limbs": [((58, 0, 92), (84, 0, 90), 22, "coat"), ((102, 0, 89), (130, 0, 80), 10, "head")],
        "legs": (40, -48, 17.5, 78, 80, 15, 10),
        "hoof": (13, 9, 6),
        "foot_z": 6.0,
    },
    "fox": {
        "body": [
            ((0, 0, 38), (28, 10.5, 11.5), "coat"),
            ((18, 0, 38), (14, 10.5, 12.5), "coat"),
            ((40, 0, 54), (8.5, 7.5, 6.5), "head"),
            ((-74, 0, 18.5), (7, 6, 5), "tip"),
        ],
        "limbs": [
            ((24, 0, 42), (36, 0, 52), 7, "coat"),
            ((44, 0, 52), (59, 0, 49), 3.5, "head"),
            ((38, -4.5, 58), (36, -6.5, 71), 3.0, "head"),
            ((38, 4.5, 58), (36, 6.5, 71), 3.0, "head"),
            ((-26, 0, 40), (-46, 0, 31), 6, "coat"),
            ((-46, 0, 31), (-72, 0, 20), 7.5, "coat"),
        ],
        "legs": (22, -22, 5, 34, 34, 4.5, 2.4),
        "hoof": (3.2, 2.2, 1.6),
        "foot_z": 1.6,
    },
    "husky": {
        "body": [
            ((0, 0, 52), (30, 15, 16.5), "coat"),
            ((22, 0, 53), (17, 15.5, 19), "coat"),
            ((44, 0, 76), (11, 10.5, 9.5), "head"),
            ((-34, 0, 72), (8, 7, 8), "coat"),
        ],
        "limbs": [
            ((28, 0, 62), (40, 0, 72), 12, "coat"),
            ((50, 0, 73), (62, 0, 70.5), 5.5, "legs"),
            ((41, -6, 83), (40, -7.5, 95), 4.0, "head"),
            ((41, 6, 83), (40, 7.5, 95), 4.0, "head"),
            ((-30, 0, 60), (-38, 0, 70), 6.5, "coat"),
        ],
        "legs": (24, -24, 7.5, 46, 50, 7, 3.6),
        "hoof": (4.2, 3.2, 2.2),
        "foot_z": 2.2,
    },
    "deer": {
        "body": [
            ((0, 0, 100), (48, 19, 24), "coat"),
            ((32, 0, 100), (22, 18, 27), "coat"),
            ((-38, 0, 104), (22, 19, 23), "coat"),
            ((66, 0, 151), (12, 7.5, 8.5), "head"),
            ((-62, 0, 104), (6, 8, 9), "coat"),
        ],
        "limbs": [
            ((42, 0, 112), (62, 0, 146), 11, "coat"),
            ((70, 0, 148), (87, 0, 138), 5.5, "head"),
            ((62, -6, 157), (57, -17, 166), 4.0, "head"),
            ((62, 6, 157), (57, 17, 166), 4.0, "head"),
        ],
        "antlers": [
            ((62, -4, 160), (50, -24, 198), 2.2),
            ((50, -24, 198), (46, -28, 220), 1.6),
            ((62, 4, 160), (50, 24, 198), 2.2),
            ((50, 24, 198), (46, 28, 220), 1.6),
        ],
        "legs": (34, -40, 9.5, 92, 100, 8, 3.0),
        "hoof": (3.5, 2.6, 2.8),
        "foot_z": 2.8,
        "chain": 1.08,
    },
    "camel": {
        "body": [
            ((0, 0, 148), (58, 27, 30), "coat"),
            ((36, 0, 146), (26, 25, 32), "coat"),
            ((-2, 0, 170), (36, 20, 40), "coat"),
            ((108, 0, 190), (15, 9.5, 10), "head"),
            ((100, -8, 200), (3, 3, 5), "head"),
            ((100, 8, 200), (3, 3, 5), "head"),
        ],
        "limbs": [
            ((52, 0, 150), (80, 0, 136), 14, "coat"),
            ((80, 0, 136), (104, 0, 184), 10, "coat"),
            ((112, 0, 188), (133, 0, 177), 7.5, "head"),
            ((-56, 0, 150), (-64, 0, 106), 3.0, "coat"),
        ],
        "legs": (42, -40, 13.5, 136, 146, 9, 5.5),
        "hoof": (10, 7.5, 3.5),
        "foot_z": 3.5,
        "chain": 1.06,
    },
}
# the same species under the class names of the library
SPECIES_OF = {"bear": "bear", "fox": "fox", "husky": "husky", "deer": "deer", "camel": "camel"}


def _sculpt_box(sp: dict, antlers: bool) -> tuple[np.ndarray, np.ndarray]:
    pts = []
    for c, r, _ in sp["body"]:
        pts += [np.subtract(c, r), np.add(c, r)]
    for a, b, r, *_ in sp["limbs"] + (sp.get("antlers", []) if antlers else []):
        for p in (a, b):
            pts += [np.subtract(p, r), np.add(p, r)]
    fx, hx, y, *_ = sp["legs"]
    hoof = sp["hoof"]
    pts += [np.array([fx + hoof[0], y + hoof[1], 0.0]), np.array([hx - hoof[0], -y - hoof[1], 0.0])]
    pts = np.array(pts, float)
    lo, hi = pts.min(0), pts.max(0)
    lo[2] = 0.0
    return lo, hi


def _quadruped(cls: str, size, pal: dict) -> Rig:
    sp = SPECIES[SPECIES_OF[cls]]
    antlers = "antlers" in sp and size[2] > 1.2 * size[0]  # a stag's box is taller than long
    lo, hi = _sculpt_box(sp, antlers)
    k = np.asarray(size, float) / (hi - lo)
    mid = np.array([(lo[0] + hi[0]) / 2.0, (lo[1] + hi[1]) / 2.0, 0.0])
    to = lambda p: tuple(float(v) for v in (np.asarray(p, float) - mid) * k)  # noqa: E731
    col = {
        "coat": _c(pal, "coat", (0, 0, 0)),
        "head": _c(pal, "head", (0, 0, 0)),
        "legs": _c(pal, "legs", (0, 0, 0)),
        "tip": (238, 232, 222),
        "horn": (205, 188, 160),
    }
    parts = [
        Part(f"body{i}", "ellipsoid", tuple(float(v) for v in 2 * np.asarray(r) * k), col[key], centre=to(c))
        for i, (c, r, key) in enumerate(sp["body"])
    ]
    kr = float(np.sqrt(k[1] * k[2]))
    limbs = [(a, b, r, key) for a, b, r, key in sp["limbs"]]
    limbs += [(a, b, r, "horn") for a, b, r in (sp.get("antlers", []) if antlers else [])]
    parts += [
        Part(f"limb{i}", "ellipsoid", (2 * r * kr, 2 * r * kr, 0.0), col[key], "limb", a=to(a), b=to(b))
        for i, (a, b, r, key) in enumerate(limbs)
    ]
    fx, hx, y, zf, zh, ru, rl = sp["legs"]
    foot_z = sp["foot_z"] * k[2]
    legs = []
    for i, (name, x, yy, z, bend) in enumerate(
        (("lf", fx, -y, zf, +1.0), ("rf", fx, y, zf, +1.0), ("lh", hx, -y, zh, -1.0), ("rh", hx, y, zh, -1.0))
    ):
        hip = to((x, yy, z))
        chain = sp.get("chain", 1.12) * (hip[2] - foot_z)  # bent at rest: 1.12 reaches ~0.45 hip heights
        legs.append(Leg(hip, 0.5 * chain, 0.5 * chain, bend, foot_z))
        parts += [
            Part(f"upper_{name}", "ellipsoid", (2 * ru * kr, 2 * ru * kr, 0.0), col["coat"], "upper", index=i),
            Part(f"lower_{name}", "ellipsoid", (2 * rl * kr, 2 * rl * kr, 0.0), col["legs"], "lower", index=i),
            Part(
                f"hoof_{name}",
                "ellipsoid",
                tuple(float(v) for v in 2 * np.asarray(sp["hoof"]) * k),
                _c(pal, "hoof", DARK),
                "foot",
                centre=(0.3 * sp["hoof"][0] * k[0], 0.0, -foot_z),
                index=i,
            ),
        ]
    return Rig(cls, "quadruped", size, tuple(parts), tuple(legs), (), (), pal)


# Vehicles: wheel radius (share of L, at most share of H), axle x (shares of L), wheel width (share of L)
VEHICLES = {
    "car": (0.075, 0.21, (0.31, -0.3), 0.06),
    "taxi": (0.075, 0.21, (0.31, -0.3), 0.06),
    "truck": (0.07, 0.16, (0.36, -0.2, -0.36), 0.05),
    "bike": (0.2, 0.42, (0.3, -0.3), 0.03),
    "vespa": (0.12, 0.25, (0.36, -0.33), 0.07),
}


def _vehicle(cls: str, size, pal: dict) -> Rig:
    L, W, H = size
    fr, fh, xs, fw = VEHICLES[cls]
    r, w = min(fr * L, fh * H), fw * L
    body, top = _c(pal, "body", (0, 0, 0)), _c(pal, "top", GLASS)
    two = cls in ("bike", "vespa")
    if cls == "truck":
        cab, cargo = 0.8 * H - 1.2 * r, H - 1.6 * r
        parts = [
            Part("cab", "box", (0.25 * L, 0.9 * W, cab), body, centre=(0.36 * L, 0, 1.2 * r + cab / 2)),
            Part("cargo", "box", (0.68 * L, 0.9 * W, cargo), top, centre=(-0.15 * L, 0, 1.6 * r + cargo / 2)),
            Part("chassis", "box", (0.95 * L, 0.8 * W, 0.5 * r), DARK, centre=(0.0, 0, 1.1 * r)),
            Part("glass", "box", (0.02 * L, 0.8 * W, 0.25 * cab), GLASS, centre=(0.487 * L, 0, 1.2 * r + 0.7 * cab)),
        ]
    elif cls == "bike":
        z = lambda f: f * H  # noqa: E731
        crank, seat, head, rear, front = (
            (0, 0, r),
            (-0.08 * L, 0, z(0.8)),
            (0.2 * L, 0, z(0.82)),
            (xs[1] * L, 0, r),
            (xs[0] * L, 0, r),
        )
        parts = [
            Part(f"tube{i}", "ellipsoid", (0.03 * L, 0.03 * L, 0.0), body, "limb", a=a, b=b)
            for i, (a, b) in enumerate(((crank, seat), (seat, head), (head, crank), (crank, rear), (seat, rear), (head, front)))
        ]
        parts += [
            Part("saddle", "box", (0.12 * L, 0.06 * L, 0.03 * L), DARK, centre=(-0.09 * L, 0, z(0.84))),
            Part("bar", "box", (0.04 * L, 0.36 * L, 0.03 * L), HUB, centre=(0.22 * L, 0, z(0.95))),
        ]
    elif cls == "vespa":
        parts = [
            Part("rear", "ellipsoid", (0.55 * L, 0.8 * W, 0.45 * H), body, centre=(-0.2 * L, 0, 0.45 * H)),
            Part("floor", "box", (0.45 * L, 0.5 * W, 0.06 * H), body, centre=(0.05 * L, 0, 0.22 * H)),
            Part("shield", "box", (0.08 * L, 0.7 * W, 0.55 * H), body, centre=(0.3 * L, 0, 0.5 * H)),
            Part("seat", "box", (0.36 * L, 0.4 * W, 0.06 * H), DARK, centre=(-0.2 * L, 0, 0.7 * H)),
            Part("bar", "box", (0.05 * L, 0.9 * W, 0.05 * H), HUB, centre=(0.33 * L, 0, 0.92 * H)),
        ]
    else:
        low = 0.55 * H - 0.6 * r
        parts = [
            Part("body", "box", (L, 0.88 * W, low), body, centre=(0, 0, 0.6 * r + low / 2)),
            Part("cabin", "box", (0.5 * L, 0.82 * W, 0.4 * H), GLASS, centre=(-0.04 * L, 0, 0.75 * H)),
            Part("roof", "box", (0.46 * L, 0.84 * W, 0.05 * H), body, centre=(-0.04 * L, 0, 0.975 * H)),
        ]
    wheels = []
    for x in xs:
        for s in (0.0,) if two else (-1.0, 1.0):
            wheels.append(Wheel((x * L, s * (W / 2.0 - 0.5 * w), r), r, x == xs[0]))
    for i, wh in enumerate(wheels):
        parts.append(Part(f"tyre{i}", "ellipsoid", (2 * r, w, 2 * r), TYRE, "wheel", index=i))
        for j, ang in enumerate((0.0, 90.0)):
            parts.append(Part(f"spoke{i}_{j}", "box", (1.8 * r, 1.12 * w, 0.22 * r), HUB, "wheel", index=i, angle=ang))
    return Rig(cls, "vehicle", size, tuple(parts), (), tuple(wheels), (), pal)


# --- posing --------------------------------------------------------------------------------------
def two_bone(
    hip: np.ndarray, target: np.ndarray, upper: float, lower: float, bend_dir: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Knee and reached foot for a two-bone leg from ``hip`` towards ``target`` bending towards
    ``bend_dir`` (all in one frame). The foot equals the target when it is within reach."""
    d = target - hip
    dist = float(np.linalg.norm(d))
    dn = d / max(dist, 1e-9)
    reach = min(max(dist, abs(upper - lower) + 1e-6), upper + lower - 1e-6)
    cos_a = (upper**2 + reach**2 - lower**2) / (2 * upper * reach)
    n = bend_dir - (bend_dir @ dn) * dn
    n = n / max(np.linalg.norm(n), 1e-9)
    knee = hip + upper * (cos_a * dn + math.sqrt(max(0.0, 1 - cos_a**2)) * n)
    foot = hip + reach * dn
    return knee, foot


@dataclass(frozen=True, eq=False)
class PosedRig:
    """A rig posed over a clip: per-frame part transforms and the animation state."""

    rig: Rig
    gait: ga.Gait | None
    transforms: list[list[Transform]]  # [t][part]
    feet_world: np.ndarray  # (T,F,3) foot points as posed (after IK); (T,0,3) for vehicles
    stance: np.ndarray  # (T,F) bool
    stance_id: np.ndarray  # (T,F) cycle index of a planted foot, -1 in swing
    wheel_spin_deg: np.ndarray  # (T,W)
    wheel_steer_deg: np.ndarray  # (T,W)
    fps: float = 1.0
    phase: np.ndarray | None = None  # (T,) gait phase per frame (None: no gait)

    @property
    def n_frames(self) -> int:
        return len(self.transforms)

    def part_names(self, owner: str) -> list[str]:
        return [f"{owner}_{p.name}" for p in self.rig.parts]

    def actors(self, owner: str, t: int = 0) -> list[Actor]:
        return [
            Actor(n, PRIMITIVE[p.shape], tf, tint=p.color)
            for n, p, tf in zip(self.part_names(owner), self.rig.parts, self.transforms[t])
        ]

    def poses(self, owner: str, t: int) -> dict:
        return {
            n: {"location": tf.location, "rotation": tf.rotation.as_tuple(), "scale": tf.scale}
            for n, tf in zip(self.part_names(owner), self.transforms[t])
        }

    def frame_state(self, t: int) -> dict:
        """The animation state of frame ``t`` (gt frames.jsonl): gait phase, feet, wheels and
        every part's transform (what the server was sent)."""
        out: dict = {"kind": self.rig.kind}
        if self.gait is not None:
            out["gait"] = self.gait.name
            out["phase"] = float(self.phase[t] if self.phase is not None else self.gait.phase(t / self.fps))
            out["stance"] = [bool(s) for s in self.stance[t]]
        if self.rig.wheels:
            out["wheel_spin_deg"] = [float(v) for v in self.wheel_spin_deg[t]]
            out["wheel_steer_deg"] = [float(v) for v in self.wheel_steer_deg[t]]
        out["parts"] = {
            p.name: {
                "asset": PRIMITIVE[p.shape],
                "location": list(tf.location),
                "rotation": list(tf.rotation.as_tuple()),
                "scale": list(tf.scale),
                "tint": list(p.color),
            }
            for p, tf in zip(self.rig.parts, self.transforms[t])
        }
        return out

    def to_record(self) -> dict:
        return {"rig": self.rig.to_record(), "gait": None if self.gait is None else self.gait.to_dict()}


def pose_rig(
    rig: Rig, location: np.ndarray, yaw: np.ndarray, fps: float, ground, phase0: float = 0.0, gait: ga.Gait | None = None
) -> PosedRig:
    """Pose ``rig`` along a root track (``location`` (T,3) base point, ``yaw`` (T,) deg) at
    ``fps``; ``ground(x, y)`` gives the terrain height. ``gait`` overrides the chosen gait (a
    record's)."""
    location, yaw = np.asarray(location, float), np.asarray(yaw, float)
    T = len(yaw)
    path = ga.RootPath.from_track(location, yaw, fps)
    times = path.times
    F = len(rig.legs)
    feet_local = np.zeros((T, F, 3))
    stance, sid = np.ones((T, F), bool), np.zeros((T, F), np.int64)
    phase = None
    if F:
        neutral = rig.neutral_feet()
        if gait is None:
            gait = ga.choose_gait(F, ga.effective_speed(path, neutral), rig.leg_cm, rig.reach_cm(), phase0)
        pm = ga.PhaseMap(path, gait, neutral)
        phase = pm.phase(times)
        feet_local, stance, sid = ga.foot_targets(path, gait, neutral, times, ground, pm)
    spin, steer = _wheels(rig, path, phase0)
    transforms, feet_world = [], np.zeros((T, F, 3))
    for t in range(T):
        Ry = yaw_matrix(yaw[t])
        drop = crouch_cm(rig, feet_local[t])
        feet_local[t, :, 2] += drop  # the targets stay where they are in the world
        o_t = location[t] - np.array([0.0, 0.0, drop])
        to_w = lambda p, o=o_t, R=Ry: o + R @ np.asarray(p, float)  # noqa: E731
        fwd, up = Ry[:, 0], np.array([0.0, 0.0, 1.0])
        knees, feet = [], []
        for i, lg in enumerate(rig.legs):
            knee, foot = two_bone(np.asarray(lg.hip), feet_local[t, i], lg.upper, lg.lower, np.array([lg.bend, 0, 0]))
            knees.append(to_w(knee))
            feet.append(to_w(foot))
            feet_world[t, i] = feet[-1]
        hands = _arms(rig, feet_local[t]) if rig.arms else []
        row = []
        for p in rig.parts:
            if p.kind == "body":
                row.append(placed(p.shape, p.size, to_w(p.centre), Ry))
            elif p.kind == "limb":
                row.append(_limb(p, to_w(p.a), to_w(p.b), fwd, up))
            elif p.kind in ("upper", "lower"):
                lg = rig.legs[p.index]
                a, b = (to_w(lg.hip), knees[p.index]) if p.kind == "upper" else (knees[p.index], feet[p.index])
                row.append(_limb(p, a, b, fwd, up))
            elif p.kind in ("arm_upper", "arm_lower"):
                sh, el, hand = hands[p.index]
                a, b = (to_w(sh), to_w(el)) if p.kind == "arm_upper" else (to_w(el), to_w(hand))
                row.append(_limb(p, a, b, fwd, up))
            elif p.kind == "foot":
                row.append(
                    placed(p.shape, p.size, feet[p.index] + Ry @ np.asarray(p.centre) + np.array([0, 0, p.size[2] / 2.0]), Ry)
                )
            elif p.kind == "wheel":
                wh = rig.wheels[p.index]
                R = Ry @ yaw_matrix(steer[t, p.index]) @ Rotator(-(spin[t, p.index] + p.angle), 0.0, 0.0).matrix()
                row.append(placed(p.shape, p.size, to_w(wh.centre), R))
        transforms.append(row)
    return PosedRig(rig, gait, transforms, feet_world, stance, sid, spin, steer, float(fps), phase)


CROUCH_REACH = 0.995  # a leg straightens to at most this share of its length before the body lowers


def crouch_cm(rig: Rig, feet_local: np.ndarray) -> float:
    """How far (cm) the body lowers so that every leg reaches its target ``feet_local`` (F,3)
    (body frame). On a slope a foot planted downhill is further below its hip than on flat
    ground; instead of the foot stopping short (sliding and hovering while planted) the body
    bends its legs, as an animal on a slope does. 0 on flat ground."""
    drop = 0.0
    for lg, target in zip(rig.legs, feet_local):
        reach = CROUCH_REACH * (lg.upper + lg.lower)
        d = np.asarray(target, float) - np.asarray(lg.hip, float)
        horiz2 = float(d[0] ** 2 + d[1] ** 2)
        if horiz2 < reach**2:
            drop = max(drop, -float(d[2]) - math.sqrt(reach**2 - horiz2))
    return max(drop, 0.0)


def _limb(p: Part, a: np.ndarray, b: np.ndarray, fwd: np.ndarray, up: np.ndarray) -> Transform:
    """An ellipsoid from ``a`` to ``b`` (10 % longer, so joints overlap)."""
    d = a - b
    length = float(np.linalg.norm(d))
    R = axis_frame(d, fwd, up)
    return placed(p.shape, (p.size[0], p.size[1], 1.1 * max(length, 1e-3)), (a + b) / 2.0, R)


def _arms(rig: Rig, feet_local: np.ndarray) -> list:
    """Shoulder, elbow, hand per arm: each swings against the leg on its own side."""
    out = []
    for i, (sh, upper, lower) in enumerate(rig.arms):
        leg = rig.legs[i]
        swing = -0.9 * (feet_local[i, 0] - leg.hip[0]) / max(leg.upper + leg.lower, 1e-6)  # rad
        sh = np.asarray(sh, float)
        el = sh + upper * np.array([math.sin(swing), 0.0, -math.cos(swing)])
        bend = swing + 0.25 + max(0.0, swing) * 0.6
        hand = el + lower * np.array([math.sin(bend), 0.0, -math.cos(bend)])
        out.append((sh, el, hand))
    return out


def _wheels(rig: Rig, path: ga.RootPath, phase0: float) -> tuple[np.ndarray, np.ndarray]:
    """(T,W) spin (deg, forward roll positive) and steer (deg) of every wheel.

    Spin += the distance the wheel's contact point moved along the wheel's heading / radius.
    Steer (front wheels): Ackermann geometry about the rear axle, ``atan(wheelbase * k /
    (1 - y * k))`` with ``k`` = yaw rate / speed the path's signed curvature and ``y`` the wheel's
    lateral offset (the inner wheel steers more; a single wheel on the centre line gets the
    bicycle model's ``atan(wheelbase * k)``). Almost no speed but turning (in place): the front
    wheels point along their contact point's motion. Clipped at ± MAX_STEER_DEG."""
    T, nw = len(path.times), len(rig.wheels)
    spin, steer = np.zeros((T, nw)), np.zeros((T, nw))
    if not nw:
        return spin, steer
    rear = [wh.centre[0] for wh in rig.wheels if not wh.steer]
    front = [wh.centre[0] for wh in rig.wheels if wh.steer]
    base = (float(np.mean(front)) - float(np.mean(rear))) if rear and front else 0.0
    if T > 1:
        vel = np.gradient(path.xyz[:, :2], path.times, axis=0)
        head = np.column_stack([np.cos(np.radians(path.yaw)), np.sin(np.radians(path.yaw))])
        speed = (vel * head).sum(1)  # signed: reversing < 0
        omega = np.radians(np.gradient(path.yaw, path.times))
    for w, wh in enumerate(rig.wheels):
        c = np.array([wh.centre[0], wh.centre[1], 0.0])
        pts = ga.to_world(path.xyz, path.yaw, np.repeat(c[None], T, 0))
        if wh.steer and T > 1:
            k = np.divide(omega, speed, out=np.zeros(T), where=np.abs(speed) > 1.0)
            ack = np.degrees(np.arctan2(base * k, np.maximum(1.0 - wh.centre[1] * k, 1e-6)))
            v = np.gradient(pts[:, :2], path.times, axis=0)  # turning in place: along the contact's motion
            ang = np.degrees(np.arctan2(v[:, 1], v[:, 0])) - path.yaw
            ang = (ang + 180.0) % 360.0 - 180.0
            ang = np.where(np.abs(ang) > 90.0, ang - np.sign(ang) * 180.0, ang)
            ang = np.where(np.linalg.norm(v, axis=1) > 1e-6, ang, 0.0)
            steer[:, w] = np.clip(np.where(np.abs(speed) > 1.0, ack, ang), -MAX_STEER_DEG, MAX_STEER_DEG)
        spin[0, w] = 360.0 * phase0
        for t in range(1, T):
            h = np.radians(path.yaw[t - 1 : t + 1].mean() + steer[t - 1 : t + 1, w].mean())
            dist = float((pts[t, :2] - pts[t - 1, :2]) @ np.array([math.cos(h), math.sin(h)]))
            spin[t, w] = spin[t - 1, w] + math.degrees(dist / wh.radius)
    return spin, steer


# --- measurements --------------------------------------------------------------------------------
def foot_points(posed: PosedRig) -> np.ndarray:
    """(T,F,3) world foot points read back from the posed foot parts' transforms (what the
    server is sent): a foot part's pivot is the foot point plus its body-frame offset."""
    feet = [(i, p) for i, p in enumerate(posed.rig.parts) if p.kind == "foot"]
    out = np.zeros((posed.n_frames, len(feet), 3))
    for t, row in enumerate(posed.transforms):
        for j, (i, p) in enumerate(feet):
            tf = row[i]
            out[t, p.index] = np.asarray(tf.location) - tf.rotation.matrix() @ np.asarray(p.centre, float)
    return out


def foot_sliding(posed: PosedRig) -> np.ndarray:
    """Horizontal drift (cm) of each planted foot over its stance, one value per (foot, step)
    seen in at least two frames: max distance of the foot point from its first planted position,
    measured on the posed foot parts (:func:`foot_points`)."""
    out = []
    pts = foot_points(posed)
    T, F = posed.stance.shape
    for f in range(F):
        for k in np.unique(posed.stance_id[:, f][posed.stance[:, f]]):
            frames = np.nonzero(posed.stance[:, f] & (posed.stance_id[:, f] == k))[0]
            if len(frames) >= 2:
                p = pts[frames, f, :2]
                out.append(float(np.linalg.norm(p - p[0], axis=1).max()))
    return np.array(out)


def mirror_transform(tf: Transform, origin: np.ndarray, plane_yaw: float) -> Transform:
    """A part's transform mirrored about the vertical plane through ``origin`` with heading
    ``plane_yaw`` (any rotation; valid for shapes symmetric about their local XZ plane, as both
    primitives are): R' = M R diag(1, -1, 1), location reflected, scale kept."""
    n = np.array([-math.sin(math.radians(plane_yaw)), math.cos(math.radians(plane_yaw)), 0.0])
    M = np.eye(3) - 2.0 * np.outer(n, n)
    loc = np.asarray(tf.location) - 2.0 * ((np.asarray(tf.location) - origin) @ n) * n
    R = M @ tf.rotation.matrix() @ np.diag([1.0, -1.0, 1.0])
    return Transform(tuple(float(v) for v in loc), rotator_from_matrix(R), tf.scale)


def union_count(counts: dict, names: list[str], alone: dict | None = None):
    """One PixelCount for a rig from its parts' counts: visible pixels add up (ids are
    exclusive); ``unoccluded`` is the rig's own coverage (``alone``: the parts' visible pixels
    with nothing else in the scene) and the box is the union of the parts' boxes."""
    vis = sum(int(counts[n].visible) for n in names)
    un = sum(int(alone[n].visible) for n in names) if alone is not None else sum(int(counts[n].unoccluded) for n in names)
    boxes = [counts[n].bbox for n in names if counts[n].bbox is not None]
    bbox = (
        None
        if not boxes
        else (min(b[0] for b in boxes), min(b[1] for b in boxes), max(b[2] for b in boxes), max(b[3] for b in boxes))
    )
    return PixelCount(vis, max(un, vis), bbox)
