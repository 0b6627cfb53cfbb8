"""Issue 48 items 4, 7, 8: ``sceneforge browse`` on a dataset and a network that are not ours.

``--serve`` serves the explorer's files and the media its table names, nothing else: not the
common parent of the dataset and ``--out`` (``/`` when they are in different trees), not through a
symlink out, no directory listings, only for a ``Host:`` naming the loopback (DNS rebinding).
Requests go over raw sockets (``urllib`` would normalise ``/../`` away). A table or file the
explorer cannot use is one line naming it, exit 2, where it used to be a traceback or a silent
overwrite.
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from explorer_helpers import generate_small
from sceneforge.cli import main

pytestmark = pytest.mark.render
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def small(server, tmp_path_factory):
    return generate_small(tmp_path_factory.mktemp("browse_hostile") / "data", server.address)


def _copy(small: Path, tmp_path: Path) -> Path:
    data = tmp_path / "data"
    shutil.copytree(small, data, symlinks=True, ignore=shutil.ignore_patterns("explorer"))
    return data


def http(port: int, path: str, host: str | None = None, method: str = "GET") -> tuple[int, bytes]:
    """One raw HTTP/1.1 request (the path sent as given); (status, body)."""
    host = host if host is not None else f"127.0.0.1:{port}"
    with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
        s.sendall(f"{method} {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n".encode("latin-1"))
        data = b""
        while chunk := s.recv(65536):
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    return int(head.split()[1]), body


class Served:
    """``sceneforge browse DATA [--out OUT] --serve --port 0`` as a process: its port and page path."""

    def __init__(self, data: Path, out: Path | None = None):
        argv = [sys.executable, "-m", "sceneforge.cli", "browse", str(data), "--serve", "--port", "0"]
        if out is not None:
            argv += ["--out", str(out)]
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True, cwd=ROOT)
        lines = [self.proc.stdout.readline(), self.proc.stdout.readline()]
        m = re.search(r"at http://127\.0\.0\.1:(\d+)(/\S+)", lines[1])
        assert m, lines
        self.port, self.page = int(m.group(1)), m.group(2)

    def __enter__(self) -> "Served":
        return self

    def __exit__(self, *exc) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=30)


def test_out_in_another_tree_serves_the_page_and_media_but_not_the_common_parent(small, tmp_path):
    """``--out`` in another tree made the served root ``/``: ``GET /etc/passwd`` 200, also
    ``/../../etc/passwd``. Now only the explorer's files and the table's media are served."""
    top = next(
        (
            Path(t)
            for t in ("/var/tmp", "/dev/shm", "/run")
            if os.access(t, os.W_OK) and Path(t).parts[1] != small.resolve().parts[1]
        ),
        None,
    )
    if top is None:
        pytest.skip("no writable directory in another top-level tree")
    other = top / f"sceneforge-browse-{os.getpid()}-{tmp_path.name}"  # common parent with the dataset: /
    try:
        with Served(small, other / "explorer") as srv:
            status, html = http(srv.port, srv.page)
            assert status == 200 and b"app.js" in html
            page_dir = srv.page.rsplit("/", 1)[0]
            assert http(srv.port, f"{page_dir}/thumbs/0.jpg")[0] == 200
            first = pd.read_parquet(small / "samples.parquet")["file_name"][0]
            image = "/" + os.path.relpath(small.resolve() / first, "/")  # the URL root is / here
            status, body = http(srv.port, image)
            assert status == 200 and body == (small / first).read_bytes()
            attacks = [
                "/etc/passwd",
                "/../../etc/passwd",
                "/%2e%2e/%2e%2e/etc/passwd",
                f"{page_dir}/../../../../etc/passwd",
                "//etc/passwd",
                "/" + os.path.relpath(small.resolve() / "samples.parquet", "/"),  # dataset, not a media file
                "/" + os.path.relpath(small.resolve() / "job.json", "/"),
                "/proc/self/environ",
            ]
            for path in attacks:
                status, body = http(srv.port, path)
                assert status in (400, 404), (path, status)
                assert b"root:" not in body
    finally:
        shutil.rmtree(other, ignore_errors=True)


def test_no_symlink_out_no_listing_and_loopback_host_only(small, tmp_path):
    """Default ``--out``: a dataset symlink ``etc_link -> /etc`` served ``/etc_link/passwd``;
    directory listings were on; any ``Host:`` was answered (DNS rebinding)."""
    data = _copy(small, tmp_path)
    secret = tmp_path / "secret"
    secret.mkdir()
    (secret / "passwd").write_text("root:canary\n")
    (data / "etc_link").symlink_to("/etc")
    (data / "secret_link").symlink_to(secret)
    (data / "explorer").mkdir()
    (data / "explorer" / "leak.txt").symlink_to(secret / "passwd")  # a symlink inside OUT pointing out
    with Served(data) as srv:
        assert http(srv.port, srv.page)[0] == 200
        for path in (
            "/etc_link/passwd",
            "/secret_link/passwd",
            "/explorer/leak.txt",
            "/",
            "/explorer/",
            "/desert/",
            "/explorer/thumbs",
        ):
            status, body = http(srv.port, path)
            assert status == 404, (path, status)
            assert b"root:" not in body and b"<title>Directory listing" not in body
        for host in ("evil.example", f"evil.example:{srv.port}", "127.0.0.1.nip.io", ""):
            assert http(srv.port, srv.page, host=host)[0] == 421, host
        for host in (f"localhost:{srv.port}", "localhost", f"127.0.0.1:{srv.port}", f"[::1]:{srv.port}"):
            assert http(srv.port, srv.page, host=host)[0] == 200, host
        assert http(srv.port, srv.page, method="POST")[0] == 501
        assert http(srv.port, srv.page, method="HEAD")[0] == 200


# --- item 7/8: one line, exit 2 ------------------------------------------------------------------
def _one_line_exit_2(capsys, argv: list[str], *words: str) -> str:
    capsys.readouterr()
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    for w in words:
        assert w in err, (w, err)
    return err


def _set(data: Path, column: str, values) -> None:
    df = pd.read_parquet(data / "samples.parquet")
    df[column] = values
    df.to_parquet(data / "samples.parquet", index=False)


def test_duplicate_or_non_integer_index_is_refused(small, tmp_path, capsys):
    """Item 8: a duplicated ``index`` silently overwrote a thumbnail; item 7: a non-integer one
    was a traceback."""
    data = _copy(small, tmp_path)
    n = len(pd.read_parquet(data / "samples.parquet"))
    _set(data, "index", [0, 0] + list(range(2, n)))
    _one_line_exit_2(capsys, ["browse", str(data)], "samples.parquet rows 1 and 2: index 0 twice")
    _set(data, "index", ["x"] + [str(i) for i in range(1, n)])
    _one_line_exit_2(capsys, ["browse", str(data)], "samples.parquet row 1 index 'x': expected a whole number")
    assert not (data / "explorer" / "thumbs").exists()


def test_missing_params_file_and_corrupt_jpeg_are_one_line(small, tmp_path, capsys):
    """Item 7: a missing params file and a corrupt JPEG were tracebacks."""
    data = _copy(small, tmp_path)
    df = pd.read_parquet(data / "samples.parquet")
    (data / df["params_file"][0]).unlink()
    _one_line_exit_2(capsys, ["browse", str(data)], "row 1 params_file", "cannot read it")
    data = _copy(small, tmp_path / "b")
    (data / df["file_name"][1]).write_bytes(b"\xff\xd8\xff\xe0 not a jpeg")
    _one_line_exit_2(capsys, ["browse", str(data)], df["file_name"][1], "sample 1")
    assert not [p for p in (data / "explorer").rglob("*.tmp")]
    data = _copy(small, tmp_path / "c")
    params = data / df["params_file"][0]
    params.write_text(params.read_text().replace('"camera"', '"not_the_camera"', 1))
    _one_line_exit_2(capsys, ["browse", str(data)], "row 1 (index 0)", "missing field 'camera'")


@pytest.fixture
def small_disk(small_disk_of):
    return small_disk_of("64k")


def test_browse_onto_a_full_disk_is_one_line_and_leaves_no_temp_file(small, small_disk, capsys):
    """Item 7: browse onto a full disk was a traceback."""
    _one_line_exit_2(capsys, ["browse", str(small), "--out", str(small_disk / "ex")], "No space left on device")
    assert not [p for p in small_disk.rglob("*") if p.name.startswith(".") or p.name.endswith(".tmp")]
