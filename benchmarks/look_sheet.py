"""Before/after pictures of the renderer's look (docs/img/look_*.png).

Run: ``python benchmarks/look_sheet.py [--out docs/img] [--size 224]``

``look_envs.png``: one row per environment (the preview scene of ``sceneforge envs preview``):
the old flat look, the PBR look with the environment's own world, and two per-sample looks drawn
from its ``randomize`` section (seeds 1 and 2). ``look_labels.png``: lit (PBR), lit (flat),
object_mask and depth of one view: the labels are the same pixels in both looks.
``look_hdris.png`` (only when the library has HDRIs, ``sceneforge assets build --sources looks``):
the bridge scene under the procedural sky and five HDRIs.
"""

from __future__ import annotations

import argparse
import math
import sys
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402


def _label(img: np.ndarray, text: str) -> np.ndarray:
    from PIL import Image, ImageDraw

    im = Image.fromarray(img)
    d = ImageDraw.Draw(im)
    d.rectangle([0, 0, 8 + 6 * len(text), 14], fill=(0, 0, 0))
    d.text((4, 2), text, fill=(255, 255, 255))
    return np.asarray(im)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=Path("docs/img"))
    ap.add_argument("--size", type=int, default=224)
    args = ap.parse_args(argv)
    from PIL import Image

    from sceneforge.engine.server.gl.backend import GLBackend
    from sceneforge.engine.world import Camera, Look, look_at_rotation
    from sceneforge.engine.world_dict import apply_world
    from sceneforge.scenarios.world.environments import list_envs, load_env
    from sceneforge.scenarios.world.look import draw_look, server_world
    from sceneforge.commands.envs import _azimuths, preview_scene

    rows, backend, labels_row = [], None, None
    for name in list_envs():
        env = load_env(name)
        scene = preview_scene(env, 0, 0, 1600.0, 4)
        backend = backend or GLBackend(env.library.mesh)
        a = _azimuths(4)[0]
        x, y = 1600 * math.cos(a), 1600 * math.sin(a)
        eye = (x, y, float(env.ground.height(x, y)) + 300.0)
        cam = Camera(eye, look_at_rotation(eye, (0.0, 0.0, 80.0)), env.sampling.fov_deg, args.size, args.size)
        tiles = []
        scene.look = Look("flat")
        tiles.append(_label(backend.render(scene, cam, ("lit",))["lit"], f"{name}: flat (before)"))
        env.apply_to(scene)
        out = backend.render(scene, cam, ("lit", "object_mask", "depth"))
        tiles.append(_label(out["lit"], f"{name}: pbr (env world)"))
        if labels_row is None:
            flat_scene = preview_scene(env, 0, 0, 1600.0, 4)
            flat_scene.look = Look("flat")
            flat = backend.render(flat_scene, cam, ("lit",))["lit"]
            d = out["depth"]
            fin = np.isfinite(d)
            logd = np.zeros_like(d)
            logd[fin] = np.log(d[fin])
            lo, hi = (logd[fin].min(), logd[fin].max()) if fin.any() else (0, 1)
            depth = np.where(fin, 255 * (1 - (logd - lo) / max(hi - lo, 1e-6)), 0).astype(np.uint8)
            labels_row = np.concatenate(
                [
                    _label(out["lit"], "lit: pbr"),
                    _label(flat, "lit: flat"),
                    _label(out["object_mask"], "object_mask (both)"),
                    _label(np.repeat(depth[..., None], 3, -1), "depth (both)"),
                ],
                1,
            )
        for seed in (1, 2):
            world = draw_look(env, np.random.default_rng(seed))
            apply_world(scene, server_world(world))
            w = world
            tiles.append(
                _label(
                    backend.render(scene, cam, ("lit",))["lit"],
                    f"drawn: sun {w['sun']['pitch']:.0f}/{w['sun']['yaw']:.0f} fog {w['fog']['density']:.1f} "
                    f"ev {w['look']['exposure_ev']:+.1f}",
                )
            )
        rows.append(np.concatenate(tiles, 1))
    hdris = _hdri_strip(args.size)
    backend.close()
    args.out.mkdir(parents=True, exist_ok=True)
    if hdris is not None:
        Image.fromarray(hdris).save(args.out / "look_hdris.png", optimize=True)
        print(f"wrote {args.out / 'look_hdris.png'}")
    Image.fromarray(np.concatenate(rows, 0)).save(args.out / "look_envs.png", optimize=True)
    Image.fromarray(labels_row).save(args.out / "look_labels.png", optimize=True)
    print(f"wrote {args.out / 'look_envs.png'} and {args.out / 'look_labels.png'}")


def _hdri_strip(size: int) -> np.ndarray | None:
    """The bridge scene under the procedural sky and five library HDRIs (None without HDRIs)."""
    from sceneforge.engine.server.catalog import AssetCatalog
    from sceneforge.engine.server.gl.backend import GLBackend
    from sceneforge.engine.world import Camera, look_at_rotation
    from sceneforge.scenarios.world.environments import load_env
    from sceneforge.commands.envs import _azimuths, preview_scene

    env = load_env("bridge")
    catalog = AssetCatalog(env.library)
    if not catalog.hdri_ids():
        return None
    backend = GLBackend(catalog.mesh)
    scene = preview_scene(env, 0, 0, 1600.0, 4)
    env.apply_to(scene)
    a = _azimuths(4)[0]
    x, y = 1600 * math.cos(a), 1600 * math.sin(a)
    eye = (x, y, float(env.ground.height(x, y)) + 300.0)
    cam = Camera(eye, look_at_rotation(eye, (0.0, 0.0, 80.0)), 70.0, size, size)
    tiles = []
    for h in [None, "pm_park", "pm_forest", "bd_city", "pm_sky", "bd_sunrise"]:
        scene.sky = replace(scene.sky, hdri=h)
        tiles.append(_label(backend.render(scene, cam, ("lit",))["lit"], f"sky: {h or 'procedural'}"))
    backend.close()
    return np.concatenate([np.concatenate(tiles[:3], 1), np.concatenate(tiles[3:], 1)], 0)


if __name__ == "__main__":
    main()
