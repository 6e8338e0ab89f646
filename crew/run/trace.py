"""trace.jsonl: the run's append-only event log, one JSON object per line."""

from __future__ import annotations

import json
import os
import threading
from datetime import UTC, datetime
from pathlib import Path
from typing import Any


class Trace:
    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.seq = _count_complete_lines(self.path)
        self._lock = threading.Lock()  # tools run in threads and may emit at once

    def emit(self, kind: str, agent: str = "crew", **fields: Any) -> dict[str, Any]:
        """Append one event and fsync it: an event that returned is on disk."""
        with self._lock:
            self.seq += 1
            event = {"seq": self.seq, "t": datetime.now(UTC).isoformat(timespec="milliseconds"),
                     "kind": kind, "agent": agent, **fields}
            with open(self.path, "a", encoding="utf-8") as handle:
                handle.write(json.dumps(event, default=str) + "\n")
                handle.flush()
                os.fsync(handle.fileno())
        return event

    def events(self) -> list[dict[str, Any]]:
        return read_events(self.path)


def read_events(path: Path) -> list[dict[str, Any]]:
    """Every complete event; a torn last line (a crash mid-write) is skipped."""
    if not Path(path).is_file():
        return []
    events = []
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        try:
            events.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return events


def _count_complete_lines(path: Path) -> int:
    return len(read_events(path))
