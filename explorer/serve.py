"""``--serve``: the written explorer through a plain static HTTP server on 127.0.0.1.

The page needs no server (it opens from disk); serving helps when the browser is elsewhere on
the machine or a viewer blocks ``file://``. The server only reads files under ``root`` (the
common parent of the dataset and the explorer, so the page's relative media paths resolve) and
binds the loopback address only.
"""

from __future__ import annotations

import functools
import os
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from sceneforge.core.errors import ConfigError

HOST = "127.0.0.1"


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args) -> None:  # noqa: A002 - the base class's name
        pass


def serve_root(data_dir: Path, out_dir: Path) -> Path:
    """The directory to serve: the common parent of the dataset and the explorer."""
    return Path(os.path.commonpath([Path(data_dir).resolve(), Path(out_dir).resolve()]))


def make_server(root: Path, port: int) -> ThreadingHTTPServer:
    """A server bound to 127.0.0.1:``port`` (0 = any free port) serving ``root`` read-only."""
    handler = functools.partial(_Quiet, directory=str(root))
    try:
        return ThreadingHTTPServer((HOST, port), handler)
    except OSError as e:
        raise ConfigError(f"--port {port}: cannot listen on {HOST}:{port} ({e.strerror})") from e


def page_url(server: ThreadingHTTPServer, root: Path, index_html: Path) -> str:
    rel = Path(index_html).resolve().relative_to(root).as_posix()
    return f"http://{HOST}:{server.server_address[1]}/{rel}"
