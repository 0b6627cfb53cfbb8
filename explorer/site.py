"""Write the explorer: static files that open from disk (``file://``) or through any web server.

Layout of the output directory::

    index.html, app.js, style.css   the page (no CDN, no framework: plain DOM + SVG)
    data/meta.js                    kind, counts, facet vocabularies, units, dataset-level stats
    data/index.js                   the filterable index: facet codes and numbers, one entry per sample
    data/shard_NNNN.js              details of samples [N*SHARD_SIZE, (N+1)*SHARD_SIZE)
    thumbs/<key>.jpg, depth/<key>.png   made once (media.py)

Data files are scripts (``window.SF_... = {...}``, shards call ``SF_SHARD(n, [...])``), not JSON
fetched by the page: Chromium refuses ``fetch()`` of ``file://`` URLs, while ``<script src>`` loads
them. Media are referenced by their path relative to the page, so nothing is copied.
"""

from __future__ import annotations

import json
import math
import os
import shutil
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from sceneforge.core.errors import ConfigError
from sceneforge.explorer import media
from sceneforge.explorer.table import Table, encode_facet

SHARD_SIZE = 256
STATIC = Path(__file__).with_name("static")
STATIC_FILES = ("index.html", "app.js", "style.css")


def _script(name: str, value: Any) -> str:
    return f"window.{name} = {json.dumps(value, separators=(',', ':'), allow_nan=False)};\n"


def _num(values: np.ndarray) -> list[float | None]:
    """Numbers for the index: 3 decimals (small files), NaN as null."""
    return [None if not math.isfinite(v) else round(float(v), 3) for v in np.asarray(values, float)]


def index_payload(table: Table) -> tuple[dict[str, Any], dict[str, Any]]:
    """(meta, index) of a table: what the page loads before it draws the grid."""
    vocab, codes = {}, {}
    for name, values in table.facets.items():
        vocab[name], codes[name] = encode_facet(values)
    meta = {
        "kind": table.kind,
        "n": len(table),
        "shard_size": SHARD_SIZE,
        "facets": vocab,
        "numbers": list(table.numbers),
        "units": table.units,
        "stats": table.stats,
    }
    index = {
        "key": list(table.keys),
        "facets": codes,
        "numbers": {k: _num(v) for k, v in table.numbers.items()},
        "has": {k: [int(bool(m.get(k))) for m in table.media] for k in ("mask", "depth")},
    }
    return meta, index


def _atomic_text(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        tmp.write_text(text)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)  # a full disk leaves no temp file behind
        raise


def make_media(table: Table, data_dir: Path, out_dir: Path, workers: int | None = None) -> dict[str, int]:
    """Thumbnails (and depth PNGs) not made yet; returns how many of each were written now."""
    (out_dir / "thumbs").mkdir(parents=True, exist_ok=True)
    (out_dir / "depth").mkdir(exist_ok=True)

    def one(i: int) -> tuple[int, int]:
        m, key = table.media[i], table.keys[i]
        src = data_dir / (m["image"] if m.get("image") else m["videos"]["std"])
        try:
            if m.get("image"):
                made = media.thumbnail(src, out_dir / "thumbs" / f"{key}.jpg")
            else:
                made = media.video_thumbnail(src, out_dir / "thumbs" / f"{key}.jpg")
            src = data_dir / m["depth"] if m.get("depth") else src
            depth = bool(m.get("depth")) and media.depth_png(src, out_dir / "depth" / f"{key}.png")
        except OSError as e:
            if e.errno in media.DISK_ERRNOS:
                raise  # the output side: the caller says so in one line
            raise ConfigError(f"{src}: sample {key}: cannot read it ({type(e).__name__}: {str(e)[:120]})") from None
        except (ValueError, StopIteration, SyntaxError, EOFError) as e:  # a corrupt image, depth map or video
            raise ConfigError(
                f"{src}: sample {key}: not a readable image/depth/video ({type(e).__name__}: {str(e)[:120]})"
            ) from None
        return int(made), int(depth)

    with ThreadPoolExecutor(max_workers=workers or os.cpu_count() or 1) as pool:
        done = list(pool.map(one, range(len(table))))
    return {"thumbnails": sum(d[0] for d in done), "depth": sum(d[1] for d in done)}


def write_shards(table: Table, data_dir: Path, out_dir: Path) -> int:
    """Per-sample details in shards of ``SHARD_SIZE``; returns the number of shards."""
    data = out_dir / "data"
    n_shards = math.ceil(len(table) / SHARD_SIZE)
    for s in range(n_shards):
        rows = []
        for i in range(s * SHARD_SIZE, min(len(table), (s + 1) * SHARD_SIZE)):
            d = table.details(i)
            d["media"] = table.media[i]
            rows.append(d)
        body = json.dumps(rows, separators=(",", ":"), default=_plain)
        _atomic_text(data / f"shard_{s:04d}.js", f"SF_SHARD({s}, {body});\n")
    return n_shards


def _plain(value: Any) -> Any:
    """numpy scalars/arrays in details → JSON."""
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    raise TypeError(f"not JSON: {type(value).__name__}")


def write_site(table: Table, data_dir: Path, out_dir: Path, *, name: str = "", media_files: bool = True) -> Path:
    """Write (or refresh) the explorer for ``table`` in ``out_dir``; returns its ``index.html``."""
    data_dir, out_dir = Path(data_dir).resolve(), Path(out_dir).resolve()
    if out_dir.exists() and not out_dir.is_dir():
        raise ConfigError(f"--out {out_dir}: exists and is not a directory")
    if len(table) == 0:
        raise ConfigError(f"{data_dir}: the dataset has no samples")
    (out_dir / "data").mkdir(parents=True, exist_ok=True)
    meta, index = index_payload(table)
    meta["name"] = name or data_dir.name
    meta["root"] = Path(os.path.relpath(data_dir, out_dir)).as_posix()
    _atomic_text(out_dir / "data" / "meta.js", _script("SF_META", meta))
    _atomic_text(out_dir / "data" / "index.js", _script("SF_INDEX", index))
    write_shards(table, data_dir, out_dir)
    if media_files:
        make_media(table, data_dir, out_dir)
    for f in STATIC_FILES:
        shutil.copyfile(STATIC / f, out_dir / f)
    return out_dir / "index.html"
