"""A study's results: ``DIR/results.jsonl`` (one line per finished row) and ``DIR/study.json``
(what makes the rows comparable: protocol, data fingerprints, versions).

Why a line per row, appended: a study runs for days and is killed (``kill -9``, a lost machine);
every finished row must survive, and a row in progress must not leave half a line that poisons
the file. A row is appended with one ``write`` of the whole line (``O_APPEND``); a torn last line
(no newline, or not JSON) is cut off when the file is opened again, so at most the row in
progress is lost. Rows hold no timings (those go to ``timings.jsonl``): the same study run twice,
or killed and resumed, writes the same bytes.

A row's identity (:func:`row_key`) is (kind, backbone, dataset, env, task, layer, n_train): a
resumed study skips the rows whose key is there, ``merge`` refuses to mix two rows of one key
measured differently, and rows of several machines merge into one table when their protocol and
data fingerprints agree (:func:`merge`).
"""

from __future__ import annotations

import json
import os
import platform
import re
import shutil
from pathlib import Path

from sceneforge.core.atomic import atomic_write_text
from sceneforge.core.errors import ConfigError
from sceneforge.core.version import __version__

RESULTS, HEADER, TIMINGS = "results.jsonl", "study.json", "timings.jsonl"
KEY_FIELDS = ("kind", "backbone", "dataset", "env", "task", "layer", "n_train")
FORMAT = 1


def row_key(row: dict) -> tuple:
    return tuple(row[k] for k in KEY_FIELDS)


def row_id(row: dict) -> str:
    """File-name-safe id of a row (its grid records: ``DIR/runs/<run id>/rows/<row id>.json``)."""
    raw = f"{row['backbone']}__{row['dataset']}__{row['env']}_{row['task']}__L{row['layer']}__n{row['n_train']}"
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", raw)


def run_id(row: dict) -> str:
    """The run a row belongs to: one backbone on one dataset at one n_train, every layer and
    (env, task) of it; ``DIR/runs/<run id>/report.html`` is probe's report of that run."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", f"{row['backbone']}__{row['dataset']}__n{row['n_train']}")


def versions() -> dict:
    """What produced the rows (recorded in study.json; a reader sees when two files differ)."""
    out = {"sceneforge": __version__, "python": platform.python_version()}
    for mod in ("torch", "timm", "transformers", "numpy"):
        try:
            out[mod] = __import__(mod).__version__
        except Exception:  # an optional package absent: not part of this study
            continue
    return out


def read_rows(path: Path, repair: bool = False) -> list[dict]:
    """Every complete row of a results file; a torn last line (a kill mid-write) is dropped, and
    cut from the file with ``repair`` (so the next append starts on a fresh line)."""
    path = Path(path)
    if not path.is_file():
        return []
    data = path.read_bytes()
    rows, good = [], 0
    for line in data.splitlines(keepends=True):
        if not line.endswith(b"\n"):
            break
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError:
            if good + len(line) == len(data):
                break  # a torn last line that happens to end in a newline
            raise ConfigError(f"{path}: line {len(rows) + 1} is not a JSON row (edited by hand?)") from None
        good += len(line)
    if repair and good != len(data):
        with path.open("r+b") as fh:
            fh.truncate(good)
    return rows


def append_row(path: Path, row: dict) -> None:
    """One row, one ``write`` of the whole line, flushed to disk."""
    line = (json.dumps(row, sort_keys=True) + "\n").encode()
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line)
        os.fsync(fd)
    finally:
        os.close(fd)


def append_timing(out: Path, record: dict) -> None:
    with (Path(out) / TIMINGS).open("a") as fh:
        fh.write(json.dumps(record, sort_keys=True) + "\n")


_KEY = re.compile(r"^[0-9a-f]{32}$")  # probing.features.cache_key: a file name, never a path


def cache_records(out: Path) -> tuple[dict[str, dict[int, tuple]], dict[tuple[str, str, int], str]]:
    """From ``DIR/timings.jsonl``'s extraction records (written since keep_features): per backbone
    the token shapes it gave ``{layer: (tokens, prefix, width)}``, and per (backbone, dataset,
    layer) the cache key it wrote (only 32-hex names: a key is never a path)."""
    shapes: dict[str, dict[int, tuple]] = {}
    keys: dict[tuple[str, str, int], str] = {}
    path = Path(out) / TIMINGS
    if not path.is_file():
        return shapes, keys
    for line in path.read_text().splitlines():
        try:
            t = json.loads(line)
        except json.JSONDecodeError:  # a torn last line
            continue
        if not isinstance(t, dict) or t.get("what") != "extract":
            continue
        try:
            for layer, shape in (t.get("shapes") or {}).items():
                shapes.setdefault(str(t.get("backbone")), {})[int(layer)] = tuple(int(v) for v in shape)
            for layer, key in (t.get("cache") or {}).items():
                if _KEY.match(str(key)):
                    keys[(str(t.get("backbone")), str(t.get("dataset")), int(layer))] = str(key)
        except (TypeError, ValueError, AttributeError):  # a hand-edited record: not ours to trust
            continue
    return shapes, keys


def read_header(out: Path) -> dict | None:
    path = Path(out) / HEADER
    if not path.is_file():
        return None
    try:
        return json.loads(path.read_text())
    except json.JSONDecodeError as e:
        raise ConfigError(f"{path}: not JSON ({e})") from None


def write_header(out: Path, header: dict) -> None:
    atomic_write_text(Path(out) / HEADER, json.dumps(header, indent=1, sort_keys=True) + "\n")


def check_protocol(out: Path, header: dict | None, protocol: dict, fingerprint: str) -> None:
    """A study directory is one protocol: resuming it with another is refused, naming what changed."""
    if header is None or header.get("protocol_fingerprint") == fingerprint:
        return
    old = header.get("protocol", {})
    changed = sorted(k for k in set(old) | set(protocol) if old.get(k) != protocol.get(k))
    what = ", ".join(f"{k} {old.get(k)!r} -> {protocol.get(k)!r}" for k in changed[:3])
    raise ConfigError(f"{Path(out) / HEADER}: made with another protocol ({what}); use a new --out for this config")


def merge(sources: list[Path], out: Path) -> tuple[list[dict], dict]:
    """Rows of several study directories (or results files) as one table in ``out``.

    Refused, in one line: a different protocol, a dataset name whose data fingerprint differs
    between sources, and one row key measured with different numbers. Rows of one key that are
    equal (the same cell run on two machines) are kept once."""
    headers, tables = [], []
    for src in sources:
        src = Path(src)
        folder = src if src.is_dir() else src.parent
        header = read_header(folder)
        if header is None:
            raise ConfigError(f"{folder}: no {HEADER} (not a `sceneforge study` output directory)")
        rows_path = src / RESULTS if src.is_dir() else src
        if not rows_path.is_file():
            raise ConfigError(f"{rows_path}: no such results file")
        headers.append((folder, header))
        tables.append((folder, read_rows(rows_path)))
    first_dir, first = headers[0]
    datasets: dict[str, tuple[Path, str]] = {}
    for folder, h in headers:
        if h.get("protocol_fingerprint") != first.get("protocol_fingerprint"):
            old, new = first.get("protocol", {}), h.get("protocol", {})
            diff = sorted(k for k in set(old) | set(new) if old.get(k) != new.get(k))
            what = ", ".join(f"{k} {old.get(k)!r} vs {new.get(k)!r}" for k in diff[:3])
            raise ConfigError(f"merge: {folder} has another protocol than {first_dir} ({what}); its rows are not comparable")
        for name, d in (h.get("datasets") or {}).items():
            fp = d.get("fingerprint")
            if name in datasets and datasets[name][1] != fp:
                raise ConfigError(
                    f"merge: dataset {name} differs between {datasets[name][0]} and {folder} "
                    f"(data fingerprint {datasets[name][1]} vs {fp}); its rows are not comparable"
                )
            datasets.setdefault(name, (folder, fp))
    rows: dict[tuple, dict] = {}
    came_from: dict[tuple, Path] = {}
    for folder, table in tables:
        for r in table:
            key = row_key(r)
            if key in rows and _comparable(rows[key]) != _comparable(r):
                raise ConfigError(f"merge: row {dict(zip(KEY_FIELDS, key))} differs between the sources ({folder}): run it once")
            rows.setdefault(key, r)
            came_from.setdefault(key, folder)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    for key, r in rows.items():  # each row's run report travels with it
        run = came_from[key] / "runs" / run_id(r)
        if run.is_dir() and run.resolve() != (out / "runs" / run_id(r)).resolve():
            shutil.copytree(run, out / "runs" / run_id(r), dirs_exist_ok=True)
    merged = sorted(rows.values(), key=sort_key)
    header = dict(first)
    header["datasets"] = {}
    for _, h in headers:
        for name, d in (h.get("datasets") or {}).items():
            header["datasets"].setdefault(name, d)
    header["merged_from"] = [str(f) for f, _ in headers]
    header["versions_of_sources"] = {str(f): h.get("versions") for f, h in headers}
    header["versions"] = versions()
    write_header(out, header)
    atomic_write_text(out / RESULTS, "".join(json.dumps(r, sort_keys=True) + "\n" for r in merged))
    return merged, header


def _comparable(row: dict) -> dict:
    """A row as merge compares it: fields added after a row was written take the value every
    row written before them had (heads trained on the CPU before ``train_device`` existed)."""
    return {"train_device": "cpu", **row}


KIND_ORDER = {"model": 0, "random": 1, "layout": 2}


def sort_key(r: dict) -> tuple:
    return (r["task"], r["env"], KIND_ORDER.get(r["kind"], 9), r["backbone"], r["layer"], r["n_train"], r["dataset"])
