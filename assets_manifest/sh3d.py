"""Reading Debian's ``sweethome3d-furniture``: catalogs, licenses, and one model's files.

The package ships five furniture libraries as ``.sh3f`` zip files. Each holds a
``PluginFurnitureCatalog.properties`` (``key#N=value`` lines: model path, width/depth/height in
cm, creator, an optional 3x3 ``modelRotation``) plus a library-level ``license=`` line, and the
package's ``/usr/share/doc/sweethome3d-furniture/copyright`` gives each library's license in
machine-readable form. Both are read here, never guessed.
"""

from __future__ import annotations

import re
import zipfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from sceneforge.assets_manifest.materials import material_srgb, srgb_to_linear
from sceneforge.core.errors import AssetError

PACKAGE = "sweethome3d-furniture"
FURNITURE_DIR = Path("usr/share/sweethome3d/furniture")
COPYRIGHT = Path("usr/share/doc/sweethome3d-furniture/copyright")
# debian/copyright license names → our lower-case SPDX-like tags
LICENSE_TAGS = {"cc-by-3.0-usa": "cc-by-3.0-us", "cc-by-3.0": "cc-by-3.0", "cc0": "cc0-1.0"}


@dataclass(frozen=True)
class CatalogEntry:
    library: str
    name: str
    model: str  # path inside the .sh3f, without leading "/"
    creator: str
    width: float  # cm, model X
    depth: float  # cm, model Z
    height: float  # cm, model Y
    rotation: np.ndarray | None  # 3x3 modelRotation (row-major), or None
    catalog_license: str  # the library's ``license=`` line


def read_catalog(sh3f: Path) -> dict[str, CatalogEntry]:
    """Entries of one library keyed by model path."""
    with zipfile.ZipFile(sh3f) as z:
        text = z.read("PluginFurnitureCatalog.properties").decode("latin-1")
    header, items = {}, {}
    for line in text.splitlines():
        m = re.match(r"^(\w+)#(\d+)=(.*)$", line)
        if m:
            items.setdefault(int(m.group(2)), {})[m.group(1)] = m.group(3).strip()
        elif "=" in line and not line.startswith("#"):
            k, v = line.split("=", 1)
            header[k.strip()] = v.strip()
    lib = sh3f.stem
    out = {}
    for e in items.values():
        if "model" not in e:
            continue
        rot = np.array([float(x) for x in e["modelRotation"].split()]).reshape(3, 3) if "modelRotation" in e else None
        model = e["model"].lstrip("/")
        out[model] = CatalogEntry(
            lib,
            e.get("name", ""),
            model,
            e.get("creator", ""),
            float(e["width"]),
            float(e["depth"]),
            float(e["height"]),
            rot,
            header.get("license", ""),
        )
    return out


def copyright_licenses(root: Path) -> dict[str, str]:
    """``Files: <Library>/*`` stanza → license tag, from the package's copyright file."""
    path = root / COPYRIGHT
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as e:
        raise AssetError(f"{path}: cannot read the package's copyright file ({e})") from e
    out, files = {}, None
    for line in text.splitlines():
        if line.startswith("Files:"):
            files = line.split(":", 1)[1].strip()
        elif line.startswith("License:") and files:
            name = line.split(":", 1)[1].strip().lower()
            lib = files.split("/")[0]
            out[lib] = LICENSE_TAGS.get(name, name)
            files = None
    return out


def extract_model(sh3f: Path, model: str, dest: Path) -> Path:
    """Extract the model's folder (OBJ, MTL, textures, per-model license) to ``dest``."""
    folder = model.rsplit("/", 1)[0] + "/"
    with zipfile.ZipFile(sh3f) as z:
        members = [n for n in z.namelist() if n.startswith(folder) and not n.endswith("/")]
        if model not in members:
            raise AssetError(f"{sh3f.name}: model {model!r} not found in the library")
        for n in members:
            target = (dest / n).resolve()
            if not str(target).startswith(str(dest.resolve())):
                raise AssetError(f"{sh3f.name}: unsafe path {n!r} in archive")
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(z.read(n))
    return dest / model


def recolor(colors: np.ndarray, rgb) -> np.ndarray:
    """Repaint the dominant saturated colour (a car's body paint) with ``rgb``.

    Turns a generic red sedan into a yellow taxi while leaving glass, tyres and chrome alone.
    """
    c = colors.astype(float)
    mx, mn = c.max(axis=1), c.min(axis=1)
    saturated = (mx > 60) & ((mx - mn) / np.maximum(mx, 1) > 0.4)
    if not saturated.any():
        return colors
    uniq, counts = np.unique(colors[saturated], axis=0, return_counts=True)
    paint = uniq[np.argmax(counts)].astype(float)
    near = np.linalg.norm(c - paint, axis=1) < 60
    out = colors.copy()
    shade = (c[near].max(axis=1) / max(paint.max(), 1))[:, None]
    out[near] = (np.asarray(rgb, float)[None, :] * np.clip(shade, 0.4, 1.2)).clip(0, 255).astype(np.uint8)
    return out


def recolor_raw(raw, rgb):
    """:func:`recolor` on a loaded mesh: the fallback face colours and the untextured materials
    whose colour is the paint (the car body) get ``rgb``; textured materials stay as they are."""
    from dataclasses import replace

    new_fc = recolor(raw.face_colors, rgb)
    changed = np.any(new_fc != raw.face_colors, axis=1)
    mats = list(raw.materials)
    if raw.face_materials is not None and changed.any():
        for i, m in enumerate(mats):
            sel = raw.face_materials == i
            if m.albedo is None and sel.any() and changed[sel].mean() > 0.5:
                shade = float(material_srgb(m).max()) / max(float(np.max(raw.face_colors[sel & changed])), 1.0)
                paint = np.clip(np.asarray(rgb, float) / 255 * np.clip(shade, 0.4, 1.2), 0, 1)
                mats[i] = replace(m, base_color=tuple(srgb_to_linear(paint).tolist()) + (m.base_color[3],))
    raw.face_colors, raw.materials = new_fc, mats
    return raw
