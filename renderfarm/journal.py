"""The job journal: which shard is done, which samples failed. The source of truth for resume.

Why SQLite in WAL mode with ``synchronous=FULL``: every shard completion is one committed
transaction that survives ``kill -9`` of any process (and a power cut), readers (``sceneforge farm
status``) never block the writer, and there is nothing to parse or repair after a crash: a
transaction either committed or it did not. Only the job's parent process writes; workers report
results back to it, so there is exactly one writer.

A shard row is ``pending`` until all its samples are either complete or permanently failed; it
then becomes ``done`` or ``failed`` with its :class:`~scenarios.contract.ShardResult` as JSON.
Re-running a job retries ``failed`` shards (the error may have been transient or fixed).
"""

from __future__ import annotations

import json
import sqlite3
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from sceneforge.core.errors import ConfigError
from sceneforge.scenarios.contract import Shard, ShardResult

_SCHEMA = """
CREATE TABLE IF NOT EXISTS shards (
    shard_id   INTEGER PRIMARY KEY,
    indices    TEXT NOT NULL,            -- JSON list of global sample indices
    status     TEXT NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'done', 'failed')),
    result     TEXT,                     -- JSON ShardResult once finished
    worker     TEXT,                     -- who finished it (logs only, never in dataset files)
    updated    REAL
);
CREATE TABLE IF NOT EXISTS failures (
    sample     INTEGER PRIMARY KEY,
    shard_id   INTEGER NOT NULL,
    attempts   INTEGER NOT NULL,
    error      TEXT NOT NULL
);
"""


@dataclass(frozen=True)
class ShardRow:
    """One line of ``farm status``."""

    shard_id: int
    n_samples: int
    first: int
    last: int
    status: str
    n_failed: int
    worker: str | None
    seconds: float


class Journal:
    """Crash-safe record of shard completion for one output directory."""

    def __init__(self, path: Path, *, readonly: bool = False):
        self.path = Path(path)
        if readonly:
            if not self.path.exists():
                raise ConfigError(f"{self.path}: no farm journal (was a job run with this --out?)")
            self._db = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True, timeout=30)
        else:
            self._db = sqlite3.connect(self.path, timeout=30, isolation_level=None)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=FULL")
            self._db.executescript(_SCHEMA)

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> "Journal":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- writing (parent process only) ------------------------------------------------------
    def add_shards(self, shards: list[Shard]) -> None:
        """Register the job's shards once; existing rows (a resumed job) are left untouched."""
        with self._tx():
            self._db.executemany(
                "INSERT OR IGNORE INTO shards (shard_id, indices) VALUES (?, ?)",
                [(s.shard_id, json.dumps(list(s.indices))) for s in shards],
            )

    def finish_shard(self, result: ShardResult, attempts: dict[int, int], worker: str) -> None:
        """Mark one shard done (or failed, if any sample failed for good) in one transaction."""
        status = "failed" if result.failed else "done"
        with self._tx():
            self._db.execute("DELETE FROM failures WHERE shard_id = ?", (result.shard_id,))
            self._db.executemany(
                "INSERT OR REPLACE INTO failures VALUES (?, ?, ?, ?)",
                [(i, result.shard_id, attempts.get(i, 0), err) for i, err in result.failed.items()],
            )
            self._db.execute(
                "UPDATE shards SET status = ?, result = ?, worker = ?, updated = ? WHERE shard_id = ?",
                (status, json.dumps(asdict(result), sort_keys=True), worker, time.time(), result.shard_id),
            )

    def _tx(self):
        return _Transaction(self._db)

    # -- reading ------------------------------------------------------------------------------
    def shards(self) -> list[Shard]:
        rows = self._db.execute("SELECT shard_id, indices FROM shards ORDER BY shard_id")
        return [Shard(sid, tuple(json.loads(ix))) for sid, ix in rows]

    def unfinished(self) -> list[Shard]:
        """Shards to (re)run: pending ones and those that ended with failed samples."""
        rows = self._db.execute("SELECT shard_id, indices FROM shards WHERE status != 'done' ORDER BY shard_id")
        return [Shard(sid, tuple(json.loads(ix))) for sid, ix in rows]

    def results(self) -> list[ShardResult]:
        rows = self._db.execute("SELECT result FROM shards WHERE result IS NOT NULL ORDER BY shard_id")
        return [_result_from_json(r) for (r,) in rows]

    def failures(self) -> dict[int, tuple[int, str]]:
        rows = self._db.execute("SELECT sample, attempts, error FROM failures ORDER BY sample")
        return {s: (a, e) for s, a, e in rows}

    def rows(self) -> list[ShardRow]:
        out = []
        for sid, ix, status, result, worker in self._db.execute(
            "SELECT shard_id, indices, status, result, worker FROM shards ORDER BY shard_id"
        ):
            idx = json.loads(ix)
            res = _result_from_json(result) if result else None
            out.append(
                ShardRow(
                    sid,
                    len(idx),
                    idx[0] if idx else -1,
                    idx[-1] if idx else -1,
                    status,
                    len(res.failed) if res else 0,
                    worker,
                    res.seconds if res else 0.0,
                )
            )
        return out


def _result_from_json(text: str) -> ShardResult:
    d = json.loads(text)
    d["failed"] = {int(k): v for k, v in d.get("failed", {}).items()}
    return ShardResult(**d)


class _Transaction:
    """``BEGIN IMMEDIATE`` … ``COMMIT`` (or ``ROLLBACK`` on error) on an autocommit connection."""

    def __init__(self, db: sqlite3.Connection):
        self._db = db

    def __enter__(self) -> None:
        self._db.execute("BEGIN IMMEDIATE")

    def __exit__(self, exc_type, *_exc) -> None:
        self._db.execute("ROLLBACK" if exc_type else "COMMIT")
