"""Contact sheet of the five environments (docs/img/envs_after.png), reproducibly.

Run: ``python benchmarks/env_sheet.py [--out docs/img/envs_after.png] [--size 320] [--seed 1]``

One column per environment, the preview scene of ``sceneforge envs preview`` (the first triple's
objects at the centre plus the environment's clutter, drawn with ``--seed``) in the
environment's own world (no per-sample randomisation): top row from 3 m up and 16 m away (what
``envs preview`` shows), bottom row from 9 m up and 24 m away looking north (+Y), the view that
shows the most of each environment's background (the city's street; for the bridge, 7 m up
looking north-east at the bridge and its river). Uses
the default asset library: the real Sweet Home 3D models once ``sceneforge demo`` (or ``assets
build``) has fetched them, else the procedural pack.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from look_sheet import _label  # noqa: E402  (one caption style for every sheet)

ENVS = ("desert", "forest", "winter_town", "bridge", "city")
# bottom row: (camera x, y), height above the ground, aim (cm); the bridge stands north-east
OVERVIEW = {"bridge": ((-1200.0, -1800.0), 700.0, (1500.0, 2500.0, 100.0))}
DEFAULT_OVERVIEW = ((0.0, -2400.0), 900.0, (0.0, 0.0, 100.0))


def env_views(name: str, size: int, seed: int) -> list[np.ndarray]:
    from sceneforge.engine.server.gl.backend import GLBackend
    from sceneforge.engine.world import Camera, look_at_rotation
    from sceneforge.scenarios.world.environments import load_env
    from sceneforge.commands.envs import preview_scene

    env = load_env(name)
    scene = preview_scene(env, seed=seed, views=4)
    g = env.ground
    a = math.radians(-40.0)  # the first azimuth of `envs preview`
    eyes = [((1600 * math.cos(a), 1600 * math.sin(a)), 300.0, (0.0, 0.0, 80.0)), OVERVIEW.get(name, DEFAULT_OVERVIEW)]
    backend = GLBackend(env.library.mesh)
    try:
        out = []
        for (x, y), up, target in eyes:
            eye = (x, y, float(g.height(x, y)) + up)
            cam = Camera(eye, look_at_rotation(eye, target), env.sampling.fov_deg, size, size)
            out.append(backend.render(scene, cam, ("lit",))["lit"])
        return out
    finally:
        backend.close()


def main(argv: list[str] | None = None) -> None:
    from PIL import Image

    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", type=Path, default=Path("docs/img/envs_after.png"))
    p.add_argument("--size", type=int, default=320)
    p.add_argument("--seed", type=int, default=1)
    args = p.parse_args(argv)
    cols = []
    for name in ENVS:
        top, bottom = env_views(name, args.size, args.seed)
        cols.append(np.concatenate([_label(top, name.replace("_", " ")), bottom], axis=0))
    sheet = np.concatenate(cols, axis=1)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(sheet).save(args.out, optimize=True)
    print(f"wrote {args.out} ({sheet.shape[1]}x{sheet.shape[0]})")


if __name__ == "__main__":
    main()
