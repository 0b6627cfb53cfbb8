"""Fixtures of the character-pack tests (test_video_characters.py, test_sparrta_characters.py).

Each of those modules defines its own module-scoped ``pack_cache`` (the tiny real-format pack of
tests/oad_fixture.py installed into a cache, arranged for what that module draws); these fixtures
build on whichever ``pack_cache`` the requesting module defines.
"""

from __future__ import annotations

import pytest

from sceneforge.engine.server.launch import start_server


@pytest.fixture
def with_pack(pack_cache, monkeypatch):
    """This process sees the pack (``SCENEFORGE_CACHE``)."""
    monkeypatch.setenv("SCENEFORGE_CACHE", str(pack_cache))
    return pack_cache


@pytest.fixture(scope="module")
def pack_server(pack_cache, tmp_path_factory):
    """A render server of its own that sees the pack (the session's ``server`` does not)."""
    srv = start_server(port=0, output_dir=tmp_path_factory.mktemp("out"), env={"SCENEFORGE_CACHE": str(pack_cache)})
    yield srv
    srv.stop()
