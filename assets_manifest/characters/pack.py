"""The opt-in character pack: 0 A.D.'s people and animals, streamed out of Debian's ``0ad-data``.

    sceneforge assets install characters            # ~1.4 GB download, ~630 MB kept, minutes
    sceneforge assets install characters --from 0ad-data_0.0.26-1_all.deb   # no network

What it does (:func:`install`):

1. **Download** (unless ``--from``): ``apt-get download --print-uris 0ad-data`` names the URL,
   size and SHA-256 from the local package index; the .deb is fetched over HTTP into
   ``<cache>/debs/<file>.part`` with ``Range`` requests, so an interrupted download resumes where
   it stopped, and it is renamed into place only when its SHA-256 matches. With
   ``SCENEFORGE_NO_FETCH=1`` (or no network) it stops with one line and leaves nothing behind but
   the resumable partial file.
2. **Stream** the .deb without unpacking it: the ar archive's ``data.tar.*`` member is read as a
   tar stream; the package's copyright file comes first, then ``public.zip`` (3.2 GB, every entry
   *stored*), whose local headers are walked in order without its central directory. Only the
   character and animal art is kept (:data:`KEEP`: skeletal meshes, prop meshes, animations,
   actors, variants, skeletons, skeletal and prop skins) under ``<cache>/characters/``.
   Each file is written atomically; a rerun after an interrupt skips files already written.
3. **Record** the licence: ``pack.json`` (package, version, SHA-256, the ``Files: *`` licence of
   the copyright file, holder, attribution) and ``assets.jsonl`` (one line per kept mesh, clip
   and skin: path, bytes, licence, creator). A ``.complete`` marker is written last.

Licence: everything in ``public.zip`` is CC-BY-SA 3.0, © Wildfire Games. Images rendered with
these characters are adaptations: a dataset that contains them carries :func:`attribution` in its
card and README and says those images are CC-BY-SA (:func:`dataset_notice`).

The pack is never needed: without it sceneforge behaves as before (the procedural rigs stand in).
"""

from __future__ import annotations

import hashlib
import io
import json
import logging
import lzma
import os
import re
import shutil
import struct
import subprocess
import tarfile
import zlib
from pathlib import Path
from typing import BinaryIO, Callable

from sceneforge.core.atomic import atomic_write_bytes, atomic_write_text
from sceneforge.core.errors import AssetError
from sceneforge.core.paths import cache_root

log = logging.getLogger(__name__)

PACK = "characters"
PACKAGE = "0ad-data"
PUBLIC_ZIP = "usr/share/games/0ad/mods/public/public.zip"
COPYRIGHT = "usr/share/doc/0ad-data/copyright"
KEEP = (
    "art/animation/",
    "art/meshes/skeletal/",
    "art/meshes/props/",
    "art/actors/",
    "art/variants/",
    "art/skeletons/",
    "art/textures/skins/skeletal/",
    "art/textures/skins/props/",
    "art/LICENSE.txt",
)
SKIP_SUFFIX = (".xmb",)  # the game's binary XML caches: the .xml next to them is kept
LICENSE = "cc-by-sa-3.0"
HOLDER = "Wildfire Games"
SOURCE_URL = "https://play0ad.com"
LICENSE_URL = "https://creativecommons.org/licenses/by-sa/3.0/"
DOWNLOAD_MB = 1378
KEPT_MB = 630
CHUNK = 1 << 20
Progress = Callable[[int, int | None, str], None]  # (bytes done, total or None, what)


def pack_root(cache_dir=None) -> Path:
    """Where the pack lives: ``<cache>/characters`` (``$SCENEFORGE_CACHE`` by default)."""
    return cache_root(cache_dir) / PACK


def installed(cache_dir=None) -> dict | None:
    """The pack's ``pack.json`` when it is completely installed, else None."""
    root = pack_root(cache_dir)
    if not (root / ".complete").exists():
        return None
    try:
        return json.loads((root / "pack.json").read_text())
    except (OSError, ValueError):
        return None


def attribution(info: dict | None = None) -> str:
    """The credit line a dataset with characters carries."""
    holder = (info or {}).get("holder", HOLDER)
    version = (info or {}).get("version", "")
    pkg = f"{PACKAGE} {version}".strip()
    return (
        f"Characters and animals: 0 A.D. art © {holder} ({SOURCE_URL}), from Debian's {pkg}, "
        f"licensed CC-BY-SA 3.0 ({LICENSE_URL})."
    )


def dataset_notice(info: dict | None = None) -> str:
    """The paragraph for a dataset card / README whose samples contain a character."""
    return (
        f"{attribution(info)} The images and videos that show a character are adaptations of that "
        "art and are released under CC-BY-SA 3.0 as well (share alike); samples without a "
        "character keep the dataset's own licence. Which samples contain one is recorded per "
        "sample (`characters` in its record)."
    )


# --- download ------------------------------------------------------------------------------------
def print_uris(package: str = PACKAGE) -> tuple[str, str, int, str]:
    """(url, file name, size, sha256) of ``package`` from the local apt index."""
    if shutil.which("apt-get") is None:
        raise AssetError(f"`apt-get` not found: cannot locate {package} (pass --from {package}_*.deb)")
    r = subprocess.run(["apt-get", "download", "--print-uris", package], capture_output=True, text=True)
    m = re.search(r"'([^']+)'\s+(\S+)\s+(\d+)\s+SHA256:([0-9a-f]{64})", r.stdout)
    if r.returncode != 0 or m is None:
        last = (r.stderr.strip().splitlines() or ["no output"])[-1]
        raise AssetError(f"apt-get download --print-uris {package} failed (run `apt-get update`?): {last}")
    return m.group(1), m.group(2), int(m.group(3)), m.group(4)


def download(url: str, dest: Path, size: int, sha256: str, progress: Progress | None = None) -> Path:
    """Fetch ``url`` to ``dest`` through ``dest.part``, resuming a partial file with ``Range``;
    ``dest`` appears only with the right size and SHA-256."""
    import urllib.error
    import urllib.request

    part = dest.with_name(dest.name + ".part")
    dest.parent.mkdir(parents=True, exist_ok=True)
    have = part.stat().st_size if part.exists() else 0
    if have > size:
        part.unlink()
        have = 0
    if have < size:
        req = urllib.request.Request(url, headers={"Range": f"bytes={have}-"} if have else {})
        try:
            with urllib.request.urlopen(req, timeout=60) as resp:
                if have and resp.status != 206:  # the server ignored Range: start over
                    have = 0
                with open(part, "ab" if have else "wb") as f:
                    while True:
                        chunk = resp.read(CHUNK)
                        if not chunk:
                            break
                        f.write(chunk)
                        have += len(chunk)
                        if progress:
                            progress(have, size, "download")
        except (urllib.error.URLError, OSError, TimeoutError) as e:
            reason = getattr(e, "reason", e)
            raise AssetError(
                f"cannot download {url} ({reason}); {have / 1e6:.0f} of {size / 1e6:.0f} MB kept in {part}, a rerun resumes"
            ) from None
    h = hashlib.sha256()
    with open(part, "rb") as f:
        for chunk in iter(lambda: f.read(CHUNK), b""):
            h.update(chunk)
    if h.hexdigest() != sha256:
        part.unlink()
        raise AssetError(f"{dest.name}: SHA-256 mismatch (the download was corrupted and is deleted; rerun)")
    os.replace(part, dest)
    return dest


# --- streaming the .deb --------------------------------------------------------------------------
class _Window(io.RawIOBase):
    """A read-only window of ``size`` bytes of a file object, counting what was read."""

    def __init__(self, f: BinaryIO, size: int, progress: Progress | None):
        self.f, self.left, self.size, self.progress, self.done = f, size, size, progress, 0

    def readable(self) -> bool:
        return True

    def readinto(self, b) -> int:
        n = min(len(b), self.left)
        if n <= 0:
            return 0
        data = self.f.read(n)
        b[: len(data)] = data
        self.left -= len(data)
        self.done += len(data)
        if self.progress and (self.done % (8 * CHUNK) < len(data) or not self.left):
            self.progress(self.done, self.size, "unpack")
        return len(data)


def ar_member(f: BinaryIO, prefix: str) -> tuple[str, int]:
    """Advance ``f`` (an ar archive, a .deb) to the first member whose name starts with
    ``prefix``; returns (name, size)."""
    if f.read(8) != b"!<arch>\n":
        raise AssetError("not a Debian package (no ar magic)")
    while True:
        h = f.read(60)
        if len(h) < 60:
            raise AssetError(f"no {prefix}* member in the package")
        name = h[:16].decode("ascii", "replace").strip().rstrip("/")
        try:
            size = int(h[48:58].decode("ascii").strip())
        except ValueError:
            raise AssetError(f"bad ar header for {name!r}") from None
        if name.startswith(prefix):
            return name, size
        f.seek(size + (size & 1), os.SEEK_CUR)


def walk_zip(f: BinaryIO, keep: Callable[[str], bool], write: Callable[[str, bytes], None]) -> tuple[int, int]:
    """Walk a zip's local headers in order (no central directory: the zip is a stream here),
    calling ``write(name, data)`` for every kept file; (files, bytes) kept."""
    n = nbytes = 0
    while True:
        h = f.read(30)
        if len(h) < 30 or h[:4] != b"PK\x03\x04":
            return n, nbytes  # the central directory: every entry was seen
        flags, method = struct.unpack_from("<HH", h, 6)
        csize, usize, nlen, xlen = struct.unpack_from("<IIHH", h, 18)
        if flags & 8:
            raise AssetError("public.zip: an entry with a data descriptor (sizes unknown in its header)")
        name = f.read(nlen).decode("utf-8", "replace")
        f.read(xlen)
        if not keep(name):
            _skip(f, csize)
            continue
        data = f.read(csize)
        if method == 8:
            data = zlib.decompress(data, -15)
        elif method != 0:
            raise AssetError(f"public.zip: {name}: compression method {method} not supported")
        if len(data) != usize:
            raise AssetError(f"public.zip: {name}: truncated ({len(data)} of {usize} bytes)")
        write(name, data)
        n += 1
        nbytes += len(data)


def _skip(f: BinaryIO, n: int) -> None:
    while n > 0:
        chunk = f.read(min(n, CHUNK))
        if not chunk:
            raise AssetError("public.zip: truncated")
        n -= len(chunk)


def kept(name: str) -> bool:
    """True for the character / animal art the pack keeps."""
    return name.startswith(KEEP) and not name.endswith("/") and not name.endswith(SKIP_SUFFIX) and ".." not in name


def copyright_of(text: str) -> tuple[str, str]:
    """(licence, holder) of the ``Files: *`` stanza of a Debian copyright file."""
    files, lic, holder = None, None, HOLDER
    for line in text.splitlines():
        if line.startswith("Files:"):
            files = line.split(":", 1)[1].strip()
        elif files == "*" and line.startswith("License:") and lic is None:
            lic = line.split(":", 1)[1].strip().lower()
        elif files == "*" and line.startswith("Copyright:"):
            holder = re.sub(r"^[\d\s,\-]+", "", line.split(":", 1)[1]).strip() or HOLDER
    if lic is None:
        raise AssetError(f"{COPYRIGHT}: no 'Files: *' licence stanza")
    return lic, holder


def extract(deb: Path, staging: Path, progress: Progress | None = None) -> dict:
    """Stream ``deb`` and write the kept art under ``staging`` (files already there with the
    right size are kept: a rerun resumes). Returns the copyright text and counts."""
    found = {"copyright": None, "files": 0, "bytes": 0, "written": 0}

    def write(name: str, data: bytes) -> None:
        p = staging / name
        found["files"] += 1
        found["bytes"] += len(data)
        if p.exists() and p.stat().st_size == len(data):
            return
        p.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_bytes(p, data)
        found["written"] += 1

    try:
        _stream(deb, write, found, progress)
    except (tarfile.TarError, lzma.LZMAError, EOFError, zlib.error, OSError) as e:
        raise AssetError(
            f"{deb.name}: damaged or truncated package ({type(e).__name__}: {e}); files extracted so far are kept"
        ) from None
    if found["copyright"] is None:
        raise AssetError(f"{deb.name}: no {COPYRIGHT} before public.zip: not Debian's {PACKAGE}?")
    if found["files"] == 0:
        raise AssetError(f"{deb.name}: no character art in {PUBLIC_ZIP}: not Debian's {PACKAGE}?")
    return found


def _stream(deb: Path, write, found: dict, progress: Progress | None) -> None:
    """The tar stream of the .deb's data member: the copyright text, then public.zip's kept files."""
    with open(deb, "rb") as f:
        name, size = ar_member(f, "data.tar")
        if not name.endswith((".xz", ".gz", ".bz2", ".tar")):
            raise AssetError(f"{deb.name}: {name} is not a compression Python reads (xz, gz, bz2)")
        with tarfile.open(fileobj=io.BufferedReader(_Window(f, size, progress), CHUNK), mode="r|*") as tf:
            for m in tf:
                path = m.name.lstrip("./")
                if path == COPYRIGHT and m.isfile():
                    found["copyright"] = tf.extractfile(m).read().decode("utf-8", "replace")
                elif path == PUBLIC_ZIP and m.isfile():
                    walk_zip(tf.extractfile(m), kept, write)
                    break  # the last member of interest (the copyright file comes first)


def deb_version(deb: Path) -> str:
    m = re.match(rf"{re.escape(PACKAGE)}_([^_]+)_", deb.name)
    return m.group(1).replace("%3a", ":") if m else "unknown"


def asset_kind(path: str) -> str | None:
    if path.endswith(".pmd"):
        return "mesh"
    if path.endswith(".psa"):
        return "animation"
    if path.endswith(".dds"):
        return "texture"
    return None


def install(
    cache_dir=None,
    source: Path | None = None,
    force: bool = False,
    progress: Progress | None = None,
    fetch: bool = True,
) -> list[str]:
    """Install the pack (module docstring); returns report lines. ``source``: a local .deb (no
    network); ``fetch=False``: never download (the offline case stops with one line)."""
    root = pack_root(cache_dir)
    if installed(cache_dir) and not force:
        info = installed(cache_dir)
        return [f"characters: installed ({info['files']} files, {info['bytes'] / 1e6:.0f} MB in {root})"]
    cache = cache_root(cache_dir)
    cleanup = None
    if source is not None:
        deb = Path(source)
        if not deb.is_file():
            raise AssetError(f"--from {deb}: no such file")
        sha = None
    else:
        if not fetch:
            raise AssetError(
                f"the character pack needs a {DOWNLOAD_MB / 1000:.1f} GB download of Debian's {PACKAGE} and fetching is off "
                f"(SCENEFORGE_NO_FETCH); unset it, or pass --from {PACKAGE}_*.deb"
            )
        url, fname, size, sha = print_uris()
        deb = cache / "debs" / fname
        if not deb.exists():
            download(url, deb, size, sha, progress)
        cleanup = deb
    staging = cache / f"{PACK}.partial"
    staging.mkdir(parents=True, exist_ok=True)
    found = extract(deb, staging, progress)
    lic, holder = copyright_of(found["copyright"])
    if lic != LICENSE:
        raise AssetError(f"{deb.name}: {COPYRIGHT} says {lic!r} for Files: *, expected {LICENSE!r}")
    version = deb_version(deb)
    info = {
        "pack": PACK,
        "package": PACKAGE,
        "version": version,
        "deb": deb.name,
        "sha256": sha,
        "license": lic,
        "holder": holder,
        "license_from": f"/{COPYRIGHT} (Files: *)",
        "license_url": LICENSE_URL,
        "source_url": SOURCE_URL,
        "files": found["files"],
        "bytes": found["bytes"],
    }
    info["attribution"] = attribution(info)
    lines = []
    for p in sorted(staging.rglob("*")):
        rel = p.relative_to(staging).as_posix()
        kind = asset_kind(rel)
        if kind and p.is_file():
            lines.append(
                json.dumps(
                    {"path": rel, "kind": kind, "bytes": p.stat().st_size, "license": lic, "creator": holder}, sort_keys=True
                )
            )
    atomic_write_text(staging / "assets.jsonl", "\n".join(lines) + "\n")
    atomic_write_text(staging / "COPYRIGHT", found["copyright"])
    atomic_write_text(staging / "pack.json", json.dumps(info, indent=1, sort_keys=True))
    (staging / ".complete").write_text(deb.name)
    if root.exists():
        shutil.rmtree(root)
    os.replace(staging, root)
    if cleanup is not None:
        cleanup.unlink(missing_ok=True)  # the kept art is the cache; the .deb would cost 1.4 GB more
    return [
        f"characters: installed {found['files']} files ({found['bytes'] / 1e6:.0f} MB, {found['written']} written now) "
        f"from {deb.name} into {root}",
        f"characters: licence {lic}, © {holder}: {attribution(info)}",
    ]
