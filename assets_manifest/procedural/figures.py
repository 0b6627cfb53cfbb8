"""Human figures: capsule limbs, a few poses, clothing colours and heights as parameters.

The allocentric viewpoint in SpaRRTa is a human figure; several distinct figures (height, clothing,
pose) keep a probe from keying on one silhouette. The figure faces +X.
"""

from __future__ import annotations

from sceneforge.assets_manifest.procedural.registry import register
from sceneforge.assets_manifest.procedural.shapes import Builder
from sceneforge.core.errors import ConfigError
from sceneforge.core.meshes import RenderMesh

POSES = ("stand", "walk", "arms_out", "wave")


def _arm_ends(pose: str, side: int, sh, H: float):
    """Elbow and hand positions for one arm (side -1 left, +1 right)."""
    x, y, z = sh
    if pose == "arms_out":
        return (x, y + side * 0.17 * H, z - 0.02 * H), (x, y + side * 0.33 * H, z - 0.03 * H)
    if pose == "wave" and side == 1:
        return (x, y + 0.12 * H, z + 0.06 * H), (x + 0.02 * H, y + 0.16 * H, z + 0.22 * H)
    if pose == "walk":
        swing = 0.08 * H * side
        return (x + swing * 0.5, y + side * 0.02 * H, z - 0.17 * H), (x + swing, y + side * 0.03 * H, z - 0.33 * H)
    return (x, y + side * 0.03 * H, z - 0.17 * H), (x + 0.02 * H, y + side * 0.035 * H, z - 0.34 * H)


@register("human")
def human(
    height_cm: float = 178.0,
    shirt=(40, 90, 160),
    pants=(45, 45, 60),
    skin=(224, 180, 150),
    hair=(60, 40, 25),
    pose: str = "stand",
    skirt: bool = False,
) -> RenderMesh:
    """A standing adult ~``height_cm`` tall: legs, torso, arms, neck, head and hair."""
    if pose not in POSES:
        raise ConfigError(f"human pose {pose!r} unknown; use one of {', '.join(POSES)}")
    H = height_cm
    b = Builder()
    hip_z, leg_r = 0.49 * H, 0.045 * H
    stride = 0.1 * H if pose == "walk" else 0.0
    for side, dx in ((-1, stride), (1, -stride)):
        b.capsule(leg_r, 0, pants, (dx, side * 0.06 * H, leg_r), (0, side * 0.055 * H, hip_z))
        b.box((0.13 * H, 0.06 * H, 0.035 * H), (35, 30, 30), at=(dx + 0.03 * H, side * 0.06 * H, 0.018 * H))
    if skirt:
        b.cone(0.13 * H, 0.22 * H, pants, at=(0, 0, hip_z - 0.1 * H), sections=10)
    b.capsule(0.1 * H, 0, shirt, (0, 0, hip_z + 0.02 * H), (0, 0, 0.74 * H), count=(10, 6))
    b.sphere(0.5, shirt, at=(0, 0, 0.76 * H), scale=(0.16 * H, 0.3 * H, 0.1 * H))
    for side in (-1, 1):
        sh = (0, side * 0.17 * H, 0.8 * H)
        elbow, hand = _arm_ends(pose, side, sh, H)
        b.capsule(0.032 * H, 0, shirt, sh, elbow)
        b.capsule(0.027 * H, 0, skin, elbow, hand)
    b.capsule(0.028 * H, 0, skin, (0, 0, 0.8 * H), (0, 0, 0.87 * H))
    b.sphere(0.5, skin, at=(0.01 * H, 0, 0.925 * H), scale=(0.12 * H, 0.1 * H, 0.13 * H), subdiv=2)
    b.sphere(0.5, hair, at=(-0.01 * H, 0, 0.955 * H), scale=(0.12 * H, 0.105 * H, 0.09 * H), subdiv=2)
    return b.mesh()
