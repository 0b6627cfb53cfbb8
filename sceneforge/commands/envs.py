"""``sceneforge envs list|preview``: the environments and a few renders of each.

sceneforge envs list
sceneforge envs preview desert --out previews/      # or a path to your own env YAML
"""

from __future__ import annotations

import logging
import math

from sceneforge.commands.assets import save_png
from sceneforge.commands.common import out_flag
from sceneforge.core.errors import ConfigError
from sceneforge.engine.world import Actor, Camera, Rotator, Scene, Transform, instance_color, look_at_rotation

log = logging.getLogger(__name__)


def register(subparsers) -> None:
    p = subparsers.add_parser("envs", help="environments: list, preview")
    sub = p.add_subparsers(dest="envs_cmd", metavar="ACTION")
    sub.required = True
    ls = sub.add_parser("list", help="shipped environments with triples and clutter")
    ls.set_defaults(func=run_list)
    pv = sub.add_parser("preview", help="render a few views of an environment (PNG)")
    pv.add_argument("env", help="shipped name (desert, forest, ...) or path to a YAML file")
    pv.add_argument(
        "--out", default="env_preview", help="output directory (default ./env_preview: ENV_0.png ... ENV_<views-1>.png)"
    )
    pv.add_argument("--views", type=int, default=4, help="number of camera azimuths")
    pv.add_argument("--size", type=int, default=256, help="image width and height in pixels")
    pv.add_argument("--seed", type=int, default=0, help="clutter seed")
    pv.add_argument("--triple", type=int, default=0, help="which object triple to show (index)")
    pv.add_argument("--procedural", action="store_true", help="use only the procedural asset pack")
    pv.add_argument("--distance", type=float, default=1600.0, help="camera distance from the centre, cm")
    pv.set_defaults(func=run_preview)


def run_list(args) -> int:
    from sceneforge.scenarios.world.environments import list_envs, load_env  # pydantic: not at parser build

    for name in list_envs():
        env = load_env(name)
        triples = ", ".join(f"{t.source_class}/{t.target_class}" for t in env.triples)
        n = sum(_mean_count(g.count) for g in env.spec.clutter) + len(env.spec.landmarks)
        print(f"{name:12} clutter≈{n:4.0f}  triples: {triples}  — {env.spec.description}")
    return 0


def _mean_count(count) -> float:
    return float(count) if isinstance(count, int) else (count[0] + count[1]) / 2


def run_preview(args) -> int:
    from sceneforge.scenarios.world.environments import load_env  # pydantic: not at parser build

    out = out_flag(args.out)
    library = None
    if args.procedural:
        from sceneforge.assets_manifest import AssetLibrary  # trimesh: not at parser build

        library = AssetLibrary.procedural()
    env = load_env(args.env, library=library)
    if not 0 <= args.triple < len(env.triples):
        raise ConfigError(f"--triple must be in 0..{len(env.triples) - 1}, got {args.triple}")
    if not 1 <= args.views <= 16 or not 16 <= args.size <= 1024 or not 300 <= args.distance <= 10000:
        raise ConfigError("--views must be 1..16, --size 16..1024 and --distance 300..10000 (cm)")
    images = render_views(env, args.views, args.size, args.seed, args.triple, args.distance)
    for k, img in enumerate(images):
        save_png(img, out / f"{env.name}_{k}.png")
    print(f"wrote {len(images)} views to {out}/")
    return 0


def preview_scene(env, seed: int = 0, triple: int = 0, cam_dist: float = 1600.0, views: int = 4):
    """Scene with the triple's source, target and human near the centre plus the env's clutter."""
    import numpy as np

    env.library  # loaded here, before the scene is built, so its errors come first
    t = env.triples[triple]
    g = env.ground
    scene = Scene()
    env.apply_to(scene)  # sun, sky, ground, fog, look
    placed = [
        ("source", t.source_class, (-250.0, -200.0), 20.0),
        ("target", t.target_class, (300.0, 250.0), -60.0),
        ("viewpoint", t.viewpoint_class, (-100.0, 450.0), 200.0),
    ]
    for k, (name, cls, (x, y), yaw) in enumerate(placed):
        z = float(g.height(x, y))
        scene.add(Actor(name, env.variants(cls)[0], Transform((x, y, z), Rotator(0, yaw, 0)), instance_color(k)))
    keep = [(x, y, 500.0) for _, _, (x, y), _ in placed]
    keep += [(cam_dist * math.cos(a), cam_dist * math.sin(a), 300.0) for a in _azimuths(views)]
    for a in env.clutter(np.random.default_rng(seed), keep_out=keep):
        scene.add(a)
    return scene


def _azimuths(views: int) -> list[float]:
    return [math.radians(-40 + 360 * k / views) for k in range(views)]


def render_views(env, views: int = 4, size: int = 256, seed: int = 0, triple: int = 0, cam_dist: float = 1600.0):
    """Lit renders from ``views`` azimuths around the centre, 3 m up, aimed at the objects."""
    from sceneforge.engine.server.gl.backend import GLBackend  # moderngl: not at parser build

    scene = preview_scene(env, seed, triple, cam_dist, views)
    backend = GLBackend(env.library.mesh)
    out = []
    try:
        for a in _azimuths(views):
            x, y = cam_dist * math.cos(a), cam_dist * math.sin(a)
            eye = (x, y, float(env.ground.height(x, y)) + 300.0)
            cam = Camera(eye, look_at_rotation(eye, (0.0, 0.0, 80.0)), env.sampling.fov_deg, size, size)
            out.append(backend.render(scene, cam, ("lit",))["lit"])
    finally:
        backend.close()
    return out
