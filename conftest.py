"""Repository-wide pytest set-up (loaded before tests/conftest.py).

1. **The suite has its own cache.** Tests never read or write the user's ``~/.cache/sceneforge``
   (or ``$SCENEFORGE_CACHE`` / ``$SCENEFORGE_WEIGHTS``): what a user's ``sceneforge demo`` fetched
   there (the real asset library) would change which assets the tests draw, and the weight builds
   (~290 MB) do not belong in it. The suite's cache is ``$SCENEFORGE_TEST_CACHE`` if set, else
   ``.pytest_cache/sceneforge`` in the repository (kept between runs, so the weights are built
   once per checkout; ``pytest --cache-clear`` wipes it). Nothing is fetched into it
   (``SCENEFORGE_NO_FETCH=1``): the suite always sees the procedural asset pack. The Cycles
   renderer is an installed tool, not cached data: its location is resolved *before* the cache
   is redirected, so an installed renderer is still found (``SCENEFORGE_CYCLES_HOME``).
2. **Import order guard:** the CUDA build of torch that timm needs here ships triton, whose bundled
   LLVM crashes the process when it is loaded *after* Mesa's llvmpipe (our renderer's OpenGL) is
   already in memory. The product never mixes the two in one process (probing reads datasets from
   disk; the renderer runs in the render server), but pytest runs every test in one process, so
   load torchvision first when it is installed. See docs/dependencies.md.
"""

from __future__ import annotations

import os
from pathlib import Path

try:  # optional extra: probing tests are skipped/absent without it
    import torchvision  # noqa: F401
except Exception:  # pragma: no cover - any import failure is reported by the probing tests
    pass

from sceneforge.engine.server.cycles.install import home as _cycles_home

SUITE_CACHE = Path(os.environ.get("SCENEFORGE_TEST_CACHE") or Path(__file__).resolve().parent / ".pytest_cache" / "sceneforge")


def _isolate_the_cache() -> None:
    os.environ["SCENEFORGE_CYCLES_HOME"] = str(_cycles_home())  # the user's installed renderer
    SUITE_CACHE.mkdir(parents=True, exist_ok=True)
    os.environ["SCENEFORGE_CACHE"] = str(SUITE_CACHE)
    os.environ.pop("SCENEFORGE_WEIGHTS", None)  # weights go to SUITE_CACHE/weights
    os.environ["SCENEFORGE_NO_FETCH"] = "1"  # tests never download assets


_isolate_the_cache()
