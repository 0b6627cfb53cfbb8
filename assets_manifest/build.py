"""``sceneforge assets build``: fetch Debian packages without root and convert the named models.

    build(["sh3d"])   # → <cache>/built/<id>.npz (+ .glb, + .json record) for every entry of
                      #   assets_manifest/packs/sh3d.yaml

Steps per source package: ``apt-get download <pkg>`` into ``<cache>/debs`` (no root needed), then
``dpkg-deb -x`` into ``<cache>/sources/<pkg>``; per asset, extract only its model folder, load it
with trimesh, fit it to the catalog size, normalise (UE axes, cm, ground at z = 0, decimated) and
write the mesh and a JSON record (source file, creator, license from the catalog and the package's
copyright file, triangle counts). Every step is skipped when its output exists, so an interrupted
build resumes and a second run costs nothing. Converted meshes stay in the cache (never the repo).
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

from tqdm import tqdm

from sceneforge.assets_manifest import normalize, sh3d, zeroad
from sceneforge.assets_manifest.fetch import fetch_package
from sceneforge.assets_manifest.library import BUILT_PACKS, budget_for, built_path, cache_root
from sceneforge.assets_manifest.licenses import matches_any
from sceneforge.assets_manifest.looks import build_looks, looks_complete
from sceneforge.assets_manifest.schema import UNITS_TO_CM, AssetEntry, load_manifest
from sceneforge.core.atomic import atomic_write_bytes, atomic_write_text
from sceneforge.core.errors import AssetError, ConfigError

log = logging.getLogger(__name__)
SUPPORTED = {"sh3d": sh3d.PACKAGE, "0ad": zeroad.PACKAGE, "looks": "blender-data, sweethome3d, npm @pmndrs/assets"}
DEFAULT_SOURCES = ("sh3d", "looks")  # what `sceneforge demo` / `generate` fetch on first use
# What that first use costs, measured from an empty cache on 2026-11-27 (docs/assets.md, "The
# cache"): the Debian packages sweethome3d-furniture (120 MB), blender-data (31 MB), sweethome3d
# (17 MB) and npm @pmndrs/assets 1.7.0 (14 MB); on disk the unpacked sources, the built meshes,
# the textures and HDRIs. README.md and the docs quote these numbers (a test checks they agree).
DEFAULTS_DOWNLOAD_MB = 180
DEFAULTS_DISK_MB = 380


def build(sources: list[str], cache_dir=None, licenses=None, force: bool = False, progress: bool = True) -> list[str]:
    """Build the given sources; returns one report line per asset."""
    bad = sorted(set(sources) - set(SUPPORTED))
    if bad:
        raise ConfigError(f"--sources: unsupported {', '.join(bad)} (supported: {', '.join(SUPPORTED)})")
    cache = cache_root(cache_dir)
    report = []
    for src in sources:
        if src == "looks":
            report += build_looks(cache, licenses, progress=progress)
            continue
        manifest = BUILT_PACKS[src]
        entries = [e for e in load_manifest(manifest).assets if licenses is None or matches_any(e.license, licenses)]
        todo = [e for e in entries if force or not _done(cache, e.id)]
        report += [f"{e.id}: cached" for e in entries if e not in todo]
        if todo:
            root = fetch_package(SUPPORTED[src], cache)
            report += BUILDERS[src](todo, root, cache)
    return report


def _done(cache: Path, asset_id: str) -> bool:
    """Built with the current mesh layout (older builds lack textures and are redone)."""
    p = built_path(cache, asset_id)
    return p.with_suffix(".json").exists() and normalize.npz_version(p) >= normalize.CACHE_VERSION


def _build_sh3d(entries: list[AssetEntry], root: Path, cache: Path) -> list[str]:
    deb_name = (root / ".complete").read_text().strip()
    licenses = sh3d.copyright_licenses(root)
    catalogs: dict[str, dict] = {}
    out = []
    for e in tqdm(entries, desc="assets build", disable=len(entries) < 3, leave=False):
        lib = e.build.library
        sh3f = root / sh3d.FURNITURE_DIR / f"{lib}.sh3f"
        if not sh3f.exists():
            raise AssetError(f"{BUILT_PACKS['sh3d']}: asset {e.id!r}: library {lib!r} not in {deb_name}")
        if lib not in catalogs:
            catalogs[lib] = sh3d.read_catalog(sh3f)
        cat = catalogs[lib].get(e.build.model)
        if cat is None:
            raise AssetError(f"{BUILT_PACKS['sh3d']}: asset {e.id!r}: build.model {e.build.model!r} not in {lib}'s catalog")
        lic = licenses.get(lib)
        if lic != e.license:
            raise AssetError(
                f"{BUILT_PACKS['sh3d']}: asset {e.id!r}: manifest license {e.license!r} but "
                f"the package's copyright file says {lic!r} for {lib}/*"
            )
        out.append(_convert(e, sh3f, cat, lic, deb_name, cache))
    return out


def _convert(e: AssetEntry, sh3f: Path, cat: sh3d.CatalogEntry, lic: str, deb: str, cache: Path) -> str:
    work = cache / "sources" / "extracted" / cat.library
    obj = sh3d.extract_model(sh3f, cat.model, work)
    raw = normalize.load_scene(obj)
    if e.build.recolor is not None:
        raw = sh3d.recolor_raw(raw, e.build.recolor)
    f = raw.faces
    mesh = normalize.normalise_raw(
        raw,
        up=e.up,
        forward=e.forward,
        units_cm=UNITS_TO_CM[e.units],
        size=e.size,
        budget=budget_for(e),
        ground_offset_cm=e.ground_offset_cm,
        pre_rotation=cat.rotation,
        axis_scale=(cat.width, cat.height, cat.depth),
    )
    record = {
        "package": deb,
        "library": cat.library,
        "source_file": cat.model,
        "name": cat.name,
        "creator": cat.creator,
        "license": lic,
        "catalog_license": cat.catalog_license,
        "license_from": f"/{sh3d.COPYRIGHT} (Files: {cat.library}/*)",
        "triangles_source": int(len(f)),
        "attribution": f"{cat.name} by {cat.creator} (Sweet Home 3D {cat.library} library)",
    }
    return _save(e, mesh, record, cache)


def _build_0ad(entries: list[AssetEntry], root: Path, cache: Path) -> list[str]:
    deb = (root / ".complete").read_text().strip()
    lic, holder = zeroad.copyright_license(root), zeroad.copyright_holder(root)
    out = []
    for e in tqdm(entries, desc="assets build", disable=len(entries) < 3):
        if lic != e.license:
            raise AssetError(
                f"{BUILT_PACKS['0ad']}: asset {e.id!r}: manifest license {e.license!r} but "
                f"the package's copyright file says {lic!r}"
            )
        raw = zeroad.read_raw(root / zeroad.PUBLIC_ZIP, e.build.model, e.build.texture)
        f = raw.faces
        mesh = normalize.normalise_raw(
            raw,
            up=e.up,
            forward=e.forward,
            units_cm=UNITS_TO_CM[e.units],
            size=e.size,
            budget=budget_for(e),
            ground_offset_cm=e.ground_offset_cm,
        )
        name = Path(e.build.model).name.split(".")[0].replace("_mesh", "").capitalize()
        record = {
            "package": deb,
            "library": "public.zip",
            "source_file": e.build.model,
            "texture": e.build.texture,
            "name": name,
            "creator": holder,
            "license": lic,
            "license_from": f"/{zeroad.COPYRIGHT} (Files: *)",
            "triangles_source": int(len(f)),
            "attribution": f"{name} by {holder} (0 A.D.)",
        }
        out.append(_save(e, mesh, record, cache))
    return out


def _save(e: AssetEntry, mesh, record: dict, cache: Path) -> str:
    """Write mesh (.npz), a .glb copy and the JSON record; the record last, so it marks 'done'."""
    dest = built_path(cache, e.id)
    normalize.to_npz(mesh, dest)
    _write_glb(mesh, dest.with_suffix(".glb"))
    size = [round(float(x), 1) for x in (mesh.bounds()[1] - mesh.bounds()[0])]
    record = {"id": e.id, "class": e.cls, **record, "triangles": mesh.n_triangles, "size_cm": size}
    atomic_write_text(dest.with_suffix(".json"), json.dumps(record, indent=1))
    return (
        f"{e.id}: built {record['source_file']} by {record['creator']} ({record['license']}), "
        f"{record['triangles_source']} → {mesh.n_triangles} triangles, {size} cm"
    )


BUILDERS = {"sh3d": _build_sh3d, "0ad": _build_0ad}


def _write_glb(mesh, path: Path) -> None:
    """A GLB copy for other tools (vertex colours; UE axes and cm, so not glTF's Y-up metres)."""
    import trimesh

    tm = trimesh.Trimesh(mesh.vertices, mesh.faces, vertex_colors=mesh.colors, process=False)
    atomic_write_bytes(path, tm.export(file_type="glb"))


def missing_defaults(cache_dir=None) -> bool:
    """True when the default real assets (Sweet Home 3D pack, textures, HDRIs) are not all built."""
    cache = cache_root(cache_dir)
    return not all(_done(cache, e.id) for e in load_manifest(BUILT_PACKS["sh3d"]).assets) or not looks_complete(cache)


def ensure_defaults(cache_dir=None, progress: bool = True, say=None) -> bool:
    """Build the default real assets on first use (once; a lock serialises parallel callers).

    Returns True when they are ready. When they cannot be built (offline, no apt-get, a full
    disk) it says ONE line and returns False: the caller goes on with the procedural pack.
    """
    import fcntl
    import sys

    say = say or (lambda line: print(line, file=sys.stderr))
    cache = cache_root(cache_dir)
    if not missing_defaults(cache):
        return True
    try:
        cache.mkdir(parents=True, exist_ok=True)
        with open(cache / ".build.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if missing_defaults(cache):
                say(
                    f"sceneforge: first use: fetching real assets, textures and HDRIs into {cache} "
                    f"(~{DEFAULTS_DOWNLOAD_MB} MB download, ~{DEFAULTS_DISK_MB} MB on disk, about a minute, once)"
                )
                build(list(DEFAULT_SOURCES), cache, progress=progress)
        return True
    except (AssetError, ConfigError, OSError) as e:
        say(
            f"sceneforge: real assets unavailable ({str(e).splitlines()[0] if str(e) else type(e).__name__}); "
            "using the procedural pack (retry with `sceneforge assets build`)"
        )
        return False
