"""File tools confined to the workspace: list, read (line ranges, capped), write, exact edit, undo."""

from __future__ import annotations

import difflib
import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from checkpoints import atomic_write_bytes
from toolkit.paths import Confinement, PathRefused

_SKIP_DIRS = {".git", "__pycache__", ".venv", "node_modules", ".mypy_cache", ".pytest_cache"}
_MAX_EDIT_BYTES = 5_000_000
_MAX_LINE_CHARS = 2_000
_HISTORY_DEPTH = 20


def _size(n: int) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n} B"


def _is_binary(path: Path) -> bool:
    with open(path, "rb") as handle:
        return b"\0" in handle.read(8192)


class FileTools:
    def __init__(self, workspace: Path, read_only: Sequence[Path] = (), mounts: Mapping[str, Path] | None = None):
        self.confine = Confinement(workspace, read_only, mounts)
        # Per-file undo history (previous bytes, or None when the file did not exist).
        self._history: dict[Path, list[bytes | None]] = {}

    def list_files(self, path: str, recursive: bool, max_entries: int) -> str:
        try:
            real = self.confine.resolve(path)
        except PathRefused as err:
            return f"Refused: {err}"
        if not real.exists():
            return f"'{path}' does not exist."
        if real.is_file():
            return f"{path} is a file ({_size(real.stat().st_size)})."
        entries: list[str] = []
        total = 0
        for folder, dirs, names in os.walk(real):
            dirs[:] = sorted(d for d in dirs if d not in _SKIP_DIRS)
            base = Path(folder)
            items = [(d, True) for d in dirs] + [(n, False) for n in sorted(names)]
            for name, is_dir in items:
                total += 1
                if len(entries) >= max_entries:
                    continue
                full = base / name
                rel = full.relative_to(real)
                if full.is_symlink():
                    entries.append(f"{rel} -> {os.readlink(full)}")
                elif is_dir:
                    entries.append(f"{rel}/")
                else:
                    entries.append(f"{rel}  ({_size(full.stat().st_size)})")
            if not recursive:
                break
        header = f"{self.confine.display(real)}/: {total} entr{'y' if total == 1 else 'ies'}"
        if total > len(entries):
            header += f", showing the first {len(entries)} ({total - len(entries)} not shown)"
        if recursive:
            header += f" (recursive; skipping {', '.join(sorted(_SKIP_DIRS))})"
        return header + "\n" + ("\n".join(entries) if entries else "(empty)")

    def read_file(self, path: str, start_line: int, end_line: int | None, max_chars: int) -> str:
        try:
            real = self.confine.resolve(path)
        except PathRefused as err:
            return f"Refused: {err}"
        if not real.is_file():
            return f"'{path}' is not a file." if real.exists() else f"'{path}' does not exist."
        if _is_binary(real):
            return f"'{path}' is a binary file ({_size(real.stat().st_size)}); not shown."
        start = max(start_line, 1)
        shown: list[str] = []
        used = 0
        total = 0
        cut_by_size = False
        # Stream line by line: a huge file costs time, not memory.
        with open(real, encoding="utf-8", errors="replace", newline="") as handle:
            for total, line in enumerate(handle, start=1):
                if total < start or (end_line is not None and total > end_line) or cut_by_size:
                    continue
                text = line.rstrip("\r\n")
                if len(text) > _MAX_LINE_CHARS:
                    text = text[:_MAX_LINE_CHARS] + f" [... line cut, {len(text):,} chars]"
                entry = f"{total:6d}\t{text}"
                if used + len(entry) > max_chars and shown:
                    cut_by_size = True
                    continue
                shown.append(entry)
                used += len(entry) + 1
        last = start + len(shown) - 1
        header = f"{self.confine.display(real)}: lines {start}-{last} of {total}"
        if not shown:
            name = self.confine.display(real)
            header = f"{name}: {total} lines; nothing in the range {start}-{end_line or 'end'}"
        if cut_by_size:
            header += f" (cut at {max_chars:,} characters; ask for start_line={last + 1} to read on)"
        return header + "\n" + "\n".join(shown)

    def _remember(self, real: Path) -> None:
        history = self._history.setdefault(real, [])
        history.append(real.read_bytes() if real.exists() else None)
        del history[:-_HISTORY_DEPTH]

    def write_file(self, path: str, content: str) -> str:
        try:
            real = self.confine.resolve(path, write=True)
        except PathRefused as err:
            return f"Refused: {err}"
        if real.is_dir():
            return f"'{path}' is a folder; give a file path."
        existed = real.exists()
        self._remember(real)
        data = content.encode("utf-8")
        atomic_write_bytes(real, data)
        verb = "replaced" if existed else "created"
        return f"{verb} {self.confine.display(real)} ({_size(len(data))}, {content.count(chr(10)) + 1} lines)"

    def edit_file(self, path: str, old_text: str, new_text: str, max_chars: int) -> str:
        try:
            real = self.confine.resolve(path, write=True)
        except PathRefused as err:
            return f"Refused: {err}"
        if not real.is_file():
            return f"'{path}' does not exist; use write_file to create it."
        if real.stat().st_size > _MAX_EDIT_BYTES or _is_binary(real):
            return f"'{path}' is binary or larger than {_size(_MAX_EDIT_BYTES)}; not editable with edit_file."
        if not old_text:
            return "old_text is empty; give the exact text to replace (use write_file for a whole file)."
        before = real.read_text(encoding="utf-8", errors="surrogateescape")
        count = before.count(old_text)
        if count == 0:
            return (
                f"old_text was not found in {path}. It must match exactly, including whitespace and "
                "indentation; read_file shows the current text (without the line-number column)."
            )
        if count > 1:
            return f"old_text occurs {count} times in {path}; include more surrounding text so it matches once."
        after = before.replace(old_text, new_text, 1)
        self._remember(real)
        atomic_write_bytes(real, after.encode("utf-8", errors="surrogateescape"))
        return "edited " + self.confine.display(real) + "\n" + self._diff(before, after, real, max_chars)

    def undo_edit(self, path: str, max_chars: int) -> str:
        try:
            real = self.confine.resolve(path, write=True)
        except PathRefused as err:
            return f"Refused: {err}"
        history = self._history.get(real)
        if not history:
            return (
                f"No earlier version of {path} is recorded "
                "(undo covers write_file/edit_file made through this toolkit)."
            )
        previous = history.pop()
        current = real.read_text(encoding="utf-8", errors="surrogateescape") if real.exists() else ""
        if previous is None:
            real.unlink(missing_ok=True)
            return f"undid the creation of {self.confine.display(real)}: the file is removed."
        atomic_write_bytes(real, previous)
        restored = previous.decode("utf-8", errors="surrogateescape")
        left = len(history)
        return (
            f"restored the previous version of {self.confine.display(real)} ({left} older version(s) left)\n"
            + self._diff(current, restored, real, max_chars)
        )

    def _diff(self, before: str, after: str, real: Path, max_chars: int) -> str:
        name = self.confine.display(real)
        diff = "".join(
            difflib.unified_diff(
                before.splitlines(keepends=True), after.splitlines(keepends=True), f"a/{name}", f"b/{name}"
            )
        )
        if len(diff) > max_chars:
            diff = diff[:max_chars] + f"\n[... diff cut at {max_chars:,} of {len(diff):,} characters]"
        return diff or "(no change)"
