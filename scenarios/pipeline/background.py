"""Encode and write a sample's files on a background thread, off the render loop's critical path.

While the writer thread JPEG-encodes and writes sample k (Pillow and file I/O release the GIL),
the main thread already samples sample k+1 and waits on the render server for it. One thread
and a FIFO queue: tasks run in submission order, so within a sample the record is still
written last (resume relies on that) and bytes do not depend on timing. The queue is bounded
(``depth`` samples in flight) so memory stays flat when writing is slower than rendering.

The first error a task raises is re-raised in the caller at the next :meth:`submit` or at
:meth:`flush` (which waits for everything queued); later tasks are dropped.

Example::

    with BackgroundWriter() as w:
        w.submit(lambda: atomic_write_bytes(path, encode_image(rgb)))
    # leaving the block flushes: every file is on disk (or the first error was raised)
"""

from __future__ import annotations

import queue
import threading
from typing import Callable

from sceneforge.scenarios.pipeline.thread_priority import helper_nice, lower_this_thread


class BackgroundWriter:
    def __init__(self, depth: int = 4, inline: bool = False):
        self._inline = inline
        self._q: queue.Queue = queue.Queue(maxsize=max(1, depth))
        self._error: BaseException | None = None
        self._failed = False  # once a task failed, later tasks are dropped
        self._thread: threading.Thread | None = None
        self._nice = 0 if inline else helper_nice()  # read here: a bad setting fails the caller, not the thread

    def _loop(self) -> None:
        lower_this_thread(self._nice)  # a helper: gives way to the render server when the CPU is short
        while True:
            task = self._q.get()
            try:
                if task is None:
                    return
                if not self._failed:
                    task()
            except BaseException as e:  # noqa: BLE001 - handed to the caller
                self._error, self._failed = e, True
            finally:
                self._q.task_done()

    def submit(self, task: Callable[[], object]) -> None:
        """Queue ``task`` (runs ``task()`` now when ``inline``); raise an earlier task's error."""
        self._raise()
        if self._inline:
            task()
            return
        if self._thread is None:
            self._thread = threading.Thread(target=self._loop, name="sceneforge-writer", daemon=True)
            self._thread.start()
        self._q.put(task)

    def flush(self) -> None:
        """Wait until every queued task has run; raise the first error any of them raised."""
        if self._thread is not None:
            self._q.join()
        self._raise()

    def close(self) -> None:
        """Flush, then stop the thread."""
        try:
            self.flush()
        finally:
            if self._thread is not None:
                self._q.put(None)
                self._thread.join()
                self._thread = None

    def _raise(self) -> None:
        if self._error is not None:
            err, self._error = self._error, None
            raise err

    def __enter__(self) -> "BackgroundWriter":
        return self

    def __exit__(self, *exc) -> None:
        if exc[0] is None:
            self.close()
        else:  # already failing: stop the thread, keep the original error
            try:
                self.close()
            except BaseException:  # noqa: BLE001
                pass
