"""The disk watermark: when free disk under the run falls below the preset's reserve (disk_reserve_gb), running
jobs are stopped (SIGTERM, then SIGKILL after their grace period) and the supervisor is told why, before the disk
fills; new jobs are refused until there is room again. The reserve is what keeps saving the crew's state, the
trace and the evaluations possible: they never compete with a job for the last bytes."""

from __future__ import annotations

import logging
import shutil
import threading
from collections.abc import Callable
from pathlib import Path

log = logging.getLogger(__name__)
POLL_S = 1.0


class DiskWatch:
    def __init__(self, folder: Path, reserve_bytes: int, stop_jobs: Callable[[], list[str]],
                 note: Callable[[str], None], poll_s: float = POLL_S) -> None:
        self.folder, self.reserve_bytes, self.poll_s = folder, reserve_bytes, poll_s
        self._stop_jobs, self._note = stop_jobs, note
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="disk-watch", daemon=True)
        self.low = False

    def free_bytes(self) -> int:
        return shutil.disk_usage(self.folder).free

    def refusal(self) -> str | None:
        """Why a new job may not start now, or None."""
        free = self.free_bytes()
        if free >= self.reserve_bytes:
            return None
        return (f"only {_gb(free)} free under the run, below the {_gb(self.reserve_bytes)} reserve kept for saving "
                "its state: delete large outputs (old checkpoints) first")

    def check(self) -> None:
        free = self.free_bytes()
        if free >= self.reserve_bytes:
            self.low = False
            return
        if self.low:
            return
        self.low = True
        stopped = self._stop_jobs()
        text = (f"DISK LOW: only {_gb(free)} free under the run, below the {_gb(self.reserve_bytes)} reserve; "
                f"stopped {', '.join(stopped) if stopped else 'no running job'} before the disk fills. Delete large "
                "outputs (old checkpoints, caches) before starting jobs again.")
        log.warning(text)
        self._note(text)

    def _watch(self) -> None:
        while not self._done.wait(self.poll_s):
            try:
                self.check()
            except OSError as err:  # a transient stat failure must not end the watch
                log.warning("disk watch: %s", err)

    def __enter__(self) -> DiskWatch:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._done.set()
        self._thread.join(timeout=5)


def _gb(n: float) -> str:
    return f"{n / 2**30:.2f} GB"
