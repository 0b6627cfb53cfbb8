"""Outputs in object storage: ``--out s3://bucket/prefix`` (any fsspec URL with a protocol).

Why a staging directory: scenarios write files with ``open``/``os.replace`` and skip samples
already on disk, the journal is SQLite and the job lock is ``flock``: all three need a POSIX file
system, which a bucket is not. So a job on a URL runs exactly like a local job in a staging
directory on the driver's machine (``$SCENEFORGE_FARM_STAGING/<hash of the URL>``, default under
the cache root), and :class:`Publisher` copies finished files to the bucket as shards are
journaled. The bucket then only ever holds complete objects:

- an object store PUT is atomic (a reader sees the whole object or none), and only complete
  staged files are sent (scenarios write to hidden temp names and rename; those are skipped);
- within a batch, images and masks go before the records (``.json`` ...) that describe them, and
  ``finalize``'s index files go after every sample (a second publish after ``finalize``);
- the journal is snapshotted *before* the files are scanned and uploaded *after* them, so the
  bucket's ``.farm/journal.sqlite`` never calls a shard done whose files are not there.

Resume: the same command re-uses the staging directory; from another machine (no staging), the
prefix is downloaded first and the job continues from the bucket's journal. Re-sent objects have
the same bytes (per-sample RNG), so a resume neither loses nor duplicates a sample.
A ``.farm/lock`` object says which host and pid run the job; see :meth:`RemoteOut.session`.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import socket
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from sceneforge.core.atomic import atomic_write_json
from sceneforge.core.errors import ConfigError, ConnectionFailed, PathSecurityError
from sceneforge.core.paths import cache_root, confined, relative_key

log = logging.getLogger(__name__)

_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")
#: Seconds between two publishes while a job runs (each scans the staging tree once).
PUBLISH_EVERY_S = float(os.environ.get("SCENEFORGE_PUBLISH_EVERY_S", 10.0))
#: Record-like files go after the images/masks they describe.
RECORD_SUFFIXES = {".json", ".jsonl", ".csv", ".parquet", ".txt", ".yaml", ".yml"}
#: Farm files copied to the bucket (the rest of ``.farm/`` is per-run scratch).
FARM_FILES = ("job.json", "summary.json")
STATE = "published.json"
LOCK_KEY = ".farm/lock"


def is_remote(out: str | os.PathLike) -> bool:
    """True for ``s3://...`` and other fsspec URLs (``file://`` is a local path)."""
    text = str(out)
    return bool(_URL.match(text)) and not text.startswith("file://")


def staging_dir(url: str) -> Path:
    """Where a job on ``url`` stages its files: one directory per URL, stable across runs."""
    root = os.environ.get("SCENEFORGE_FARM_STAGING") or cache_root() / "farm-staging"
    return Path(root) / hashlib.sha256(url.encode()).hexdigest()[:16]


class RemoteOut:
    """A dataset URL, its fsspec file system and its staging directory."""

    def __init__(self, url: str):
        self.url = _check_url(str(url))
        try:
            import fsspec

            # no instance or listing cache: a resume in the same process must see the bucket as it is
            self.fs, self.root = fsspec.core.url_to_fs(self.url, skip_instance_cache=True, use_listings_cache=False)
        except ImportError as e:
            raise ConfigError(
                f"--out {self.url}: needs fsspec and the protocol's package (pip install 'sceneforge[s3]'): {e}"
            ) from None
        except ValueError as e:
            raise ConfigError(f"--out {self.url}: {e}") from None
        self.staging = staging_dir(self.url)

    def key(self, rel: str) -> str:
        return f"{self.root}/{rel}"

    @contextmanager
    def session(self) -> Iterator[None]:
        """Hold ``.farm/lock`` in the bucket for the job's life (host, pid, staging dir inside).

        A lock left by a dead job on this host is taken over; one from another host is refused in
        one line (delete the object if that job is gone). Buckets have no ``flock``: two hosts
        starting at the same second can both pass, so keep one job per prefix."""
        self._acquire()
        try:
            yield
        finally:
            try:
                self.fs.rm(self.key(LOCK_KEY))
            except (OSError, FileNotFoundError) as e:
                log.warning("%s: could not remove %s (%s)", self.url, LOCK_KEY, e)

    def _acquire(self) -> None:
        me = {"host": socket.gethostname(), "pid": os.getpid(), "staging": str(self.staging), "since": round(time.time(), 3)}
        holder = self._read_json(LOCK_KEY)
        if holder and not _stale(holder):
            raise ConfigError(
                f"{self.url}: another farm job holds {self.url}/{LOCK_KEY} (host "
                f"{holder.get('host')}, pid {holder.get('pid')}); wait for it, or delete "
                "that object if the job is gone"
            )
        if holder:
            log.warning("%s: taking over the lock of a dead job (pid %s)", self.url, holder.get("pid"))
        self._call("write", self.fs.pipe, self.key(LOCK_KEY), json.dumps(me).encode())

    def _read_json(self, rel: str) -> dict | None:
        try:
            return json.loads(self._call("read", self.fs.cat_file, self.key(rel)))
        except FileNotFoundError:
            return None
        except ValueError:
            return {}

    def _call(self, what: str, fn, *args):
        try:
            return fn(*args)
        except FileNotFoundError as e:
            if what in ("read", "list"):
                raise  # an absent object: the caller's answer (no lock, no job yet)
            raise ConfigError(
                f"--out {self.url}: cannot {what} {args[1] if what == 'upload' else args[0]}: "
                f"{' '.join(str(e).split())[:200]} (does the bucket exist?)"
            ) from None
        except (OSError, PermissionError) as e:
            raise ConnectionFailed(
                f"--out {self.url}: cannot {what} {args[0]} ({type(e).__name__}: {' '.join(str(e).split())[:200]})"
            ) from None

    def pull_if_new(self) -> int:
        """A fresh staging directory on a job the bucket already holds: download it (the resume
        from another machine). Returns the number of files fetched."""
        if (self.staging / "job.json").exists() or self._read_json("job.json") is None:
            return 0
        keys = [k for k in self._call("list", self.fs.find, self.root) if not k.endswith(LOCK_KEY)]
        # every key checked before the first byte is written (issue 48: a key with '..' or an
        # empty component wrote outside the staging directory, before the job config was read)
        dests = {k: confined(self.staging, self._rel(k)) for k in keys}
        sent = {}
        for k in keys:
            rel, dest = self._rel(k), dests[k]
            dest.parent.mkdir(parents=True, exist_ok=True)
            self._call("download", self.fs.get_file, k, str(dest))
            st = dest.stat()
            sent[rel] = [st.st_size, st.st_mtime_ns]
        atomic_write_json(self.staging / ".farm" / STATE, sent)  # already in the bucket
        log.warning("%s: resumed from the bucket (%d files fetched into %s)", self.url, len(keys), self.staging)
        return len(keys)

    def _rel(self, key: str) -> str:
        """A listed key's path below the prefix; PathSecurityError (one line) for a key that is
        not a plain relative path below it."""
        what = f"--out {self.url}: bucket object"
        if not key.startswith(self.root + "/"):
            raise PathSecurityError(f"{what} {key[:120]!r}: not below the prefix {self.root}; refused, nothing written")
        return relative_key(key[len(self.root) + 1 :], what)


def _check_url(url: str) -> str:
    """``url`` without trailing slashes, once it names a bucket (or host) and a plain path."""
    text = url.rstrip("/")
    m = _URL.match(text)
    rest = text[m.end() :] if m else ""
    parts = rest.split("/")
    if not rest or not parts[0] or any(p in ("", ".", "..") for p in parts):
        raise ConfigError(f"--out {url}: expected PROTOCOL://BUCKET[/PREFIX] with a bucket name and no empty, '.' or '..' parts")
    return text


def _stale(holder: dict) -> bool:
    """A lock of this host whose pid is gone (or this process itself)."""
    if holder.get("host") != socket.gethostname():
        return False
    pid = holder.get("pid")
    if pid == os.getpid():
        return True
    try:
        os.kill(int(pid), 0)
        return False
    except (ProcessLookupError, TypeError, ValueError):
        return True
    except PermissionError:
        return False


class Publisher:
    """Copies finished staged files to the bucket, each once per content (size, mtime)."""

    def __init__(self, remote: RemoteOut, every_s: float = PUBLISH_EVERY_S):
        self.remote = remote
        self.every_s = every_s
        self.staging = remote.staging
        self._state_path = self.staging / ".farm" / STATE
        self._sent = self._load_state()
        self._last = float("-inf")
        self.objects = 0

    def maybe_publish(self) -> None:
        """Called after each journaled shard: publish at most every ``every_s`` seconds."""
        if time.monotonic() - self._last >= self.every_s:
            self.publish()

    def publish(self) -> int:
        """One pass: journal snapshot, new files (images before records), then the snapshot."""
        self._last = time.monotonic()
        snapshot = self._snapshot_journal()
        todo = sorted(self._changed(), key=lambda rel: (Path(rel).suffix in RECORD_SUFFIXES, rel))
        for rel in todo:
            path = self.staging / rel
            self.remote._call("upload", self.remote.fs.put_file, str(path), self.remote.key(rel))
            st = path.stat()
            self._sent[rel] = [st.st_size, st.st_mtime_ns]
        if snapshot is not None:
            self.remote._call("upload", self.remote.fs.put_file, str(snapshot), self.remote.key(".farm/journal.sqlite"))
            snapshot.unlink()
        if todo:
            atomic_write_json(self._state_path, self._sent)
        self.objects += len(todo)
        return len(todo)

    def _changed(self) -> list[str]:
        out = []
        for rel in _dataset_files(self.staging):
            st = (self.staging / rel).stat()
            if self._sent.get(rel) != [st.st_size, st.st_mtime_ns]:
                out.append(rel)
        return out

    def _snapshot_journal(self) -> Path | None:
        src_path = self.staging / ".farm" / "journal.sqlite"
        if not src_path.exists():
            return None
        dst_path = self.staging / ".farm" / ".journal.snapshot"
        dst_path.unlink(missing_ok=True)
        src, dst = sqlite3.connect(src_path), sqlite3.connect(dst_path)
        try:
            src.backup(dst)
        finally:
            src.close()
            dst.close()
        return dst_path

    def _load_state(self) -> dict[str, list[int]]:
        try:
            return json.loads(self._state_path.read_text())
        except (OSError, ValueError):
            return {}


def _dataset_files(root: Path) -> Iterator[str]:
    """Complete files to publish: the dataset's, plus the farm's manifest and summary. Hidden
    names and ``*.tmp`` are writers' temp files (never complete); the rest of ``.farm/`` (lock,
    logs, worker status, server scratch) is per-run."""
    for name in FARM_FILES:
        if (root / ".farm" / name).is_file():
            yield f".farm/{name}"
    for dirpath, dirnames, filenames in os.walk(root):
        rel_dir = os.path.relpath(dirpath, root)
        if rel_dir == ".":
            dirnames[:] = [d for d in dirnames if d != ".farm"]
        dirnames[:] = [d for d in dirnames if not d.startswith(".")]
        for f in filenames:
            if not f.startswith(".") and not f.endswith(".tmp"):
                yield f if rel_dir == "." else f"{rel_dir}/{f}"
