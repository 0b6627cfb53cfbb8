"""``sceneforge assets list|validate|preview|build``: inspect, check, look at and build asset packs.

sceneforge assets list [--licenses cc0,cc-by] [--manifest pack.yaml]
sceneforge assets validate my_pack.yaml          # exit 2 with file:line: field: message
sceneforge assets preview --class truck --out sheet.png
sceneforge assets build [--sources sh3d,looks] [--licenses cc0,cc-by]
sceneforge assets install characters [--from 0ad-data_0.0.26-1_all.deb]   # also: assets build characters
"""

from __future__ import annotations

import argparse
import logging
import math
from pathlib import Path

from sceneforge.core.atomic import atomic_path
from sceneforge.core.errors import ConfigError
from sceneforge.engine.world import Actor, Camera, Ground, Scene, look_at_rotation

log = logging.getLogger(__name__)
TILE = 160


def register(subparsers) -> None:
    p = subparsers.add_parser("assets", help="asset library: list, validate, preview, build")
    sub = p.add_subparsers(dest="assets_cmd", metavar="ACTION")
    sub.required = True
    ls = sub.add_parser("list", help="id, class, source, license, triangles, size (m)")
    _library_args(ls)
    ls.add_argument("--all", action="store_true", help="also procedural fallbacks shadowed by built assets")
    ls.set_defaults(func=run_list)
    va = sub.add_parser("validate", help="check manifest files; mesh files must exist and load")
    va.add_argument("manifests", nargs="+", type=Path)
    va.add_argument("--no-load", action="store_true", help="check the schema only, do not load meshes")
    va.set_defaults(func=run_validate)
    pv = sub.add_parser("preview", help="contact sheet PNG rendered with the embedded renderer")
    _library_args(pv)
    pv.add_argument("--class", dest="cls", action="append", help="only these classes (repeatable)")
    pv.add_argument("--out", type=Path, default=Path("assets_sheet.png"))
    pv.add_argument("--tile", type=int, default=TILE, help="tile size in pixels")
    pv.add_argument("--one-per-class", action="store_true", help="first variant of each class only")
    pv.set_defaults(func=run_preview)
    bd = sub.add_parser("build", help="fetch Debian packages and convert the named models to the cache")
    bd.add_argument(
        "packs", nargs="*", choices=[[], *OPT_IN_PACKS], metavar="PACK", help="an opt-in pack to install instead: characters"
    )
    _pack_args(bd)
    bd.add_argument(
        "--sources",
        default="sh3d,looks",
        help="comma list of sh3d (Sweet Home 3D furniture, 120 MB), "
        "looks (HDRIs + ground/facade textures: Debian blender-data, sweethome3d, npm @pmndrs/assets) "
        "and 0ad (0 A.D. animals, 1.4 GB download, ~3 min unpack, CC-BY-SA)",
    )
    bd.add_argument("--licenses", default=None, help="only assets of these license families, e.g. cc0,cc-by")
    bd.add_argument("--cache-dir", type=Path, default=None, help="default $SCENEFORGE_CACHE or ~/.cache/sceneforge")
    bd.add_argument("--force", action="store_true", help="rebuild assets already in the cache")
    bd.set_defaults(func=run_build)
    ins = sub.add_parser(
        "install",
        help="install an opt-in pack into the cache: characters (0 A.D. people and animals, "
        "1.4 GB download, ~630 MB kept, CC-BY-SA 3.0)",
    )
    ins.add_argument("packs", nargs="+", choices=OPT_IN_PACKS, metavar="PACK", help="characters")
    ins.add_argument("--cache-dir", type=Path, default=None, help="default $SCENEFORGE_CACHE or ~/.cache/sceneforge")
    ins.add_argument("--force", action="store_true", help="reinstall a pack already in the cache")
    _pack_args(ins)
    ins.set_defaults(func=run_install)


OPT_IN_PACKS = ("characters",)


def _pack_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--from",
        dest="from_file",
        type=Path,
        default=None,
        metavar="DEB",
        help="install the characters pack from this local 0ad-data .deb (no network)",
    )
    p.add_argument("--no-progress", action="store_true", help="no progress bar")


def _library_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--manifest", action="append", type=Path, help="extra manifest(s) (user packs)")
    p.add_argument("--licenses", default=None, help="only these license families, e.g. cc0,cc-by")
    p.add_argument("--procedural", action="store_true", help="only the procedural pack")
    p.add_argument("--cache-dir", type=Path, default=None)


def open_library(args):
    from sceneforge.assets_manifest import AssetLibrary  # trimesh, pydantic: not at parser build

    lic = args.licenses.split(",") if args.licenses else None
    if args.procedural:
        from sceneforge.assets_manifest.library import PROCEDURAL_PACK  # trimesh, pydantic: not at parser build

        return AssetLibrary.from_manifests([PROCEDURAL_PACK], args.cache_dir, lic)
    return AssetLibrary.default(args.cache_dir, lic, extra_manifests=args.manifest or ())


def run_list(args) -> int:
    lib = open_library(args)
    print(f"{'id':28} {'class':13} {'origin':10} {'license':14} {'tris':>6}  size L x W x H (m)")
    for i in lib.ids() if args.all else lib.active_ids():
        info = lib.info(i)
        size = " x ".join(f"{s / 100:.2f}" for s in lib.size_cm(i))
        print(f"{i:28} {info.cls:13} {info.origin:10} {info.license:14} {lib.mesh(i).n_triangles:6d}  {size}")
    print(
        f"# {len(lib.active_ids())} active of {len(lib.ids())} assets, {len(lib.classes())} classes, library {lib.fingerprint()}"
    )
    return 0


def run_validate(args) -> int:
    from sceneforge.assets_manifest import AssetLibrary  # trimesh, pydantic: not at parser build
    from sceneforge.assets_manifest.schema import load_manifest

    for path in args.manifests:
        m = load_manifest(path)
        if not args.no_load:
            lib = AssetLibrary.from_manifests([path])
            for e in m.assets:
                if e.build is None:
                    lib.mesh(e.id)
        print(f"{path}: ok ({len(m.assets)} assets, pack {m.pack!r})")
    return 0


def run_preview(args) -> int:
    lib = open_library(args)
    ids = [i for i in lib.active_ids() if not args.cls or lib.info(i).cls in args.cls]
    if args.one_per_class:
        ids = [lib.by_class(c)[0].id for c in sorted({lib.info(i).cls for i in ids})]
    if not ids:
        raise ConfigError(f"assets preview: no asset of class {', '.join(args.cls or [])} in the library")
    sheet = contact_sheet(lib, ids, args.tile)
    save_png(sheet, args.out)
    classes = sorted({lib.info(i).cls for i in ids})
    names = ", ".join(classes[:8]) + (", ..." if len(classes) > 8 else "")
    print(f"assets preview: wrote {args.out} ({len(ids)} asset{'s' if len(ids) != 1 else ''}: {names})")
    return 0


def run_install(args) -> int:
    """``assets install characters`` (and ``assets build characters``): the opt-in pack."""
    import os

    from sceneforge.assets_manifest.characters import install  # assets_manifest.__init__ imports trimesh: not at parser build

    bar = None

    def progress(done: int, total: int | None, what: str) -> None:
        nonlocal bar
        if args.no_progress:
            return
        from tqdm import tqdm

        if bar is None or bar.desc != what:
            if bar is not None:
                bar.close()
            bar = tqdm(total=total, desc=what, unit="B", unit_scale=True, leave=False)
        bar.update(done - bar.n)

    try:
        lines = install(
            args.cache_dir,
            source=args.from_file,
            force=args.force,
            progress=progress,
            fetch=not os.environ.get("SCENEFORGE_NO_FETCH"),
        )
    finally:
        if bar is not None:
            bar.close()
    for line in lines:
        print(line)
    return 0


def run_build(args) -> int:
    if args.packs:
        return run_install(args)
    if args.from_file is not None:
        raise ConfigError("assets build: --from is for an opt-in pack: `assets build characters --from DEB`")
    from sceneforge.assets_manifest.build import build  # trimesh, pydantic: not at parser build

    lic = args.licenses.split(",") if args.licenses else None
    report = build(
        [s.strip() for s in args.sources.split(",") if s.strip()], cache_dir=args.cache_dir, licenses=lic, force=args.force
    )
    for line in report:
        print(line)
    return 0


# ---- rendering helpers (shared with `sceneforge envs preview`) ---------------------------------


def asset_view(lib, asset_id: str, tile: int):
    """A scene with the asset alone on a neutral ground and a 3/4 camera framing it."""
    L, W, H = lib.size_cm(asset_id)
    radius = 0.5 * math.sqrt(L * L + W * W + H * H)
    dist = radius / math.tan(math.radians(40) / 2) * 1.1
    target = (0.0, 0.0, H * 0.45)
    eye = (
        dist * math.cos(math.radians(35)) * math.cos(math.radians(-40)),
        dist * math.cos(math.radians(35)) * math.sin(math.radians(-40)),
        target[2] + dist * math.sin(math.radians(20)),
    )
    scene = Scene(ground=Ground(color=(200, 200, 196), extent=max(5000.0, dist * 4)))
    scene.add(Actor("asset", asset_id))
    return scene, Camera(eye, look_at_rotation(eye, target), 40.0, tile, tile)


def contact_sheet(lib, ids: list[str], tile: int = TILE, cols: int | None = None):
    """Render each asset in its own tile with its id as caption; returns an (H, W, 3) uint8 array."""
    import numpy as np
    from tqdm import tqdm

    from sceneforge.engine.server.gl.backend import GLBackend  # moderngl: not at parser build

    cols = cols or min(len(ids), 8)
    rows = math.ceil(len(ids) / cols)
    sheet = np.full((rows * tile, cols * tile, 3), 255, np.uint8)
    backend = GLBackend(lib.mesh)
    try:
        for k, i in enumerate(tqdm(ids, desc="preview", disable=len(ids) < 8)):
            scene, cam = asset_view(lib, i, tile)
            img = caption(backend.render(scene, cam, ("lit",))["lit"], i)
            r, c = divmod(k, cols)
            sheet[r * tile : (r + 1) * tile, c * tile : (c + 1) * tile] = img
    finally:
        backend.close()
    return sheet


def caption(img, text: str):
    import numpy as np
    from PIL import Image, ImageDraw

    im = Image.fromarray(np.ascontiguousarray(img))
    d = ImageDraw.Draw(im)
    d.rectangle([0, 0, im.width, 11], fill=(255, 255, 255))
    d.text((2, 0), text[:28], fill=(0, 0, 0))
    return np.asarray(im)


def save_png(img, out: Path) -> None:
    """Write atomically (temp file then os.replace)."""
    from PIL import Image

    with atomic_path(Path(out)) as tmp:
        Image.fromarray(img).save(tmp, format="PNG", optimize=True)
