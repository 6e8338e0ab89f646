"""trace.jsonl: the run's append-only event log, one JSON object per line, each a typed record
(crew/run/events.py)."""

from __future__ import annotations

import dataclasses
import json
import os
import threading
from datetime import UTC, datetime
from pathlib import Path

from crew.run.events import Event, parse_event


class Trace:
    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.seq = _count_complete_lines(self.path)
        self._lock = threading.Lock()  # tools run in threads and may emit at once

    def emit(self, event: Event) -> Event:
        """Append one event, stamped with its seq and time, and fsync it: an event that returned is on disk."""
        with self._lock:
            self.seq += 1
            event = dataclasses.replace(event, seq=self.seq, t=datetime.now(UTC).isoformat(timespec="milliseconds"))
            with open(self.path, "a", encoding="utf-8") as handle:
                handle.write(json.dumps(event.to_json(), default=str) + "\n")
                handle.flush()
                os.fsync(handle.fileno())
        return event

    def events(self) -> list[Event]:
        return read_events(self.path)


def read_events(path: Path) -> list[Event]:
    """Every complete event as its record; a torn last line (a crash mid-write) is skipped."""
    if not Path(path).is_file():
        return []
    return parse_lines(Path(path).read_text(encoding="utf-8").splitlines())


def parse_lines(lines: list[str] | list[bytes]) -> list[Event]:
    """The events in these lines; one that is not a complete JSON object (a torn write) is skipped."""
    events = []
    for line in lines:
        try:
            data = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(data, dict):
            events.append(parse_event(data))
    return events


def _count_complete_lines(path: Path) -> int:
    return len(read_events(path))
