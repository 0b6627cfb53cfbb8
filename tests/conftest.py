"""Shared fixtures: one real ``sceneforge serve`` subprocess for the whole test session.

* ``server``: a :class:`engine.server.launch.ServerProcess` (``.address`` "127.0.0.1:PORT",
  ``.port``, ``.pid``, ``.log_path``), started once per session on a free port with a temporary
  ``--output-dir`` (``server_output_dir``). Shared by every test that uses it: do not stop it.
* ``render_client``: a connected :class:`engine.client.RenderClient` on that server with a clean
  scene (no actors, default world, camera 0 back to ``Camera()`` = origin, 90° FOV, 640x480).

Example::

    def test_something(render_client):
        render_client.spawn([Actor("a", "primitive_cube", Transform((500, 0, 0)))])
"""

from __future__ import annotations

import os
import subprocess

import pytest

# Tests never download: `sceneforge demo` / `generate` fetch real assets on first use otherwise.
os.environ.setdefault("SCENEFORGE_NO_FETCH", "1")

from sceneforge.engine.client import RenderClient
from sceneforge.engine.server.launch import start_server
from sceneforge.engine.world import Camera


@pytest.fixture(scope="session")
def server_output_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("serve-output")


@pytest.fixture(scope="session")
def server(server_output_dir):
    srv = start_server(port=0, output_dir=server_output_dir)
    yield srv
    srv.stop()


@pytest.fixture
def render_client(server):
    with RenderClient(server.address, timeout=120) as client:
        client.reset()
        client.set_world({})
        client.set_camera(0, Camera())
        yield client


@pytest.fixture
def small_disk_of(tmp_path):
    """``small_disk_of(size)``: a fresh tmpfs of ``size`` (mount's syntax, e.g. "64k") under
    tmp_path, unmounted after the test: the "full disk" of the robustness tests. Skips where a
    tmpfs cannot be mounted (not root)."""
    mounted = []

    def mount(size: str):
        mnt = tmp_path / f"small_{len(mounted)}"
        mnt.mkdir()
        cmd = ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(mnt)]
        if os.geteuid() != 0 or subprocess.run(cmd, capture_output=True).returncode != 0:
            pytest.skip("cannot mount a small tmpfs here (needs root)")
        mounted.append(mnt)
        return mnt

    yield mount
    for mnt in mounted:
        subprocess.run(["umount", "-l", str(mnt)], capture_output=True)
