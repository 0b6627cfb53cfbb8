"""Levels of detail of library assets as the renderer draws them (issue 19 decimation check).

Run: ``python benchmarks/lod_sheet.py [--density 0.5] [--assets sh3d_car_suv,sh3d_taxi,...] [--out lod.png]``

For each asset and level k = 1..3: the nearest distance at which ``gl/lod.py`` draws level k at
``--density`` triangles per pixel of the bounding disc (224², 60° field of view), a render of
level 0 and of level k (as a frame draws it: the decimated level or the impostor) from there (lit, one sun),
and two numbers: the silhouette IoU of the two
(``instance_id``) and the mean |lit difference| (0–255) over their union. ``--out``: a sheet
(rows: assets; columns: L0 | Lk for k = 1, 2, 3; crops of the disc, 160 px, nearest-neighbour).
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

ASSETS = (
    "sh3d_car_suv,sh3d_taxi,sh3d_truck,sh3d_car_van,sh3d_tree_pine,sh3d_tree_ficus,sh3d_tree_palm,"
    "sh3d_bush,sh3d_hedge,sh3d_human_m1,sh3d_bike,sh3d_vespa_b,sh3d_fence,proc_deer,sh3d_lamp_post,"
    "sh3d_bench_concrete"
)


def main(argv: list[str] | None = None) -> list[dict]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--density", type=float, default=None, help="triangles per px² (default: gl/lod.py's)")
    ap.add_argument("--assets", default=ASSETS)
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args(argv)
    from PIL import Image, ImageDraw

    from sceneforge.assets_manifest.library import AssetLibrary
    from sceneforge.assets_manifest.lod import simplified
    from sceneforge.engine.server.gl import lod as L
    from sceneforge.engine.server.gl.backend import GLBackend
    from sceneforge.engine.world import Actor, Camera, Ground, Look, Rotator, Scene, Sun, Transform, look_at_rotation

    density = args.density if args.density is not None else L.TRIANGLES_PER_PX2
    lib, meshes = AssetLibrary.default(), {}

    class Levels:  # the library's decimated levels of the sheet's meshes, as the server's catalogue gives them
        @staticmethod
        def mesh_lod(key, budget):
            return simplified(meshes[key], budget)

    be = GLBackend(lambda k: meshes[k], lod=False, content=Levels())
    size, fov = 224, 60.0
    focal = size / 2 / math.tan(math.radians(fov / 2))
    rows, out = [], []
    for a in args.assets.split(","):
        m = lib.mesh(a)
        n = m.n_triangles
        lo, hi = m.vertices.min(0), m.vertices.max(0)
        r, c = float(np.linalg.norm(hi - lo)) / 2, (lo + hi) / 2
        tiles, line = [], []
        for k in (1, 2, 3):
            r_px = math.sqrt(max(n / L.LOD_RATIO**k, L.MIN_TRIANGLES) / (density * math.pi))
            d = r * focal / r_px
            meshes[f"{a}@0"] = m
            level = be.level_mesh(f"{a}@0", k) or m  # what a frame draws at level k (maybe the impostor)
            eye = (-d * 0.94, -d * 0.34, c[2] + d * 0.12)
            cam = Camera(eye, look_at_rotation(eye, tuple(c)), fov, size, size)
            shots = []
            for key, mesh in ((f"{a}@0", m), (f"{a}@{k}", level)):
                meshes[key] = mesh
                scene = Scene(ground=Ground(), sun=Sun(), look=Look())
                scene.add(Actor("x", key, Transform((0.0, 0.0, 0.0), Rotator(0.0, 30.0, 0.0), (1, 1, 1)), color=(255, 0, 0)))
                shots.append(be.render(scene, cam, ("lit", "instance_id")))
            m0, m1 = shots[0]["instance_id"] != 0, shots[1]["instance_id"] != 0
            union = m0 | m1
            iou = float((m0 & m1).sum() / max(union.sum(), 1))
            dlit = (
                float(np.abs(shots[0]["lit"].astype(float) - shots[1]["lit"].astype(float))[union].mean()) if union.any() else 0.0
            )
            out.append(
                {
                    "asset": a,
                    "level": k,
                    "triangles": level.n_triangles,
                    "of": n,
                    "distance_m": d / 100,
                    "pixels": int(m0.sum()),
                    "iou": iou,
                    "dlit": dlit,
                }
            )
            line.append(f"L{k} {level.n_triangles:5d}/{n} {d / 100:4.0f} m {int(m0.sum()):4d} px iou {iou:.2f} dlit {dlit:4.1f}")
            h = int(max(8, min(size // 2, r_px * 1.2)))
            for j, s in enumerate(shots):
                im = Image.fromarray(s["lit"][size // 2 - h : size // 2 + h, size // 2 - h : size // 2 + h])
                im = im.resize((160, 160), Image.NEAREST)
                dr = ImageDraw.Draw(im)
                dr.rectangle([0, 0, 159, 12], fill=(0, 0, 0))
                dr.text(
                    (2, 1), f"{a[-14:]} L{k if j else 0} {(level if j else m).n_triangles}t {d / 100:.0f}m", fill=(255, 255, 255)
                )
                tiles.append(np.asarray(im))
        rows.append(np.concatenate(tiles, 1))
        print(f"{a:22s} " + " | ".join(line), flush=True)
    be.close()
    if args.out:
        Image.fromarray(np.concatenate(rows, 0)).save(args.out)
        print("wrote", args.out)
    return out


if __name__ == "__main__":
    main()
