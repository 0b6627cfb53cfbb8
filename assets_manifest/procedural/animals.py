"""Quadrupeds (bear, fox, husky, deer, camel), sculpted as one smooth skin, facing +X.

Each animal is drawn at its natural size in centimetres (a brown bear 200 cm long, a red fox
body 65 cm plus tail) from blended ellipsoids and tapered limbs (:mod:`.sculpt`), in a walking
pose (diagonal legs apart: a standing animal seen from the side shows two legs, not a table), and
painted with its species' markings: the husky's white face mask, belly and legs under a dark
saddle, the fox's white chest and tail tip and black stockings, the deer's pale rump. What made
the difference for a pretrained classifier (benchmarks/recognition.py, docs/assets.md): thick
tapering legs, a neck that widens into the shoulders, the species' head shape and markings.
"""

from __future__ import annotations

from sceneforge.assets_manifest.procedural.registry import register
from sceneforge.assets_manifest.procedural.sculpt import Sculpt
from sceneforge.assets_manifest.procedural.shapes import shade
from sceneforge.core.meshes import RenderMesh

DARK = (28, 24, 22)


def _scaled(s: Sculpt, natural_cm: float, length_cm: float, budget: int, voxels: int = 96) -> RenderMesh:
    """Mesh at natural size, then scale uniformly to ``length_cm`` (the manifest may rescale again)."""
    lo, hi = s._bounds()
    mesh = s.mesh(voxel_cm=float((hi - lo).max()) / voxels, budget=budget)
    k = float(length_cm) / natural_cm
    return RenderMesh(mesh.vertices * k, mesh.faces, mesh.colors)


@register("bear")
def bear(length_cm: float = 200.0, color=(118, 80, 48)) -> RenderMesh:
    """Brown bear: heavy body with a shoulder hump, low head, short thick legs, small round ears."""
    fur, muzzle, legs = tuple(color), shade(color, 1.45), shade(color, 0.55)
    s = Sculpt(blend_cm=14.0)
    s.ellipsoid((0, 0, 80), (60, 31, 34), fur)  # barrel
    s.ellipsoid((34, 0, 96), (30, 28, 28), fur)  # shoulder hump
    s.ellipsoid((-44, 0, 82), (32, 30, 33), fur)  # rump
    s.limb((58, 0, 92), (82, 0, 90), 24, 17, fur)  # neck, head carried low
    s.ellipsoid((94, 0, 92), (19, 20, 18.5), fur, blend=6.0)  # broad round skull, set off the neck
    s.limb((104, 0, 88), (128, 0, 80), 11, 7.5, muzzle, blend=6.0)  # long, paler muzzle
    s.ellipsoid((130.5, 0, 80.5), (3.5, 5, 3.5), DARK, paint=True)  # nose
    s.mirrored(lambda y: s.ellipsoid((87, y * 15, 110), (4, 7.5, 8), fur, blend=3.0))  # round ears
    s.mirrored(lambda y: s.ellipsoid((88.5, y * 15, 110), (2.5, 4.5, 5), DARK, paint=True))  # ear insides
    s.mirrored(lambda y: s.ellipsoid((106, y * 9.5, 96), (2.2, 2.2, 2.2), DARK, paint=True))  # eyes
    for x, y, fwd in ((40, -17, 14), (40, 17, -12), (-48, -18, -12), (-48, 18, 14)):  # walking pose
        if x < 0:  # hind: thigh, bent hock, foot
            s.chain([(x, y, 80), (x - 4, y, 44), (x + 0.6 * fwd, y, 22), (x + fwd, y, 8)], [17, 12, 10, 9], fur)
        else:
            s.chain([(x, y, 78), (x + 0.4 * fwd, y, 38), (x + fwd, y, 8)], [14, 11, 9.5], fur)
        s.ellipsoid((x + fwd + 7, y, 6), (14, 9.5, 6.5), fur)  # paw
        s.limb((x, y, 50), (x + fwd, y, 0), 16, 16, legs, paint=True)  # darker legs
        s.ellipsoid((x + fwd + 18, y, 4), (4, 9, 4), DARK, paint=True)  # claws
    s.ellipsoid((-76, 0, 92), (7, 7, 7), fur)  # stub tail
    return _scaled(s, 200.0, length_cm, 4000)


@register("fox")
def fox(length_cm: float = 100.0, color=(205, 96, 32)) -> RenderMesh:
    """Red fox: slim body, long pointed muzzle, big pointed ears, thin black legs, bushy white-tipped tail."""
    fur, white = tuple(color), (238, 232, 222)
    s = Sculpt(blend_cm=4.0)
    s.ellipsoid((0, 0, 38), (28, 10.5, 11.5), fur)  # body
    s.ellipsoid((18, 0, 38), (14, 10.5, 12.5), fur)  # chest
    s.limb((24, 0, 42), (36, 0, 52), 8, 6, fur)  # neck
    s.ellipsoid((40, 0, 54), (8.5, 7.5, 6.5), fur)  # skull
    s.limb((44, 0, 52), (58, 0, 49), 4.5, 1.6, fur)  # long pointed muzzle
    s.ellipsoid((58.5, 0, 49), (1.8, 1.8, 1.8), DARK)  # nose
    s.mirrored(lambda y: s.limb((38, y * 4.5, 58), (36, y * 6.5, 70), 3.6, 0.4, fur))  # big pointed ears
    s.mirrored(lambda y: s.limb((37.5, y * 5.2, 58), (35.5, y * 7.2, 70), 3.0, 0.3, DARK, paint=True))
    for x, y, fwd in ((22, -5, 6), (22, 5, -5), (-22, -5.5, -5), (-22, 5.5, 6)):
        upper = 5.5 if x < 0 else 4.0
        s.chain([(x, y, 34), (x + 0.4 * fwd, y, 16), (x + fwd, y, 2.2)], [upper, 2.4, 2.0], fur)
        s.limb((x, y, 18), (x + fwd, y, 0), 3.2, 3.2, DARK, paint=True)  # black stockings
        s.ellipsoid((x + fwd + 2, y, 1.6), (3.2, 2.2, 1.6), DARK)  # paw
    s.chain([(-26, 0, 40), (-42, 0, 33), (-62, 0, 24), (-76, 0, 18)], [4.0, 7.5, 8.0, 4.5], fur)  # brush
    s.ellipsoid((-74, 0, 18.5), (7, 6, 5), white, paint=True)  # white tail tip
    s.ellipsoid((24, 0, 36), (10, 8.5, 8), white, paint=True)  # white chest
    s.ellipsoid((48, 0, 48.5), (10, 5, 3.2), white, paint=True)  # white lower jaw and cheeks
    s.mirrored(lambda y: s.ellipsoid((46, y * 4.5, 55.5), (1.3, 1.3, 1.3), DARK, paint=True))  # eyes
    return _scaled(s, 136.0, length_cm, 3000)


@register("dog")
def dog(length_cm: float = 110.0, color=(78, 82, 90), belly=(236, 236, 234)) -> RenderMesh:
    """Siberian husky: dark saddle and cap over a white face mask, chest, belly and legs; erect
    triangular ears; thick tail curled over the back."""
    coat, white = tuple(color), tuple(belly)
    s = Sculpt(blend_cm=6.0)
    s.ellipsoid((0, 0, 52), (30, 15, 16.5), coat)  # body
    s.ellipsoid((22, 0, 53), (17, 15.5, 19), coat)  # deep chest
    s.limb((28, 0, 62), (40, 0, 72), 13, 10, coat)  # thick ruffed neck
    s.ellipsoid((44, 0, 76), (11, 10.5, 9.5), coat)  # broad skull
    s.limb((50, 0, 73), (61, 0, 70.5), 6.0, 3.8, white, blend=3.0)  # medium muzzle
    s.ellipsoid((61.5, 0, 71), (2.2, 2.4, 2.0), DARK)  # nose
    s.mirrored(lambda y: s.limb((41, y * 6, 83), (40, y * 7.5, 94), 4.8, 0.6, coat, blend=2.0))  # erect ears
    s.mirrored(lambda y: s.limb((41.8, y * 6, 84), (40.8, y * 7.3, 92), 3.0, 0.4, white, paint=True))
    for x, y, fwd in ((24, -7, 7), (24, 7, -6), (-24, -8, -6), (-24, 8, 7)):
        if x < 0:  # hind: thigh, hock, foot
            s.chain([(x, y, 50), (x - 5, y, 26), (x - 2 + fwd, y, 10), (x + fwd, y, 2.5)], [9, 5, 3.6, 3.2], coat)
        else:
            s.chain([(x, y, 46), (x + 0.4 * fwd, y, 22), (x + fwd, y, 2.5)], [6, 3.8, 3.2], coat)
        s.ellipsoid((x + fwd + 2.5, y, 2.2), (4.2, 3.2, 2.2), white)  # paw
        s.limb((x, y, 30), (x + fwd, y, 0), 5.5, 5.5, white, paint=True)  # white legs
    s.chain([(-30, 0, 60), (-40, 0, 68), (-36, 0, 77), (-24, 0, 74)], [6, 7.5, 7.5, 5.5], coat)  # tail curled on the back
    s.ellipsoid((4, 0, 40), (34, 12, 8), white, paint=True)  # belly
    s.ellipsoid((26, 0, 44), (14, 12, 10), white, paint=True)  # chest
    s.ellipsoid((50, 0, 72), (14, 12, 5.5), white, paint=True)  # lower face and cheeks: the mask
    s.ellipsoid((55, 0, 76), (6, 3.5, 3), white, paint=True)  # white blaze between the eyes
    s.mirrored(lambda y: s.ellipsoid((52, y * 5.5, 77.5), (3.2, 2.6, 2.0), white, paint=True))  # brows
    s.mirrored(lambda y: s.ellipsoid((52.5, y * 5.2, 76), (1.4, 1.4, 1.4), DARK, paint=True))  # eyes
    s.ellipsoid((-26, 0, 74.5), (8, 7, 3.5), white, paint=True)  # tail underside
    return _scaled(s, 140.0, length_cm, 3000)


@register("deer")
def deer(length_cm: float = 170.0, color=(150, 100, 60), antlers: bool = True) -> RenderMesh:
    """Red/white-tailed deer: long slender legs, deep chest, upright neck, big ears, pale rump and
    throat, branched antlers (stag) or none (doe)."""
    coat, pale = tuple(color), (222, 204, 172)
    s = Sculpt(blend_cm=8.0)
    s.ellipsoid((0, 0, 100), (48, 19, 24), coat)  # body
    s.ellipsoid((32, 0, 100), (22, 18, 27), coat)  # chest
    s.ellipsoid((-38, 0, 104), (22, 19, 23), coat)  # rump
    s.limb((42, 0, 112), (62, 0, 146), 13, 8, coat)  # neck
    s.ellipsoid((66, 0, 151), (12, 7.5, 8.5), coat)  # skull
    s.limb((70, 0, 148), (86, 0, 138), 6.5, 3.6, shade(coat, 0.9))  # muzzle
    s.ellipsoid((86.5, 0, 138.5), (2.6, 2.8, 2.4), DARK)  # nose
    s.mirrored(lambda y: s.limb((62, y * 6, 157), (57, y * 17, 166), 4.5, 2.0, coat))  # ears
    for x, y, fwd in ((34, -9, 9), (34, 9, -8), (-40, -10, -8), (-40, 10, 9)):
        if x < 0:
            s.chain([(x, y, 100), (x - 8, y, 58), (x - 3 + fwd, y, 34), (x + fwd, y, 3)], [12, 5, 3.2, 2.6], coat)
        else:
            s.chain([(x, y, 92), (x + 0.3 * fwd, y, 52), (x + 0.7 * fwd, y, 30), (x + fwd, y, 3)], [8, 4, 3, 2.6], coat)
        s.ellipsoid((x + fwd + 1.5, y, 2.5), (3.5, 2.6, 2.8), DARK)  # hoof
    s.limb((-60, 0, 110), (-66, 0, 98), 4.5, 3.5, coat)  # tail
    s.ellipsoid((-62, 0, 100), (8, 13, 14), pale, paint=True)  # pale rump patch
    s.ellipsoid((6, 0, 80), (34, 15, 7), pale, paint=True)  # belly
    s.ellipsoid((60, 0, 136), (8, 8, 6), pale, paint=True)  # throat
    s.mirrored(lambda y: s.ellipsoid((73, y * 5.6, 153), (1.8, 1.8, 1.8), DARK, paint=True))  # eyes
    if antlers:
        horn = (205, 188, 160)
        for y in (-1.0, 1.0):
            base = (62, y * 4, 160)
            s.chain([base, (58, y * 14, 178), (50, y * 24, 198), (46, y * 28, 218)], [2.4, 2.0, 1.6, 1.0], horn)
            s.limb((59, y * 12, 174), (72, y * 15, 184), 1.6, 0.7, horn)  # brow tine
            s.limb((52, y * 22, 194), (62, y * 26, 208), 1.4, 0.6, horn)  # second tine
            s.limb((48, y * 26, 208), (40, y * 36, 220), 1.2, 0.5, horn)  # crown tine
    return _scaled(s, 160.0, length_cm, 4000)


@register("camel")
def camel(length_cm: float = 300.0, color=(194, 154, 104), humps: int = 1) -> RenderMesh:
    """Dromedary (``humps: 2`` for a Bactrian): long legs with knobbly knees, a tall hump, the
    S-curved neck that dips then rises, a long head with a drooping lip."""
    coat = tuple(color)
    s = Sculpt(blend_cm=12.0)
    s.ellipsoid((0, 0, 148), (58, 27, 30), coat)  # body
    s.ellipsoid((36, 0, 146), (26, 25, 32), coat)  # chest
    if humps == 1:
        s.ellipsoid((-2, 0, 170), (36, 20, 40), coat)  # tall hump
    else:  # two humps with a saddle between them (a small fillet keeps the dip)
        for x in (26.0, -26.0):
            s.ellipsoid((x, 0, 172), (19, 18, 30), coat, blend=5.0)
    s.chain([(52, 0, 150), (80, 0, 136), (98, 0, 150), (104, 0, 182)], [17, 12, 10, 9], coat)  # S neck
    s.ellipsoid((108, 0, 190), (15, 9.5, 10), coat)  # skull
    s.limb((112, 0, 188), (132, 0, 178), 8, 6.5, shade(coat, 0.95))  # long muzzle
    s.ellipsoid((133, 0, 175), (5, 6, 3.5), shade(coat, 0.8))  # drooping lip
    s.mirrored(lambda y: s.ellipsoid((100, y * 8, 200), (3, 3, 5), coat))  # small ears
    s.mirrored(lambda y: s.ellipsoid((114, y * 8.2, 194), (2.0, 2.0, 2.0), DARK, paint=True))  # eyes
    for x, y, fwd in ((42, -13, 12), (42, 13, -10), (-40, -14, -10), (-40, 14, 12)):
        if x < 0:
            s.chain([(x, y, 146), (x - 12, y, 98), (x - 4 + 0.5 * fwd, y, 60), (x + fwd, y, 5)], [18, 7.5, 5.5, 4.5], coat)
        else:
            s.chain([(x, y, 136), (x + 0.4 * fwd, y, 80), (x + 0.7 * fwd, y, 60), (x + fwd, y, 5)], [10, 6.5, 5.5, 4.5], coat)
            s.ellipsoid((x + 0.4 * fwd, y, 80), (7, 7, 8), coat)  # knee
        s.ellipsoid((x + fwd + 3, y, 3.5), (10, 7.5, 3.5), shade(coat, 0.75))  # broad pad
    s.limb((-56, 0, 150), (-64, 0, 106), 3.5, 2.0, coat)  # thin tail
    s.ellipsoid((-64, 0, 104), (3.5, 3.5, 6), shade(coat, 0.6))  # tuft
    return _scaled(s, 270.0, length_cm, 4000)
