"""Reading Debian's ``0ad-data``: PMD meshes and DDS skins from ``public.zip``.

0 A.D. ships its art pre-converted: meshes as ``*.dae.cached.pmd`` (a small binary format:
positions, normals, UV sets, blend weights, then uint16 triangles) and textures as
``*.png.cached.dds`` (DXT-compressed, which Pillow decodes). Models are Y-up and face +Z, in game
units (about a metre), so manifest entries give a real ``size``. Everything in ``public.zip`` is
CC-BY-SA-3.0 (Wildfire Games), read from the package's copyright file like the Sweet Home 3D
licenses.
"""

from __future__ import annotations

import io
import re
import struct
import zipfile
from pathlib import Path

import numpy as np

from sceneforge.assets_manifest import materials as M
from sceneforge.assets_manifest.normalize import GREY, RawMesh, bake_face_colors
from sceneforge.core.errors import AssetError

PACKAGE = "0ad-data"
PUBLIC_ZIP = Path("usr/share/games/0ad/mods/public/public.zip")
COPYRIGHT = Path("usr/share/doc/0ad-data/copyright")


def parse_pmd(data: bytes) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(positions (N,3), faces (M,3), uv (N,2)) from PMD bytes (versions 3 and 4)."""
    if data[:4] != b"PSMD":
        raise AssetError(f"not a PMD mesh (magic {data[:4]!r})")
    version, _size = struct.unpack_from("<II", data, 4)
    off = 12
    (nv,) = struct.unpack_from("<I", data, off)
    off += 4
    n_uv = 1
    if version >= 4:
        (n_uv,) = struct.unpack_from("<I", data, off)
        off += 4
    stride = 12 + 12 + 8 * n_uv + 4 + 16  # position, normal, uv sets, bone ids, bone weights
    try:
        verts = np.frombuffer(data, np.uint8, nv * stride, off).reshape(nv, stride)
        off += nv * stride
        (nf,) = struct.unpack_from("<I", data, off)
        faces = np.frombuffer(data, "<u2", nf * 3, off + 4).reshape(nf, 3).astype(np.int64)
    except (ValueError, struct.error) as e:
        raise AssetError(f"truncated PMD mesh ({e})") from e
    pos = verts[:, 0:12].copy().view("<f4").reshape(nv, 3).astype(float)
    uv = verts[:, 24:32].copy().view("<f4").reshape(nv, 2).astype(float)
    return pos, faces, uv


def read_model(public_zip: Path, mesh: str, texture: str | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(vertices, faces, per-face colours) for a PMD mesh and its DDS skin inside public.zip."""
    raw = read_raw(public_zip, mesh, texture)
    return raw.vertices, raw.faces, raw.face_colors


def copyright_license(root: Path) -> str:
    """The license of ``Files: *`` in the package's copyright file, as a lower-case tag."""
    path = root / COPYRIGHT
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as e:
        raise AssetError(f"{path}: cannot read the package's copyright file ({e})") from e
    files = None
    for line in text.splitlines():
        if line.startswith("Files:"):
            files = line.split(":", 1)[1].strip()
        elif line.startswith("License:") and files == "*":
            return line.split(":", 1)[1].strip().lower()
    raise AssetError(f"{path}: no 'Files: *' license stanza")


def copyright_holder(root: Path) -> str:
    """The copyright holder of ``Files: *`` without the years (the creator to credit)."""
    text = (root / COPYRIGHT).read_text(encoding="utf-8", errors="replace")
    files = None
    for line in text.splitlines():
        if line.startswith("Files:"):
            files = line.split(":", 1)[1].strip()
        elif line.startswith("Copyright:") and files == "*":
            return re.sub(r"^[\d\s,\-]+", "", line.split(":", 1)[1]).strip() or "Wildfire Games"
    return "Wildfire Games"


def read_raw(public_zip: Path, mesh: str, texture: str | None):
    """The PMD mesh with its UVs and DDS skin as a textured :class:`normalize.RawMesh`."""
    from PIL import Image

    with zipfile.ZipFile(public_zip) as z:
        try:
            pos, faces, uv = parse_pmd(z.read(mesh))
            img = Image.open(io.BytesIO(z.read(texture))) if texture else None
        except KeyError as e:
            raise AssetError(f"{public_zip.name}: {e.args[0]}") from None
    if img is None:
        return RawMesh(pos, faces, np.tile(GREY, (len(faces), 1)))
    # PMD UVs have v pointing down the image (DirectX convention), the opposite of OpenGL's.
    uv = uv * np.array([1.0, -1.0]) + np.array([0.0, 1.0])
    mat = M.Material(name=Path(texture).stem, albedo=M.image_array(img, keep_alpha=False), roughness=0.85)
    raw = RawMesh(pos, faces, np.zeros((len(faces), 3), np.uint8), uv, [mat], np.zeros(len(faces), np.int32))
    raw.face_colors = bake_face_colors(uv, faces, raw.face_materials, raw.materials)
    return raw
