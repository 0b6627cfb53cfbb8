"""The explorer on a big set: page load, filter and sample-open times in Debian's chromium.

A synthetic SpaRRTa-like table of ``--n`` rows (5 environments x 2 tasks x 3 triples, 4 labels,
80/10/10 splits, margins, angles, box sizes, rejections; details with a top-down map of 30
objects) is written with :func:`explorer.site.write_site` (no dataset files: thumbnails are hard
links to 16 real JPEGs), then opened from disk in headless chromium and measured:

    python benchmarks/explorer.py --n 50000 [--reps 5] [--out /tmp/explorer-bench]

Prints one JSON line: build seconds, sizes, page load (navigation -> grid drawn), in-page filter
times (facet, range, both; the JS filter alone and click -> count on screen), sample-open time
(shard load + draw), and how many thumbnails the first page requested.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from PIL import Image

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sceneforge.explorer.site import make_media, write_site  # noqa: E402,F401
from sceneforge.explorer.table import Table  # noqa: E402

CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
]
LABELS = ("front", "back", "left", "right")


def synthetic_table(n: int, seed: int = 0) -> Table:
    """``n`` rows shaped like ``read_sparrta``'s, with random but plausible values."""
    rng = np.random.default_rng(seed)
    envs = np.array(["bridge", "city", "desert", "forest", "winter_town"])
    env = envs[rng.integers(0, 5, n)]
    task = np.array(["ego", "allo"])[rng.integers(0, 2, n)]
    triple = np.array([f"{e}_t{k}" for e, k in zip(env, rng.integers(0, 3, n))])
    label = np.array(LABELS)[np.arange(n) % 4]
    split = np.array(["train"] * 8 + ["val", "test"])[rng.integers(0, 10, n)]
    margin = np.where(task == "ego", 15.0, 10.0)
    angle = rng.uniform(0, 180, n)

    def details(i: int) -> dict:
        r = np.random.default_rng(i)

        def foot(x: float, y: float) -> list[list[float]]:  # cm, 0.1 cm as read_sparrta keeps them
            x, y = round(float(x), 1), round(float(y), 1)
            return [[x - 50, y - 50], [x + 50, y - 50], [x + 50, y + 50], [x - 50, y + 50]]

        src, tgt, cam = r.normal(0, 500, 2), r.normal(0, 500, 2), r.uniform(-2500, 2500, 2)
        objs = [{"role": "clutter", "class": "rock", "foot": foot(*r.normal(0, 1500, 2))} for _ in range(28)]
        objs += [
            {"role": "source", "class": "rock", "foot": foot(*src)},
            {"role": "target", "class": "truck", "foot": foot(*tgt)},
        ]
        return {
            "size": [224, 224],
            "label": str(label[i]),
            "task": str(task[i]),
            "margin_deg": float(margin[i]),
            "angle_deg": float(angle[i]),
            "split": str(split[i]),
            "boxes": {"source": [10, 10, 40, 40], "target": [100, 90, 160, 140]},
            "rejections": {},
            "params": {},
            "map": {
                "camera": {"xy": cam.round(1).tolist(), "yaw": 45.0, "hfov": 53.13},
                "source": src.round(1).tolist(),
                "target": tgt.round(1).tolist(),
                "human": None,
                "human_yaw": None,
                "observer": "camera",
                "label": str(label[i]),
                "margin_deg": float(margin[i]),
                "objects": objs,
            },
        }

    return Table(
        kind="sparrta",
        keys=list(range(n)),
        media=[{"image": f"img/{i % 16}.jpg", "mask": None, "depth": None} for i in range(n)],
        facets={
            "env": env.tolist(),
            "task": task.tolist(),
            "triple": triple.tolist(),
            "label": label.tolist(),
            "split": split.tolist(),
        },
        numbers={
            "margin": margin,
            "angle": angle,
            "size": rng.gamma(3, 8, n) + 12,
            "distance": rng.uniform(100, 1000, n),
            "camera_distance": rng.uniform(300, 3500, n),
            "rejections": rng.poisson(12, n).astype(float),
        },
        details=details,
        stats={"rejection_reasons": {"small_projection": 9000, "in_frame": 2000}},
        units={"margin": "deg", "angle": "deg", "size": "px", "distance": "cm", "camera_distance": "cm", "rejections": "tries"},
    )


def build(n: int, root: Path) -> tuple[Path, float]:
    data, out = root / "data", root / "explorer"
    (data / "img").mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(1)
    for k in range(16):
        Image.fromarray(rng.integers(0, 255, (224, 224, 3), dtype=np.uint8)).save(data / "img" / f"{k}.jpg")
    table = synthetic_table(n)
    t0 = time.perf_counter()
    page = write_site(table, data, out, media_files=False)
    seconds = time.perf_counter() - t0
    (out / "thumbs").mkdir(exist_ok=True)
    for i in range(n):  # thumbnails: links to 16 files, as if made once
        dst = out / "thumbs" / f"{i}.jpg"
        if not dst.exists():
            os.link(data / "img" / f"{i % 16}.jpg", dst)
    return page, seconds


def measure(page: Path, reps: int) -> dict:
    from playwright.sync_api import sync_playwright

    res: dict[str, list[float]] = {
        k: []
        for k in (
            "load_ms",
            "facet_filter_js_ms",
            "facet_click_to_count_ms",
            "range_filter_js_ms",
            "range_to_count_ms",
            "open_sample_ms",
        )
    }
    thumbs_requested = []
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)
        for _ in range(reps):
            pg = b.new_page(viewport={"width": 1300, "height": 900})
            reqs: list[str] = []
            pg.on("request", lambda r, reqs=reqs: reqs.append(r.url))
            t0 = time.perf_counter()
            pg.goto(page.as_uri())
            pg.wait_for_function("window.SF_READY === true")
            pg.wait_for_selector(".cell")
            res["load_ms"].append((time.perf_counter() - t0) * 1000)
            thumbs_requested.append(sum("/thumbs/" in u for u in reqs))
            before = pg.get_attribute("#count", "data-count")
            t0 = time.perf_counter()
            pg.check('input[data-facet="env"][value="2"]')
            pg.wait_for_function(f"document.querySelector('#count').dataset.count !== '{before}'")
            res["facet_click_to_count_ms"].append((time.perf_counter() - t0) * 1000)
            res["facet_filter_js_ms"].append(pg.evaluate("window.SF_LAST_FILTER_MS"))
            before = pg.get_attribute("#count", "data-count")
            t0 = time.perf_counter()
            pg.fill('input[data-range="size"][data-end="0"]', "30")
            pg.press('input[data-range="size"][data-end="0"]', "Tab")
            pg.wait_for_function(f"document.querySelector('#count').dataset.count !== '{before}'")
            res["range_to_count_ms"].append((time.perf_counter() - t0) * 1000)
            res["range_filter_js_ms"].append(pg.evaluate("window.SF_LAST_FILTER_MS"))
            t0 = time.perf_counter()
            pg.click(".cell >> nth=5")
            pg.wait_for_selector("#label-frame")
            res["open_sample_ms"].append((time.perf_counter() - t0) * 1000)
            count = int(pg.get_attribute("#count", "data-count"))
            pg.close()
        b.close()
    out = {k: round(statistics.median(v), 1) for k, v in res.items()}
    out["thumbs_requested_first_page"] = max(thumbs_requested)
    out["count_after_filters"] = count
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=50000)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--out", type=Path, help="keep the site here (default: a temporary directory)")
    args = ap.parse_args()
    root = args.out or Path(tempfile.mkdtemp(prefix="explorer-bench-"))
    try:
        page, build_s = build(args.n, root)
        sizes = {
            "index_js_kb": round((page.parent / "data/index.js").stat().st_size / 1024, 1),
            "meta_js_kb": round((page.parent / "data/meta.js").stat().st_size / 1024, 1),
            "shards": len(list((page.parent / "data").glob("shard_*.js"))),
            "shard_kb": round((page.parent / "data/shard_0000.js").stat().st_size / 1024, 1),
        }
        print(json.dumps({"n": args.n, "build_s": round(build_s, 1), **sizes, **measure(page, args.reps)}))
    finally:
        if not args.out:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
