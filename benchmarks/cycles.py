"""Benchmark: labelled 224² SpaRRTa images/s with the Cycles renderer beside GL, same job.

    python benchmarks/cycles.py [--envs desert] [--n 8] [--workers 2] [--samples 16]
    python benchmarks/cycles.py --envs all --n 1 --workers 2 --sheet docs/img/cycles_envs.png

Runs ``scenarios.sparrta`` through the render farm twice with the same config (same seed, so the
same samples, placements and cameras): once with ``renderer: gl`` and once with
``renderer: cycles:samples=N``. Rejection sampling and visibility stay on GL in both (hybrid);
only accepted samples are path-traced. Prints for each: labelled images/s (wall) and the
CPU-seconds per image of the whole process tree (farm workers, render servers, Blender workers;
``RUSAGE_CHILDREN`` after every child was waited for). On a shared machine the CPU figure is the
reliable one: ``2 cores / (CPU-s per image)`` is the rate an idle 2-core machine approaches.

``--sheet PATH`` also writes a contact sheet: for each environment, the first sample's image from
GL (left) and Cycles (right), labelled.
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

ENVS = ("forest", "desert", "city", "bridge", "winter_town")


def children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def run(config: dict, out: Path, workers: int) -> dict:
    from sceneforge.renderfarm import run_job

    c0, t0 = children_cpu() + time.process_time(), time.perf_counter()
    summary = run_job("scenarios.sparrta", config, out, workers=workers, progress=False)
    wall, cpu = time.perf_counter() - t0, children_cpu() + time.process_time() - c0
    n = int(summary.get("complete", 0))
    if not summary.get("finalized"):
        raise SystemExit(f"job in {out} did not finish: {summary.get('failed')}")
    return {
        "images": n,
        "wall_s": round(wall, 1),
        "images_per_s": round(n / wall, 3),
        "cpu_s": round(cpu, 1),
        "cpu_s_per_image": round(cpu / n, 2) if n else None,
        "idle_2core_images_per_s": round(2 * n / cpu, 3) if cpu else None,
    }


def first_images(out: Path, envs: list[str]) -> dict[str, Path]:
    found = {}
    for env in envs:
        imgs = sorted((out / env).rglob("img_*.*"))
        if imgs:
            found[env] = imgs[0]
    return found


def contact_sheet(gl_out: Path, cy_out: Path, envs: list[str], path: Path, label: str) -> None:
    from PIL import Image, ImageDraw

    gl, cy = first_images(gl_out, envs), first_images(cy_out, envs)
    rows = [e for e in envs if e in gl and e in cy]
    size, pad = 224, 18
    sheet = Image.new("RGB", (2 * size, len(rows) * (size + pad)), (255, 255, 255))
    draw = ImageDraw.Draw(sheet)
    for r, env in enumerate(rows):
        y = r * (size + pad)
        for c, (img, name) in enumerate(((gl[env], "GL (moderngl)"), (cy[env], label))):
            with Image.open(img) as im:
                sheet.paste(im.convert("RGB").resize((size, size)), (c * size, y + pad))
            draw.text((c * size + 4, y + 3), f"{env}: {name}", fill=(0, 0, 0))
    path.parent.mkdir(parents=True, exist_ok=True)
    sheet.save(path)
    print(f"contact sheet: {path}")


def main(argv: list[str] | None = None) -> dict:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--envs", nargs="+", default=["desert"], help="environments, or 'all' (default desert)")
    p.add_argument("--task", default="ego", choices=["ego", "allo"])
    p.add_argument("--n", type=int, default=8, help="samples per environment (default 8)")
    p.add_argument("--size", type=int, default=224)
    p.add_argument("--workers", type=int, default=2, help="farm workers, one server + Blender each (default 2)")
    p.add_argument("--samples", type=int, default=16, help="Cycles samples per pixel (default 16, OIDN on)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--sheet", type=Path, help="write a GL | Cycles contact sheet of the first images here")
    p.add_argument("--keep", type=Path, help="keep the datasets under this directory")
    args = p.parse_args(argv)
    envs = list(ENVS) if args.envs == ["all"] else args.envs
    from sceneforge.engine.server.cycles.install import require

    inst = require()
    base = {
        "envs": envs,
        "tasks": [args.task],
        "n": args.n,
        "size": args.size,
        "seed": args.seed,
        "image_format": "png" if args.sheet else "jpg",
    }
    spec = f"cycles:samples={args.samples}"
    root = args.keep or Path(tempfile.mkdtemp(prefix="sceneforge-bench-cycles-"))
    results = {
        "blender": inst.blender,
        "envs": envs,
        "n_per_env": args.n,
        "size": args.size,
        "workers": args.workers,
        "cycles": spec,
    }
    results["gl"] = run(dict(base), root / "gl", args.workers)
    print("gl     ", json.dumps(results["gl"]), flush=True)
    results["cycles_run"] = run(dict(base, renderer=spec), root / "cycles", args.workers)
    print("cycles ", json.dumps(results["cycles_run"]), flush=True)
    g, c = results["gl"], results["cycles_run"]
    print(
        f"labelled {args.size}² images/s: GL {g['images_per_s']} | Cycles {c['images_per_s']} "
        f"({args.workers} workers; CPU-s per image: GL {g['cpu_s_per_image']}, Cycles {c['cpu_s_per_image']}; "
        f"an idle 2-core machine: Cycles ≈ {c['idle_2core_images_per_s']} images/s)"
    )
    if args.sheet:
        contact_sheet(root / "gl", root / "cycles", envs, args.sheet, f"Cycles {args.samples} spp + OIDN")
    print(json.dumps(results))
    return results


if __name__ == "__main__":
    main()
