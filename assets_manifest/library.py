"""``AssetLibrary``: the asset ids a scene may use, their licenses, and their normalised meshes.

    >>> from assets_manifest import AssetLibrary
    >>> lib = AssetLibrary.default()          # built Debian assets where present, else procedural
    >>> lib.by_class("truck")[0].id
    'proc_truck'
    >>> lib.mesh("proc_truck").bounds()[1][0] * 2   # length in cm
    700.0

Meshes load lazily, once per process (in-memory dict), and mesh files are also cached on disk as
``.npz`` under ``$SCENEFORGE_CACHE`` (default ``~/.cache/sceneforge``) keyed by the file's size and
mtime plus the manifest entry, so a render server starts quickly the second time.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import threading
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from sceneforge.assets_manifest import looks, normalize
from sceneforge.assets_manifest.licenses import attribution_line, is_share_alike, matches_any
from sceneforge.assets_manifest.lod import simplified
from sceneforge.assets_manifest.lod_cache import LodCache
from sceneforge.assets_manifest.procedural import generate, pbr
from sceneforge.assets_manifest.schema import UNITS_TO_CM, AssetEntry, load_manifest
from sceneforge.core.errors import AssetError, ConfigError
from sceneforge.core.meshes import RenderMesh
from sceneforge.core.paths import cache_root

log = logging.getLogger(__name__)

PACKS_DIR = Path(__file__).parent / "packs"
PROCEDURAL_PACK = PACKS_DIR / "procedural.yaml"
BUILT_PACKS = {"sh3d": PACKS_DIR / "sh3d.yaml", "0ad": PACKS_DIR / "zeroad.yaml"}


def built_path(cache: Path, asset_id: str) -> Path:
    """Where ``sceneforge assets build`` puts an asset's normalised mesh."""
    return cache / "built" / f"{asset_id}.npz"


@dataclass(frozen=True)
class AssetInfo:
    """What a scene or dataset card needs to know about one asset."""

    id: str
    cls: str
    license: str
    attribution: str
    source: str
    origin: str  # "procedural" | "built" | "file"
    pack: str
    tags: tuple[str, ...] = ()
    unreal_class: str | None = None
    manifest: str = ""
    entry: AssetEntry | None = field(default=None, repr=False, compare=False)


class AssetLibrary:
    """Assets from one or more manifests; see the module docstring."""

    def __init__(self, entries: list[tuple[AssetEntry, Path, str]], cache_dir: Path, shadowed: set[str] | None = None):
        self._infos: dict[str, AssetInfo] = {}
        for entry, manifest, pack in entries:
            if entry.id in self._infos:
                raise ConfigError(f"{manifest}: asset id {entry.id!r} already defined in {self._infos[entry.id].manifest}")
            self._infos[entry.id] = _info(entry, manifest, pack)
        self._shadowed = set(shadowed or ())
        self.cache_dir = cache_dir
        self.license_filter = None  # licence families for HDRIs/textures (set by default())
        self._meshes: dict[str, RenderMesh] = {}
        self._lods: dict[tuple[str, int], RenderMesh] = {}
        self._lod_cache = None  # levels of detail on disk (lod_cache.LodCache), made on first use
        self._footprints: dict[str, np.ndarray] = {}
        self._lock = threading.Lock()

    # ---- construction ---------------------------------------------------------------------
    @classmethod
    def from_manifests(cls, paths, cache_dir=None, licenses=None) -> "AssetLibrary":
        """All assets of the given manifest files (optionally only some license families)."""
        entries = []
        for p in paths:
            m = load_manifest(p)
            entries += [(e, Path(p), m.pack) for e in m.assets if _license_ok(e, licenses)]
        return cls(entries, cache_root(cache_dir))

    @classmethod
    def procedural(cls, cache_dir=None) -> "AssetLibrary":
        """Only the shipped procedural pack (no files, no network)."""
        return cls.from_manifests([PROCEDURAL_PACK], cache_dir)

    @classmethod
    def default(cls, cache_dir=None, licenses=None, extra_manifests=()) -> "AssetLibrary":
        """Built assets where the cache has them (per class), procedural for the other classes.

        ``extra_manifests`` (user packs) add variants to their classes (and may declare new
        classes); unlike built assets they do not hide the procedural variants of a class. ``licenses`` (license
        families, e.g. ``["cc0", "cc-by"]``; None = all) is always explicit: render servers get the
        same filter as ``--licenses`` arguments, never through the environment. Procedural assets of a class
        that has built or user variants stay resolvable by id (old configs keep working) but are
        left out of :meth:`ids` and :meth:`by_class`.
        """
        cache = cache_root(cache_dir)
        entries, all_tags = [], set()
        for path in BUILT_PACKS.values():
            m = load_manifest(path)
            all_tags |= {e.license for e in m.assets}
            entries += [
                (_with_record(e, cache), path, m.pack)
                for e in m.assets
                if built_path(cache, e.id).exists() and _license_ok(e, licenses)
            ]
        # Built meshes replace the procedural stand-ins of their class; a user pack's assets *join*
        # their class instead (one user truck must not become the only truck of every scene: an
        # environment that wants exactly that asset names its id, see docs/environments.md).
        real_classes = {e.cls for e, _, _ in entries}
        for p in extra_manifests:
            m = load_manifest(p)
            all_tags |= {e.license for e in m.assets}
            entries += [(e, Path(p), m.pack) for e in m.assets if _license_ok(e, licenses)]
        proc = load_manifest(PROCEDURAL_PACK)
        all_tags |= {e.license for e in proc.assets}
        check_license_filter(licenses, all_tags)
        proc_entries = [(e, PROCEDURAL_PACK, proc.pack) for e in proc.assets if _license_ok(e, licenses)]
        shadowed = {e.id for e, _, _ in proc_entries if e.cls in real_classes}
        lib = cls(entries + proc_entries, cache, shadowed)
        lib.license_filter = licenses
        return lib

    # ---- queries ----------------------------------------------------------------------------
    def ids(self) -> list[str]:
        """Every resolvable asset id (sorted), including procedural fallbacks of classes that have
        built variants, so ids recorded in an older config keep working after a build."""
        return sorted(self._infos)

    def active_ids(self) -> list[str]:
        """The ids :meth:`by_class` draws from: built/user variants where a class has them."""
        return sorted(i for i in self._infos if i not in self._shadowed)

    def info(self, asset_id: str) -> AssetInfo:
        try:
            return self._infos[asset_id]
        except KeyError:
            raise AssetError(f"unknown asset id {asset_id!r} ({len(self._infos)} assets known)") from None

    def classes(self) -> list[str]:
        return sorted({self._infos[i].cls for i in self._infos})

    def by_class(self, cls: str) -> list[AssetInfo]:
        """Active variants of a class, sorted by id (stable across runs for seeded choices)."""
        return [self._infos[i] for i in self.active_ids() if self._infos[i].cls == cls]

    def resolve(self, name: str) -> str:
        """An asset id, or a class name → its first active variant (for ``vset /objects/spawn``)."""
        if name in self._infos:
            return name
        variants = self.by_class(name)
        if not variants:
            raise AssetError(f"{name!r} is neither an asset id nor a class in the library")
        return variants[0].id

    def attributions(self, ids) -> list[str]:
        """One line per distinct credit for the given assets (dataset cards)."""
        return sorted({attribution_line(self.info(i)) for i in ids})

    def licenses(self, ids) -> list[str]:
        return sorted({self.info(i).license for i in ids})

    def has_share_alike(self, ids) -> bool:
        """True if any of the assets is CC-BY-SA: the dataset card must say so."""
        return any(is_share_alike(self.info(i).license) for i in ids)

    def fingerprint(self) -> str:
        """Short hash of the active ids and their origins: record it so a dataset says which
        library (procedural only, or with built meshes) produced its images."""
        items = [(i, self._infos[i].origin, self._infos[i].source) for i in self.active_ids()]
        return hashlib.sha1(json.dumps(items).encode()).hexdigest()[:12]

    # ---- HDRIs and surface textures (assets_manifest/looks.py) --------------------------------
    def hdri_ids(self) -> list[str]:
        """HDRIs present in the cache (built from the registries), sorted; [] before a build."""
        return looks.hdri_ids(self.cache_dir, self.license_filter)

    def hdri(self, hdri_id: str) -> np.ndarray:
        """float32 (H, W, 3) linear equirectangular radiance (row 0 = up), read once per process."""
        return looks.hdri(self.cache_dir, hdri_id)

    def hdri_info(self, hdri_id: str) -> dict:
        return looks.hdri_info(hdri_id)

    def surface_ids(self) -> list[str]:
        return looks.surface_ids()

    def surface(self, surface_id: str):
        """A ground/facade surface as a core.meshes.Material: albedo + normal map, ``tile_cm``,
        ``license`` and ``attribution``. Always resolves (procedural albedo when not built)."""
        return looks.surface(self.cache_dir, surface_id, self.license_filter)

    def look_attributions(self, hdris=(), surfaces=()) -> list[dict]:
        """Card entries (kind, id, license, attribution) for the HDRIs and surfaces used."""
        return looks.attributions_for(hdris, surfaces, self.cache_dir, self.license_filter)

    # ---- geometry ---------------------------------------------------------------------------
    def mesh(self, asset_id: str) -> RenderMesh:
        """Normalised mesh (cm, UE axes, base z = 0, XY-centred); loaded once, then cached."""
        with self._lock:
            if asset_id not in self._meshes:
                self._meshes[asset_id] = self._load(self.info(asset_id))
            return self._meshes[asset_id]

    def mesh_lod(self, asset_id: str, budget: int) -> RenderMesh:
        """The mesh simplified to about ``budget`` triangles (a renderer's level of detail; see
        ``assets_manifest/lod.py``); computed once per process and budget, and kept on disk
        beside the built assets for later processes (``assets_manifest/lod_cache.py``)."""
        mesh = self.mesh(asset_id)
        with self._lock:
            key = (asset_id, int(budget))
            if key not in self._lods:
                if self._lod_cache is None:
                    self._lod_cache = LodCache(self.cache_dir)
                self._lods[key] = self._lod_cache.get(asset_id, mesh, int(budget), lambda: simplified(mesh, int(budget)))
            return self._lods[key]

    def footprint(self, asset_id: str) -> np.ndarray:
        """Convex hull of the mesh's XY projection, (N, 2) cm, counter-clockwise."""
        from scipy.spatial import ConvexHull

        if asset_id not in self._footprints:
            xy = self.mesh(asset_id).vertices[:, :2].astype(float)
            hull = ConvexHull(np.unique(xy.round(3), axis=0))
            self._footprints[asset_id] = hull.points[hull.vertices]
        return self._footprints[asset_id].copy()

    def size_cm(self, asset_id: str) -> tuple[float, float, float]:
        """(length along X, width along Y, height) in cm."""
        b = self.mesh(asset_id).bounds()
        return tuple(float(x) for x in (b[1] - b[0]))  # type: ignore[return-value]

    def _load(self, info: AssetInfo) -> RenderMesh:
        e = info.entry
        if e.procedural is not None:
            raw = generate(e.procedural.generator, e.procedural.params)
            return _finish(raw, e, self.surface)
        if e.build is not None:
            path = built_path(self.cache_dir, e.id)
            if not path.exists():
                raise AssetError(f"{info.manifest}: asset {e.id!r}: not built; run `sceneforge assets build`")
            return normalize.from_npz(path)
        return self._load_file(info)

    def _load_file(self, info: AssetInfo) -> RenderMesh:
        e = info.entry
        path = (Path(info.manifest).parent / e.mesh).resolve()
        if not path.is_file():
            raise AssetError(f"{info.manifest}: asset {e.id!r}: field mesh: file not found: {path}")
        st = path.stat()
        key = hashlib.sha1(
            json.dumps(
                [normalize.CACHE_VERSION, str(path), st.st_size, st.st_mtime_ns, e.model_dump(mode="json")], sort_keys=True
            ).encode()
        ).hexdigest()[:20]
        cached = self.cache_dir / "meshes" / f"{key}.npz"
        if cached.exists():
            return normalize.from_npz(cached)
        raw = normalize.load_scene(path)
        mesh = normalize.normalise_raw(
            raw,
            up=e.up,
            forward=e.forward,
            units_cm=UNITS_TO_CM[e.units],
            size=e.size,
            budget=budget_for(e),
            ground_offset_cm=e.ground_offset_cm,
        )
        try:
            normalize.to_npz(mesh, cached)
        except OSError as err:  # a read-only cache must not stop rendering
            log.warning("cannot write mesh cache %s: %s", cached, err)
        return mesh


def budget_for(e: AssetEntry) -> int:
    return e.triangle_budget or normalize.BUDGETS.get(e.cls, normalize.DEFAULT_BUDGET)


def _finish(raw: RenderMesh, e: AssetEntry, surface=None) -> RenderMesh:
    """Procedural meshes are already in UE cm; apply only the manifest's size and offset."""
    v = raw.vertices.astype(float) * UNITS_TO_CM[e.units]
    v = v @ normalize.axes_matrix(e.up, e.forward).T
    v = v * normalize.size_scale(v.max(axis=0) - v.min(axis=0), e.size)
    mesh = RenderMesh(normalize.ground_and_center(v, e.ground_offset_cm), raw.faces, raw.colors)
    return pbr.apply(mesh, e.cls, surface)  # noise albedo + roughness per part, facades, surfaces


def _with_record(e: AssetEntry, cache: Path) -> AssetEntry:
    """Credit a built asset from its build record (catalog creator, package, source file)."""
    try:
        rec = json.loads(built_path(cache, e.id).with_suffix(".json").read_text())
    except (OSError, ValueError):
        return e
    pkg = rec.get("package", "").removesuffix("_all.deb").replace("_", " ")
    src = f"Debian {pkg}: {rec.get('library', '')}/{rec.get('source_file', '')}"
    return e.model_copy(update={"attribution": rec.get("attribution", e.attribution), "source": src})


@functools.lru_cache(maxsize=32)
def check_licenses_known(licenses: tuple[str, ...], extra_manifests: tuple[str, ...] = ()) -> None:
    """:func:`check_license_filter` against every shipped pack (built or not) and ``extra_manifests``:
    cheap (YAML only), so callers can refuse a bad filter before they write anything."""
    tags = set()
    for path in (*BUILT_PACKS.values(), PROCEDURAL_PACK, *extra_manifests):
        tags |= {e.license for e in load_manifest(path).assets}
    check_license_filter(licenses, tags)


def check_license_filter(licenses, tags) -> None:
    """Refuse a filter token that matches no licence of any pack (``--licenses gpl``): without
    this the error surfaced later as "class 'rock' has no asset", hiding the typo."""
    if not licenses:
        return
    tokens = [t.strip() for t in (licenses.split(",") if isinstance(licenses, str) else licenses) if t.strip()]
    unknown = [t for t in tokens if not any(matches_any(tag, [t]) for tag in tags)]
    if unknown:
        families = sorted({_family(t) for t in tags})
        raise ConfigError(
            f"--licenses / licenses: unknown licence {', '.join(map(repr, unknown))}: no asset pack "
            f"has it; licence families present: {', '.join(families)}"
        )


def _family(tag: str) -> str:
    """``cc-by-3.0-us`` -> ``cc-by``: the part before the first version number."""
    parts = tag.split("-")
    for k, part in enumerate(parts):
        if part[:1].isdigit():
            return "-".join(parts[:k]) or tag
    return tag


def _license_ok(e: AssetEntry, licenses) -> bool:
    return licenses is None or matches_any(e.license, licenses)


def _info(e: AssetEntry, manifest: Path, pack: str) -> AssetInfo:
    origin = "procedural" if e.procedural else "built" if e.build else "file"
    return AssetInfo(
        id=e.id,
        cls=e.cls,
        license=e.license,
        attribution=e.attribution,
        source=e.source,
        origin=origin,
        pack=pack,
        tags=tuple(e.tags),
        unreal_class=e.unreal_class,
        manifest=str(manifest),
        entry=e,
    )


def shared_default_library(extra_manifests: tuple[str, ...] = (), licenses: tuple[str, ...] | None = None) -> AssetLibrary:
    """:meth:`AssetLibrary.default` shared within a process (environments of one job ask for the
    same one), keyed also by the asset cache in use and when its built packs last changed: a process
    that builds the real assets on first use (``generate``, ``demo``) or points ``$SCENEFORGE_CACHE``
    elsewhere never keeps drawing from a library listing the old content while its render server
    (started later) serves the new one."""
    root = cache_root()
    try:
        stamp = (root / "built").stat().st_mtime_ns
    except OSError:
        stamp = 0
    return _shared_default(str(root), stamp, tuple(extra_manifests), tuple(licenses) if licenses else None)


@functools.lru_cache(maxsize=8)
def _shared_default(root: str, stamp: int, extra_manifests: tuple[str, ...], licenses: tuple[str, ...] | None):
    return AssetLibrary.default(
        cache_dir=root, extra_manifests=list(extra_manifests), licenses=list(licenses) if licenses else None
    )
