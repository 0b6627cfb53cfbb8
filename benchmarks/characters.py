"""Skinned characters (issue 49): foot slide per class, media, and the cost per frame.

    python benchmarks/characters.py feet  [--cache-dir DIR] [--classes C ...]  # stride + planted-foot slide per class
    python benchmarks/characters.py media [--cache-dir DIR] [--out docs/img]   # contact sheet + walk/run mp4 per class
    python benchmarks/characters.py cost  [--cache-dir DIR] [--frames 48]      # ms per frame: GPU/CPU-skinned character vs rigid
    python benchmarks/characters.py pipeline [--cache-dir DIR] [--clips 8]     # CPU-s per video clip, with vs without
    python benchmarks/characters.py recognition [--cache-dir DIR] [--clips 12] [--classes ...]  # ImageNet top-1/5

Needs the character pack (``sceneforge assets install characters``; ``--cache-dir`` or
``$SCENEFORGE_CACHE``). ``feet`` runs ``assets_manifest.characters.motion.analyse`` on the first
variant of every class (walk and run): the root travel derived from the clip's own planted feet,
the stride (cm per cycle) and natural speed, and the slide of each planted step measured on the
skinned foot vertices at the server's 256 pose steps, without and with the foot lock
(``characters/ik.py``: two-bone IK holds each planted foot); it writes
``benchmarks/results/character_feet.json`` and prints the table docs/videos.md quotes.
``media`` renders each class walking and running past a tracking camera with the embedded GL
renderer (root motion from the clip: the figure moves by ``root_cm(phase)``) into
``characters_sheet.png`` and ``character_<class>.mp4`` (walk then run). ``cost`` renders the
same 224 px frames with a posed character (a new pose every frame) skinned on the GPU, the same
skinned on the CPU, and the rigid procedural asset of the class, interleaved, and prints the ms per
frame of each.
``pipeline`` makes the same clips (env forest, 16 frames at 8 fps, 224 px, subjects human, deer,
bear, fox, husky, camel, graphs + ground truth + 4 encodes) with and without ``characters``,
interleaved clip by clip on one server, and reports CPU-s per clip of each (this process + the
server, as ``benchmarks/videos.py``) and the projection of 1,000 clips x 4 variants on 2 cores.
``recognition`` makes ``--clips`` forest clips per animal class with that class as the only
subject: the library's animals (bear, fox, camel, husky, deer) three ways, rigid assets, primitive
rigs (``articulation``) and characters; the classes only the pack has (horse, zebra, elephant,
wolf, ...) as characters only. It crops the subject from frames 0, 5, 10, 15 of each clip (the
record's per-frame box, ``probing.recognition.context_box``) and scores them with the project's
recognition benchmark classifier (EfficientNet-Lite0, ImageNet top-1/top-5 against
``probing.recognition.IMAGENET``; a class without an ImageNet counterpart against its nearest
family, ``NEAREST``: deer as antelopes, goat as ibex/bighorn, donkey as a horse), writing
``benchmarks/results/character_recognition.json``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results" / "character_feet.json"
MEDIA_CLASSES = ("human", "horse", "deer", "wolf", "fox", "bear", "camel", "elephant", "zebra", "cattle", "pig", "sheep")


def library(cache_dir):
    from sceneforge.assets_manifest.characters.library import CharacterLibrary

    lib = CharacterLibrary.installed(cache_dir)
    if lib is None:
        sys.exit("benchmarks/characters.py: the character pack is not installed (sceneforge assets install characters)")
    return lib


def _stats(s: np.ndarray) -> dict:
    return {
        "steps": int(len(s)),
        "p50_cm": round(float(np.median(s)), 3) if len(s) else None,
        "p95_cm": round(float(np.percentile(s, 95)), 3) if len(s) else None,
        "max_cm": round(float(s.max()), 3) if len(s) else None,
    }


def feet(args) -> None:
    """Stride and planted-foot slide per class x clip, without and with the foot lock (ik.py),
    both measured at the server's 256 pose steps per cycle with the same contact rule (a foot
    vertex is in contact within 0.8 % of the figure's height of its leg's lowest point)."""
    from sceneforge.assets_manifest.characters import ik, motion

    lib = library(args.cache_dir)
    rows = []
    for cls in lib.classes():
        if args.classes and cls not in args.classes:
            continue
        ch = lib.character(cls, 0)
        for clip in ("walk", "run"):
            if clip in ch.clips:
                m = motion.analyse(ch, clip)
                lock = ch.foot_lock(clip)
                legs = ik.leg_of(ch, lock)  # a foot group's ground is its leg's lowest point (motion.slides)
                off = motion.slides(ch, clip, m, ik.LOCK_SAMPLES, legs=legs)
                on = motion.slides(ch, clip, m, ik.LOCK_SAMPLES, lock.bones, legs=legs)
                s = m.summary()
                rows.append(
                    {
                        "class": cls,
                        "actor": ch.actor,
                        "clip_file": ch.clip_files[clip],
                        "clip": clip,
                        "stride_cm": s["stride_cm"],
                        "natural_speed_cms": s["natural_speed_cms"],
                        "ik_legs": len(lock.legs),
                        "without_ik": _stats(off),
                        "with_ik": _stats(on),
                    }
                )
                print(f"{cls} {clip}: {_stats(off)} -> {_stats(on)}", file=sys.stderr, flush=True)
    if args.classes and RESULTS.exists():  # re-measured classes replace their rows; the others are kept
        order = lib.classes()
        kept = [r for r in json.loads(RESULTS.read_text()) if r["class"] not in args.classes]
        rows = sorted(
            kept + rows, key=lambda r: (order.index(r["class"]) if r["class"] in order else len(order), r["clip"] != "walk")
        )
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(rows, indent=1) + "\n")

    def cells(d: dict) -> str:
        return " | ".join("-" if d[k] is None else f"{d[k]:.1f}" for k in ("p50_cm", "p95_cm", "max_cm"))

    print(
        "| class | clip | stride (cm/cycle) | natural speed (cm/s) | IK legs | planted steps "
        "| slide p50 / p95 / max, no IK (cm) | with IK (cm) |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        a, b = r["without_ik"], r["with_ik"]
        print(
            f"| {r['class']} | {r['clip']} | {r['stride_cm']:.0f} | {r['natural_speed_cms']:.0f} | {r['ik_legs']} | "
            f"{a['steps']} / {b['steps']} | {cells(a).replace(' | ', ' / ')} | {cells(b).replace(' | ', ' / ')} |"
        )

    def ok(d: dict) -> bool:
        return d["max_cm"] is not None and d["max_cm"] <= 1.0

    classes = sorted({r["class"] for r in rows})
    for key in ("without_ik", "with_ik"):
        n = sum(ok(r[key]) for r in rows)
        c = sum(all(ok(r[key]) for r in rows if r["class"] == cls) for cls in classes)
        print(f"# {key}: {n} of {len(rows)} clips, {c} of {len(classes)} classes keep every planted step within 1 cm")
    print(f"# written {RESULTS.relative_to(ROOT)}")


def _frames(lib, be, cls: str, clip: str, n: int, fps: float, size: int, variant: int = 0):
    """A clip of ``cls`` doing ``clip`` along +X at its natural speed, tracked from the side."""
    from sceneforge.assets_manifest.characters import motion
    from sceneforge.engine.server import characters as chs
    from sceneforge.engine.world import Actor, Camera, Ground, Scene, Transform, look_at_rotation

    ch = lib.character(cls, variant)
    m = motion.analyse(ch, clip)
    speed = m.natural_speed_cms
    cadence = 1.0 / m.cycle_s
    h = float(lib.species[cls][1])
    mesh0 = lib.mesh(cls, variant, clip, 0.0)
    length = float(np.ptp(mesh0.vertices[:, 0]))
    dist = max(h, length) * 1.9
    out = []
    for t in range(n):
        phase = cadence * t / fps
        x = float(m.root_cm(phase))
        aid = chs.posed_id(cls, variant, clip, phase)
        scene = Scene(ground=Ground(color=(120, 132, 96), extent=20000.0))
        scene.add(Actor("c", aid, Transform((x, 0.0, 0.0))))
        centre = (speed * t / fps, 0.0, 0.45 * h)  # the camera tracks the mean speed: the body surges within a step
        eye = (centre[0] + 0.25 * dist, -dist, 0.45 * h + 0.25 * dist)
        out.append(be.render(scene, Camera(eye, look_at_rotation(eye, centre), 45.0, size, size), ("lit",))["lit"])
    return out


def _backend(lib):
    from sceneforge.engine.server.catalog import AssetCatalog
    from sceneforge.engine.server.gl.backend import GLBackend

    cat = AssetCatalog(None, characters=lambda: lib)
    return GLBackend(cat.mesh, shadow_map_size=1024)


def media(args) -> None:
    from PIL import Image

    from sceneforge.scenarios.videos.video_io import encode_mp4

    lib = library(args.cache_dir)
    be = _backend(lib)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    rows = []
    try:
        for cls in [c for c in MEDIA_CLASSES if c in lib.classes()]:
            clips = [c for c in ("walk", "run") if c in lib.character(cls, 0).clips]
            frames = []
            for clip in clips:
                frames += _frames(lib, be, cls, clip, args.frames, args.fps, args.size)
            encode_mp4(np.stack(frames), out / f"character_{cls}.mp4", args.fps)
            walk = frames[: args.frames]
            pick = [walk[int(i * args.frames / 4) % len(walk)] for i in range(4)]
            if len(clips) > 1:
                pick.append(frames[args.frames + args.frames // 3])
            rows.append(np.concatenate(pick + [np.full_like(walk[0], 255)] * (5 - len(pick)), 1))
            print(f"{cls}: {len(frames)} frames ({', '.join(clips)})", flush=True)
    finally:
        be.close()
    sheet = Image.fromarray(np.concatenate(rows, 0))
    sheet = sheet.resize((sheet.width // 2, sheet.height // 2), Image.LANCZOS)
    sheet.save(out / "characters_sheet.jpg", quality=82)
    print(f"wrote {out / 'characters_sheet.jpg'} ({sheet.width}x{sheet.height}) and {len(rows)} mp4s")


def cost(args) -> None:
    """ms per rendered frame: a character posed on the GPU (new pose each frame: palette + one
    skinning pass + draw, gl/skinning.py), the same character skinned on the CPU (skinning +
    upload + draw, ``GLBackend(gpu_skinning=False)``) and a rigid procedural asset of the same
    class; same camera, 224 px, lit + instance_id, the three interleaved frame by frame (the
    order rotating), each on its own GL context."""
    from sceneforge.assets_manifest import AssetLibrary
    from sceneforge.engine.server import characters as chs
    from sceneforge.engine.server.catalog import AssetCatalog
    from sceneforge.engine.server.gl.backend import GLBackend
    from sceneforge.engine.world import Actor, Camera, Ground, Scene, Transform, look_at_rotation

    lib = library(args.cache_dir)
    rigid = AssetLibrary.default()
    cat = AssetCatalog(rigid, characters=lambda: lib)
    backends = {
        "gpu": GLBackend(cat.mesh, shadow_map_size=2048),
        "cpu": GLBackend(cat.mesh, shadow_map_size=2048, gpu_skinning=False),
    }
    backends["rigid"] = backends["gpu"]
    order = ("gpu", "cpu", "rigid")
    try:
        for cls, asset in (("human", "proc_human_walker"), ("deer", "proc_deer"), ("bear", "proc_bear"), ("camel", "proc_camel")):
            times = {k: [] for k in order}
            for r in range(args.frames):
                for kind in order[r % 3 :] + order[: r % 3]:
                    aid = chs.posed_id(cls, 0, "walk", r / args.frames) if kind != "rigid" else asset
                    scene = Scene(ground=Ground(color=(120, 132, 96), extent=20000.0))
                    scene.add(Actor("c", aid, Transform((0.0, 0.0, 0.0))))
                    eye = (300.0, -600.0, 250.0)
                    cam = Camera(eye, look_at_rotation(eye, (0.0, 0.0, 80.0)), 45.0, 224, 224)
                    t0 = time.perf_counter()
                    backends[kind].render(scene, cam, ("lit", "instance_id"))
                    times[kind].append(time.perf_counter() - t0)
            g, c, rr = (np.median(times[k][2:]) * 1e3 for k in order)
            print(
                f"{cls}: GPU-skinned {g:.1f} ms/frame ({g / rr:.2f}x rigid), CPU-skinned {c:.1f} ({c / rr:.2f}x), rigid {rr:.1f}",
                flush=True,
            )
    finally:
        backends["gpu"].close()
        backends["cpu"].close()


def pipeline(args) -> None:
    import os
    from collections import Counter

    sys.path.insert(0, str(ROOT / "benchmarks"))
    from videos import CpuClock  # noqa: E402 - the videos benchmark's clock (this process + the server)

    from sceneforge.engine.client import RenderClient
    from sceneforge.engine.server.launch import start_server
    from sceneforge.scenarios.videos import scenario as sc

    library(args.cache_dir)  # installed?
    env = {"SCENEFORGE_CACHE": str(args.cache_dir)} if args.cache_dir else {}
    os.environ.update(env)
    base = {
        "env": "forest",
        "n": args.clips,
        "seed": 0,
        "image_size": 224,
        "subjects": ["human", "deer", "bear", "fox", "husky", "camel"],
        "motion": {"n_frames": 16, "fps": 8.0},
    }
    ctxs = {
        flag: sc.load_context(sc.VideoConfig.from_dict({**base, **({"characters": True} if flag else {})}))
        for flag in (False, True)
    }
    cpu = {False: [], True: []}
    mine = {False: [], True: []}  # this process's share of each lap (make_clip + writes); the rest is the server's
    out = Path(args.out) / "pipeline"
    srv = start_server(port=0, env=env)
    try:
        with RenderClient(srv.address, timeout=300) as client:
            clock = CpuClock(srv.proc.pid)
            for i in range(args.clips):
                for flag in (False, True):
                    t0 = time.process_time()
                    made = sc.make_clip(ctxs[flag], client, i, Counter())
                    sc.write_graphs(ctxs[flag], out / str(flag), i, made)
                    sc.write_ground_truth(ctxs[flag], out / str(flag), i, made)
                    sc.write_clip(out / str(flag), sc.clip_record(ctxs[flag], i, made), made["frames"])
                    mine[flag].append(time.process_time() - t0)
                    cpu[flag].append(clock.lap())
                print(
                    f"clip {i}: rigid {cpu[False][-1]:.3f} (client {mine[False][-1]:.3f}) / "
                    f"characters {cpu[True][-1]:.3f} (client {mine[True][-1]:.3f}) CPU-s",
                    flush=True,
                )
    finally:
        srv.stop()
    cpu = {k: v[1:] for k, v in cpu.items()}  # the first pair warms the server up (meshes, textures, the pack)
    mine = {k: v[1:] for k, v in mine.items()}
    for flag, name in ((False, "rigid"), (True, "characters")):
        cl = float(np.mean(mine[flag]))
        print(f"{name}: client {cl:.3f} + server {float(np.mean(cpu[flag])) - cl:.3f} CPU-s per clip")
    r, c = float(np.mean(cpu[False])), float(np.mean(cpu[True]))
    d = np.asarray(cpu[True]) - np.asarray(cpu[False])
    sem = float(d.std(ddof=1) / np.sqrt(len(d))) if len(d) > 1 else 0.0
    print(
        f"rigid {r:.3f} / characters {c:.3f} CPU-s per clip ({c / r:.2f}x); "
        f"{1000 * d.mean() / 16:+.1f} +- {1000 * sem / 16:.1f} CPU-ms per frame; 1,000 clips x 4 variants on 2 cores: "
        f"rigid {1000 * r / 2 / 60:.1f} min, characters {1000 * c / 2 / 60:.1f} min"
    )


LIBRARY_ANIMALS = ("bear", "fox", "camel", "husky", "deer")  # library classes: rigid, rig and character arms
PACK_ANIMALS = (  # classes only the pack has: the character arm only (no asset, no rig)
    "horse",
    "zebra",
    "elephant",
    "wolf",
    "lion",
    "boar",
    "pig",
    "cattle",
    "sheep",
    "gazelle",
    "chicken",
    "dog",
    "goat",
    "donkey",
    "giraffe",
)
CROP_FRAMES = (0, 5, 10, 15)


def recognition(args) -> None:
    import os

    import av

    sys.path.insert(0, str(ROOT / "benchmarks"))
    from recognition import Classifier  # noqa: E402 - the recognition benchmark's classifier

    from sceneforge.engine.server.launch import start_server
    from sceneforge.probing import recognition as rec
    from sceneforge.scenarios.contract import Shard
    from sceneforge.scenarios.videos import scenario as sc

    library(args.cache_dir)
    env = {"SCENEFORGE_CACHE": str(args.cache_dir)} if args.cache_dir else {}
    os.environ.update(env)
    base = {"env": "forest", "n": args.clips, "seed": 7, "image_size": 224, "motion": {"n_frames": 16, "fps": 8.0}}
    arms = {"rigid": {}, "rigs": {"articulation": True}, "characters": {"characters": True}}
    classes = args.classes or (*LIBRARY_ANIMALS, *PACK_ANIMALS)
    run_arms = set(args.arms or arms)
    clf = Classifier()
    out = Path(args.out) / "recognition"
    result = ROOT / "benchmarks" / "results" / "character_recognition.json"
    config = {**base, "crop_frames": list(CROP_FRAMES)}
    old = json.loads(result.read_text()) if result.is_file() else {}
    # a run of some arms or classes updates the others' rows of the same config in place
    table: dict = old.get("classes", {}) if old.get("config") == config else {}
    srv = start_server(port=0, env=env)
    try:
        for cls in classes:  # one class per run: every class gets --clips clips in every arm it has
            for arm, extra in arms.items():
                if (cls in PACK_ANIMALS and arm != "characters") or arm not in run_arms:
                    continue
                cfg = {**base, "subjects": [cls], **extra}
                d = out / arm / cls
                t0 = time.time()
                res = sc.run(cfg, Shard(0, tuple(range(args.clips))), d, server=srv.address)
                crops = []
                for i in res.done:
                    r = json.loads((d / "records" / f"{i:06d}.json").read_text())
                    video = av.open(str(d / "videos" / "std" / r["relative_path"]))
                    frames = [f.to_ndarray(format="rgb24") for f in video.decode(video=0)]
                    video.close()
                    for t in CROP_FRAMES:
                        if t < len(frames) and r["bbox"][t]:
                            x0, y0, x1, y1 = rec.context_box(tuple(r["bbox"][t]), r["width"], r["height"])
                            crops.append(frames[t][y0:y1, x0:x1])
                if not crops:
                    print(f"{cls} {arm}: no clip ({len(res.failed)} failed)", flush=True)
                    continue
                top = clf.top5(crops)
                own = rec.targets(cls)
                near = rec.nearest_targets(cls)
                want, scored = (own, "imagenet") if own else ((near[1], near[0]) if near else (set(), "none"))
                table.setdefault(cls, {})[arm] = {
                    "crops": len(crops),
                    "clips": len(res.done),
                    "scored_against": scored,
                    "top1": float(rec.hit_at(top, want, 1).mean()),
                    "top5": float(rec.hit_at(top, want, 5).mean()),
                }
                print(
                    f"{cls} {arm}: {len(crops)} crops from {len(res.done)} clips, top-1 {table[cls][arm]['top1']:.2f} "
                    f"top-5 {table[cls][arm]['top5']:.2f} ({scored}; {time.time() - t0:.0f} s)",
                    flush=True,
                )
    finally:
        srv.stop()
    print("| class | rigid assets top-1 / top-5 | primitive rigs top-1 / top-5 | characters top-1 / top-5 | crops |")
    print("|---|---|---|---|---|")
    for cls in [c for c in (*LIBRARY_ANIMALS, *PACK_ANIMALS) if c in table]:
        row = table.get(cls, {})
        cells = [f"{row[a]['top1']:.2f} / {row[a]['top5']:.2f}" if a in row else "-" for a in arms]
        scored = next((v["scored_against"] for v in row.values()), "none")
        name = cls + ("" if scored == "imagenet" else f" ({scored})" if scored != "none" else " (no ImageNet class)")
        print(f"| {name} | " + " | ".join(cells) + f" | {' / '.join(str(row[a]['crops']) for a in arms if a in row)} |")
    result.parent.mkdir(exist_ok=True)
    result.write_text(json.dumps({"config": config, "classes": table}, indent=1, sort_keys=True) + "\n")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("what", choices=("feet", "media", "cost", "pipeline", "recognition"))
    ap.add_argument("--cache-dir", type=Path, default=None)
    ap.add_argument("--out", default=str(ROOT / "docs" / "img"))
    ap.add_argument("--frames", type=int, default=24)
    ap.add_argument("--fps", type=float, default=12.0)
    ap.add_argument("--size", type=int, default=224)
    ap.add_argument("--clips", type=int, default=15)
    ap.add_argument(
        "--classes",
        nargs="+",
        default=None,
        help="recognition: only these classes (default: every animal); feet: re-measure only these, keeping the other rows",
    )
    ap.add_argument("--arms", nargs="+", choices=("rigid", "rigs", "characters"), default=None, help="recognition: only these")
    args = ap.parse_args()
    {"feet": feet, "media": media, "cost": cost, "pipeline": pipeline, "recognition": recognition}[args.what](args)


if __name__ == "__main__":
    main()
