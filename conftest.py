"""Repository-wide pytest set-up (loaded before tests/conftest.py).

Import order guard: the CUDA build of torch that timm needs here ships triton, whose bundled LLVM
crashes the process when it is loaded *after* Mesa's llvmpipe (our renderer's OpenGL) is already
in memory. The product never mixes the two in one process (probing reads datasets from disk; the
renderer runs in the render server), but pytest runs every test in one process, so load
torchvision first when it is installed. See docs/dependencies.md.
"""
try:  # optional extra: probing tests are skipped/absent without it
    import torchvision  # noqa: F401
except Exception:  # pragma: no cover - any import failure is reported by the probing tests
    pass
