"""Where a bench's cells run: `local` (parallel with one GPU each, or sequential on CPU) or `slurm` (slurm.py).

Each cell is one `research-crew run` (or `resume`) subprocess in its own process group with its output in the
bench's logs/, so a crashed run is a failed cell, never a failed bench.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import subprocess
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from crew.bench.plan import Cell
from toolkit.procs import kill_process_group

log = logging.getLogger(__name__)
STOP_GRACE_S = 60.0  # a run stopped by the bench gets this long to write result.json and its checkpoint
PACKAGE_ROOT = str(Path(__file__).resolve().parents[2])


@dataclass(eq=False)  # kept in a set while it runs: hashed by identity
class CellRunner:
    """Runs one cell to its end; `stop()` from another thread ends it the way Ctrl-C ends a run (resumable)."""

    cell: Cell
    env: dict[str, str] = field(default_factory=dict)
    _proc: subprocess.Popen | None = field(default=None, init=False, repr=False)

    def __call__(self) -> int:
        command = self.cell.command()
        self.cell.log.parent.mkdir(parents=True, exist_ok=True)
        log.info("bench: %s: %s", self.cell.name, " ".join(command[2:]))
        with open(self.cell.log, "ab") as out:
            self._proc = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                          env={**os.environ, **self.env, **child_path()}, start_new_session=True)
        return self._proc.wait()

    def stop(self) -> None:
        if self._proc is not None and self._proc.poll() is None:
            kill_process_group(self._proc.pid, grace_s=STOP_GRACE_S)


def child_path() -> dict[str, str]:
    """The runs use this very crew package, whatever the current folder or an install would put first."""
    return {"PYTHONPATH": os.pathsep.join(p for p in (PACKAGE_ROOT, os.environ.get("PYTHONPATH")) if p)}


class LocalExecutor:
    def __init__(self, parallel: int = 1, gpus: list[str] | None = None) -> None:
        self.gpus = gpus or []
        self.parallel = max(1, len(self.gpus) or parallel)
        self._free_gpus = list(self.gpus)
        self._lock = threading.Lock()
        self._running: set[CellRunner] = set()
        self._stopping = threading.Event()

    def run(self, cells: list[Cell]) -> bool:
        """Run the cells; False when interrupted (the runs under way were stopped, resumable)."""
        with _signals_interrupt(), ThreadPoolExecutor(self.parallel, thread_name_prefix="bench") as pool:
            futures = [pool.submit(self._one, cell) for cell in cells]
            try:
                for future in futures:
                    future.result()
            except KeyboardInterrupt:
                self._stopping.set()
                for future in futures:
                    future.cancel()
                with self._lock:
                    running = list(self._running)
                for runner in running:
                    runner.stop()
                return False
        return True

    def _one(self, cell: Cell) -> int | None:
        if self._stopping.is_set():
            return None
        with self._lock:
            gpu = self._free_gpus.pop(0) if self._free_gpus else None
        runner = CellRunner(cell, {"CUDA_VISIBLE_DEVICES": gpu} if gpu is not None else {})
        with self._lock:
            self._running.add(runner)
        try:
            return runner()
        finally:
            with self._lock:
                self._running.discard(runner)
                if gpu is not None:
                    self._free_gpus.append(gpu)


@contextlib.contextmanager
def _signals_interrupt() -> Iterator[None]:
    """SIGTERM (a scheduler, `kill`) stops a bench like Ctrl-C does."""
    def _raise(signum, frame):
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, _raise)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
