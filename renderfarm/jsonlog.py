"""Structured job log: one JSON object per line in ``OUT/.farm/log.jsonl``.

Why JSON lines: a crashed job leaves every line it wrote readable (append-only, one ``write`` per
record with ``O_APPEND``, so the parent and its workers can share the file), and ``jq``/pandas
read it directly. Records carry ``event`` and any ``extra=`` fields given to the logger call.
"""

from __future__ import annotations

import json
import logging
import os
import sys
from pathlib import Path

_STD_FIELDS = set(vars(logging.LogRecord("", 0, "", 0, "", (), None))) | {"message", "asctime"}


class JsonLinesFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry = {
            "time": round(record.created, 3),
            "level": record.levelname,
            "logger": record.name,
            "pid": record.process,
            "msg": record.getMessage(),
        }
        for key, value in vars(record).items():
            if key not in _STD_FIELDS and not key.startswith("_"):
                entry[key] = value
        return json.dumps(entry, default=str, sort_keys=False)


class JsonLinesHandler(logging.Handler):
    """Appends each record as one line with a single ``os.write`` on an ``O_APPEND`` fd."""

    def __init__(self, path: Path, level: int = logging.INFO):
        super().__init__(level)
        path.parent.mkdir(parents=True, exist_ok=True)
        self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        self.setFormatter(JsonLinesFormatter())

    def emit(self, record: logging.LogRecord) -> None:
        try:
            os.write(self._fd, (self.format(record) + "\n").encode("utf-8"))
        except OSError as e:  # full disk, quota, I/O error: say it once, never a traceback per record
            if not getattr(self, "_warned", False):
                self._warned = True
                sys.stderr.write(f"sceneforge: cannot write the job log ({e.strerror or e}); further log records are dropped\n")
        except Exception:
            self.handleError(record)

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
        super().close()


def attach_json_log(path: Path, level: int = logging.INFO, logger: str = "") -> JsonLinesHandler:
    """Send ``logger``'s records (root by default) at ``level`` and above to ``path``."""
    handler = JsonLinesHandler(Path(path), level)
    target = logging.getLogger(logger)
    target.addHandler(handler)
    if target.getEffectiveLevel() > level:
        target.setLevel(level)
    return handler


def event_logger(path: Path) -> tuple[logging.Logger, JsonLinesHandler]:
    """A logger whose INFO records go to the JSON file only (never to the console)."""
    events = logging.getLogger("renderfarm.events")
    events.propagate = False
    events.setLevel(logging.INFO)
    handler = JsonLinesHandler(Path(path), logging.INFO)
    events.addHandler(handler)
    return events, handler


def detach_json_log(handler: JsonLinesHandler, logger: str = "") -> None:
    logging.getLogger(logger).removeHandler(handler)
    handler.close()


def read_log(path: Path) -> list[dict]:
    """All complete records (a torn last line after a crash is skipped)."""
    out = []
    if not Path(path).exists():
        return out
    for line in Path(path).read_text().splitlines():
        try:
            out.append(json.loads(line))
        except ValueError:
            continue
    return out
