"""SIGTERM as Ctrl-C, for long commands that must leave nothing half-written when stopped.

Why: Python's default SIGTERM ends the process at once, so no ``finally`` runs. A `generate` left
its workers and render servers behind; a `study` stopped mid-extraction left its feature build
folder (up to a whole layer's tokens, ~1 GB per 5,000 ViT-S images) until the next start swept
it. A scheduler, a shell's ``kill`` and ``timeout`` all send SIGTERM first, so both take the
Ctrl-C path instead: ``KeyboardInterrupt`` unwinds through every ``finally`` and the CLI prints
one "interrupted" line (exit 130). ``kill -9`` still skips all of it; what that leaves is swept
by the next start (``probing.features.stale_builds``, the job journal)."""

from __future__ import annotations

import signal
import threading
from contextlib import contextmanager
from typing import Iterator


@contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """Within the block, SIGTERM raises ``KeyboardInterrupt`` in the main thread; the previous
    handler comes back after it. Off the main thread (where Python cannot install handlers) it
    does nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum, frame):
        raise KeyboardInterrupt

    old = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, old)
