"""``--serve``: the written explorer through a small read-only HTTP server on 127.0.0.1.

The page needs no server (it opens from disk); serving helps when the browser is elsewhere on
the machine or a viewer blocks ``file://``. What it serves, and nothing else (issue 48: it used to
serve the common parent of the dataset and ``--out``, ``/`` when they were in different trees, with
directory listings, any symlink followed and any ``Host:`` accepted):

* the explorer's own files, below ``--out`` (their real paths, symlinks followed, must stay there);
* the media files the dataset's table names (images, masks, videos; :func:`media_files`), each
  resolved once when the server starts;
* ``GET``/``HEAD`` only; no directory listings; ``..``, ``.``, empty and NUL components refused;
* a ``Host:`` header naming the loopback (``localhost``, ``127.0.0.1``, ``[::1]``, any port), so a
  web page on another name cannot reach it through DNS rebinding (``421`` otherwise);
* bound to 127.0.0.1 only.

URLs keep the layout of the files on disk below the common parent of the dataset and ``--out``
(the page refers to media by their path relative to it), so the page works unchanged.
"""

from __future__ import annotations

import mimetypes
import os
import shutil
import urllib.parse
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from sceneforge.core.errors import ConfigError

HOST = "127.0.0.1"
#: ``Host:`` names the server answers (any port): the loopback only.
LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "[::1]", "::1"})
MAX_PATH = 4096  # a request path longer than this is refused (414) without touching the disk


def serve_root(data_dir: Path, out_dir: Path) -> Path:
    """The URL root: the common parent of the dataset and the explorer (nothing below it is
    served unless :class:`ExplorerServer` allows it)."""
    return Path(os.path.commonpath([Path(data_dir).resolve(), Path(out_dir).resolve()]))


def media_files(data_dir: Path, media: list[dict]) -> frozenset[str]:
    """Real paths of the media files a table names (``image``, ``mask``, every ``videos`` variant),
    those that resolve inside ``data_dir`` and exist: the only dataset files the server sends."""
    real_data = os.path.realpath(data_dir)
    allowed = set()
    for m in media:
        rels = [m.get("image"), m.get("mask"), *(m.get("videos") or {}).values()]
        for rel in rels:
            if isinstance(rel, str) and rel:
                real = os.path.realpath(os.path.join(real_data, rel))
                if _below(real, real_data) and os.path.isfile(real):
                    allowed.add(real)
    return frozenset(allowed)


def _below(path: str, root: str) -> bool:
    return path.startswith(root.rstrip(os.sep) + os.sep)


class ExplorerServer(ThreadingHTTPServer):
    """Serves ``out_dir``'s files and the ``allowed`` media below the URL ``root``; see the module."""

    daemon_threads = True

    def __init__(self, port: int, root: Path, out_dir: Path, allowed: frozenset[str]):
        self.root = os.path.realpath(root)
        self.out_real = os.path.realpath(out_dir)
        self.allowed = allowed
        super().__init__((HOST, port), _Handler)

    def resolve(self, url_path: str) -> str | None:
        """The real path of the file ``url_path`` may send, or None (404)."""
        parts = url_path.split("/")[1:]
        if not parts or any(p in ("", ".", "..") or "\x00" in p or "\\" in p for p in parts):
            return None
        real = os.path.realpath(os.path.join(self.root, *parts))
        if not os.path.isfile(real):
            return None  # missing, or a directory: no listings
        if _below(real, self.out_real) or real in self.allowed:
            return real
        return None


class _Handler(BaseHTTPRequestHandler):
    server: ExplorerServer
    server_version = "sceneforge-explorer"
    sys_version = ""

    def log_message(self, format: str, *args) -> None:  # noqa: A002 - the base class's name
        pass

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        self._send(body=True)

    def do_HEAD(self) -> None:  # noqa: N802
        self._send(body=False)

    def _send(self, body: bool) -> None:
        host = (self.headers.get("Host") or "").strip().lower()
        name = host.rsplit(":", 1)[0] if not host.endswith("]") else host
        if name not in LOOPBACK_NAMES:
            self.send_error(HTTPStatus.MISDIRECTED_REQUEST, "Host must name the loopback (localhost, 127.0.0.1)")
            return
        if len(self.path) > MAX_PATH:
            self.send_error(HTTPStatus.REQUEST_URI_TOO_LONG)
            return
        try:
            path = (
                urllib.parse.unquote(urllib.parse.urlsplit(self.path).path, errors="strict") if self.path.startswith("/") else ""
            )
        except (UnicodeDecodeError, ValueError):
            path = ""
        real = self.server.resolve(path) if path else None
        if real is None:
            self.send_error(HTTPStatus.NOT_FOUND)
            return
        try:
            f = open(real, "rb")  # noqa: SIM115 - closed below, after the copy
        except OSError:
            self.send_error(HTTPStatus.NOT_FOUND)
            return
        with f:
            size = os.fstat(f.fileno()).st_size
            self.send_response(HTTPStatus.OK)
            self.send_header("Content-Type", mimetypes.guess_type(real)[0] or "application/octet-stream")
            self.send_header("Content-Length", str(size))
            self.send_header("X-Content-Type-Options", "nosniff")
            self.end_headers()
            if body:
                shutil.copyfileobj(f, self.wfile)


def make_server(root: Path, port: int, out_dir: Path | None = None, allowed: frozenset[str] = frozenset()) -> ExplorerServer:
    """A server bound to 127.0.0.1:``port`` (0 = any free port): ``out_dir``'s files (default
    ``root``) and the ``allowed`` real paths (:func:`media_files`), URLs relative to ``root``."""
    try:
        return ExplorerServer(port, root, Path(out_dir) if out_dir is not None else Path(root), allowed)
    except OSError as e:
        raise ConfigError(f"--port {port}: cannot listen on {HOST}:{port} ({e.strerror})") from e


def page_url(server: ThreadingHTTPServer, root: Path, index_html: Path) -> str:
    rel = Path(index_html).resolve().relative_to(root).as_posix()
    return f"http://{HOST}:{server.server_address[1]}/{rel}"
