"""Head-and-tail excerpts of log files, read from disk so memory stays flat however big the log."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Excerpt:
    text: str
    total_bytes: int
    cut_bytes: int

    @property
    def was_cut(self) -> bool:
        return self.cut_bytes > 0


def _decode(data: bytes) -> str:
    # Progress bars redraw with \r; keep only the last state of each line so the model sees it once.
    text = data.decode("utf-8", errors="replace")
    return "\n".join(line.rstrip("\r").rsplit("\r", 1)[-1] for line in text.split("\n"))


def head_tail(path: Path, max_chars: int) -> Excerpt:
    """The first and last parts of `path` within about `max_chars`, with the cut said in the text."""
    try:
        size = os.path.getsize(path)
    except OSError:
        return Excerpt("", 0, 0)
    with open(path, "rb") as handle:
        if size <= max_chars:
            return Excerpt(_decode(handle.read()), size, 0)
        head_n = max_chars // 3
        tail_n = max_chars - head_n
        head = handle.read(head_n)
        handle.seek(size - tail_n)
        tail = handle.read(tail_n)
    cut = size - head_n - tail_n
    marker = f"\n[... {cut:,} bytes cut from the middle; the full output is in {path} ...]\n"
    return Excerpt(_decode(head) + marker + _decode(tail), size, cut)


def tail_lines(path: Path, lines: int, max_bytes: int = 256_000) -> tuple[list[str], bool]:
    """The last `lines` lines of `path` (reading at most `max_bytes` from its end), and whether
    earlier content exists that is not shown."""
    try:
        size = os.path.getsize(path)
    except OSError:
        return [], False
    start = max(0, size - max_bytes)
    with open(path, "rb") as handle:
        handle.seek(start)
        data = handle.read()
    text = _decode(data)
    all_lines = text.split("\n")
    if all_lines and all_lines[-1] == "":
        all_lines.pop()
    if start > 0 and all_lines:
        all_lines.pop(0)  # probably a partial line
    shown = all_lines[-lines:] if lines > 0 else []
    return shown, start > 0 or len(all_lines) > len(shown)


def read_tail_text(path: Path, max_bytes: int) -> str:
    """Raw decoded text of the last `max_bytes` of `path` (\r kept, for progress parsing)."""
    try:
        size = os.path.getsize(path)
    except OSError:
        return ""
    with open(path, "rb") as handle:
        handle.seek(max(0, size - max_bytes))
        return handle.read().decode("utf-8", errors="replace")
