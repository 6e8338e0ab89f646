"""An exclusive lock shared by threads and processes (flock on a lock file)."""

import fcntl
import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from memory.errors import MemoryStoreError


class FileLock:
    """Serialises access to one store across processes (flock) and threads (a thread lock).

    flock alone does not exclude threads of one process, hence the thread lock as well.
    """

    def __init__(self, path: Path, timeout_s: float = 120.0) -> None:
        self.path = path
        self.timeout_s = timeout_s
        self._thread_lock = threading.RLock()
        self._depth = 0
        self._fd: int | None = None

    @contextmanager
    def hold(self) -> Iterator[None]:
        """Hold the lock for the duration of the block (re-entrant within a thread)."""
        with self._thread_lock:
            if self._depth == 0:
                self._fd = self._acquire()
            self._depth += 1
            try:
                yield
            finally:
                self._depth -= 1
                if self._depth == 0 and self._fd is not None:
                    fcntl.flock(self._fd, fcntl.LOCK_UN)
                    os.close(self._fd)
                    self._fd = None

    def _acquire(self) -> int:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        deadline = time.monotonic() + self.timeout_s
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return fd
            except BlockingIOError:
                if time.monotonic() > deadline:
                    os.close(fd)
                    raise MemoryStoreError(
                        f"timed out after {self.timeout_s:.0f}s waiting for the store lock {self.path}",
                        hint="another process holds it (flock locks die with their process): look for a "
                        "hung research-crew process using this store",
                    ) from None
                time.sleep(0.01)
