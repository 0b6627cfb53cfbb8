"""CPU cost of background clutter placement, per environment, and a fingerprint of what it placed.

Run: ``python benchmarks/placement.py [--seeds 30] [--reps 3] [--env city forest] [--group]``

Per environment: ``Environment.clutter`` for seeds 0..N-1 with the real asset library (keep-out
discs drawn from each seed like the labelled objects of a scene), CPU milliseconds per scene (the
best of ``--reps`` passes; the machine is shared, so compare runs back to back), objects per scene,
and a fingerprint: a hash of every actor (asset, location, yaw, scale, name, colour) and of the
generator's state afterwards. A change to placement that is meant to be a pure speed-up must keep
every fingerprint (scenarios/world/placement.py: the same draws and the same decisions).

``--group``: the same for the generator's path, ``scenarios.sparrta.scene.build_group`` (source,
target, then the clutter around them, with the sparrta ShapeCache), per scene group.
"""

from __future__ import annotations

import argparse
import hashlib
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

from sceneforge.scenarios.world.environments import list_envs, load_env  # noqa: E402
from sceneforge.scenarios.sampling.shapes import CachedLibrary, ShapeCache  # noqa: E402
from sceneforge.scenarios.sparrta.scene import Setting, build_group  # noqa: E402


def _keep_out(rng: np.random.Generator) -> list[tuple[float, float, float]]:
    """Two labelled objects near the centre and a camera a little farther out."""
    return [
        (float(rng.normal(0, 500)), float(rng.normal(0, 500)), 400.0),
        (float(rng.normal(0, 500)), float(rng.normal(0, 500)), 450.0),
        (float(rng.normal(0, 2500)), float(rng.normal(0, 2500)), 50.0),
    ]


def clutter_pass(env, lib, seeds: int):
    out = []
    t0 = time.process_time()
    for seed in range(seeds):
        rng = np.random.default_rng(seed)
        out.append((env.clutter(rng, _keep_out(rng), library=lib), rng))
    dt = time.process_time() - t0
    h, count = hashlib.sha256(), 0
    for actors, rng in out:
        count += len(actors)
        for a in actors:
            h.update(repr((a.name, a.asset_id, a.transform, a.color)).encode())
        h.update(repr(rng.random()).encode())
    return dt, count, h.hexdigest()[:16]


def group_pass(env, shapes, seeds: int):
    s, t = env.sampling, env.triples[0]
    st = Setting(
        float(s.sigma_cm),
        float(s.max_pair_dist_cm),
        float(s.cam_xy_range_cm),
        tuple(float(v) for v in s.cam_height_range_cm),
        float(s.fov_deg),
        224,
        15.0,
        0.8,
        12.0,
        200,
    )
    lib = shapes.lib

    def clutter(r, keep):
        return env.clutter(r, keep, library=lib)

    out = []
    t0 = time.process_time()
    for seed in range(seeds):
        rng = np.random.default_rng(seed)
        out.append((build_group(rng, (env.name, seed), t.source_class, t.target_class, shapes, st, env.ground, clutter), rng))
    dt = time.process_time() - t0
    h, count = hashlib.sha256(), 0
    for g, rng in out:
        count += len(g.actors)
        h.update(
            repr(
                (g.actors, [(p.name, p.x, p.y, p.z, p.yaw, p.shape.footprint.tobytes(), p.shape.height) for p in g.clutter])
            ).encode()
        )
        h.update(repr(rng.random()).encode())
    return dt, count, h.hexdigest()[:16]


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=30)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--env", nargs="*", default=None, help="environments (default: all shipped)")
    ap.add_argument("--group", action="store_true", help="time build_group (the generator's path) instead")
    args = ap.parse_args(argv)
    every = hashlib.sha256()
    for name in args.env or list_envs():
        env = load_env(name)
        shapes = ShapeCache(env.library, lambda cls, env=env: env.variants(cls, env.library))
        lib = shapes.lib if args.group else CachedLibrary(env.library)
        if args.group:

            def run(env=env, shapes=shapes):
                return group_pass(env, shapes, args.seeds)
        else:

            def run(env=env, lib=lib):
                return clutter_pass(env, lib, args.seeds)

        run()  # a first pass loads every asset the seeds use (meshes, footprints) before timing
        best, count, fp = None, 0, ""
        for _ in range(args.reps):
            dt, count, fp = run()
            best = dt if best is None else min(best, dt)
        every.update(fp.encode())
        what = "group" if args.group else "scene"
        print(
            f"{name:12s} {1000 * best / args.seeds:7.2f} ms/{what}  actors/{what} {count / args.seeds:6.1f}  fingerprint {fp}",
            flush=True,
        )
    print(f"all          fingerprint {every.hexdigest()[:16]}")


if __name__ == "__main__":
    main()
