"""Load triton's LLVM before Mesa's, so one Python process can render and then use timm.

Why: Mesa's llvmpipe (our EGL renderer) and triton (pulled in by ``import timm`` through
torchvision / ``torch._dynamo``) each carry their own LLVM. Once llvmpipe has initialised its
LLVM (the first GL context), a later ``import triton`` crashes the interpreter with SIGSEGV
(rc 139) — checked here: render, then ``import timm`` / ``torchvision`` / ``triton`` all die,
``import torch`` alone does not. The other order is safe: triton imported first, rendering and
timm both work. So before the first GL context of a process that *could* import triton, we
import it (≈ 0.7 s, without torch).

Render servers (``python -m sceneforge.engine.server``) never import triton, so the server's entry point
turns this off (:data:`PRELOAD`) and keeps its first frame fast. Set
``SCENEFORGE_PRELOAD_TRITON=0`` to turn it off elsewhere (e.g. a process that will never touch
timm); the safe alternative for notebooks is rendering through a server subprocess
(``engine.server.launch.start_server`` + ``RenderClient``), which keeps LLVMs apart by design.
"""

from __future__ import annotations

import importlib
import importlib.util
import logging
import os
import sys

log = logging.getLogger(__name__)

PRELOAD = True  # engine.server.main sets False: a render server never imports triton


def preload_before_gl() -> bool:
    """Import triton if installed and not yet loaded; True when it is loaded afterwards."""
    if "triton" in sys.modules:
        return True
    if not PRELOAD or os.environ.get("SCENEFORGE_PRELOAD_TRITON", "1") == "0":
        return False
    try:
        if importlib.util.find_spec("triton") is None:
            return False
        importlib.import_module("triton")
        return True
    except Exception as e:  # noqa: BLE001 - a broken triton must not stop rendering
        log.warning(
            "could not pre-load triton before the GL context (%s); importing it after rendering in this process may crash", e
        )
        return False
