"""Fixtures of the engine tests."""

from __future__ import annotations

import pytest

from sceneforge.engine.server.gl.backend import GLBackend
from gl_scenes import MESHES


@pytest.fixture(scope="module")
def backend():
    b = GLBackend(MESHES.__getitem__, shadow_map_size=1024)
    yield b
    b.close()
