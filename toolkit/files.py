"""File tools confined to the workspace: list, read (line ranges, capped), write, exact edit, undo."""

from __future__ import annotations

import difflib
import io
import os
import stat
from collections.abc import Mapping, Sequence
from pathlib import Path

from checkpoints import beneath
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


def _is_binary(data: bytes) -> bool:
    return b"\0" in data[:8192]


class FileTools:
    """Every file is reached through Confinement.locate and opened component by component without following
    links (checkpoints.beneath): the tools run on the host, and a link an agent plants or swaps in mid-call
    is refused rather than followed out of the workspace."""

    def __init__(self, workspace: Path, read_only: Sequence[Path] = (), mounts: Mapping[str, Path] | None = None,
                 seen_as: Path | None = None):
        self.confine = Confinement(workspace, read_only, mounts, seen_as=seen_as)
        # Per-file undo history (previous bytes, or None when the file did not exist).
        self._history: dict[tuple[Path, tuple[str, ...]], list[bytes | None]] = {}

    def _locate(self, path: str, write: bool = False) -> tuple[Path, tuple[str, ...]]:
        root, parts = self.confine.locate(path, write=write)
        if parts:
            info = beneath.lstat(root, parts)
            if info is not None and stat.S_ISLNK(info.st_mode):
                raise PathRefused(f"'{path}' is a symbolic link; the file tools do not follow links")
        return root, parts

    def _name(self, root: Path, parts: tuple[str, ...]) -> str:
        return self.confine.display(root.joinpath(*parts))

    def list_files(self, path: str, recursive: bool, max_entries: int) -> str:
        try:
            root, parts = self._locate(path)
            info = beneath.lstat(root, parts)
            if info is None:
                return f"'{path}' does not exist."
            if stat.S_ISREG(info.st_mode):
                return f"{path} is a file ({_size(info.st_size)})."
            top = beneath.open_dir(root, parts)
        except (PathRefused, beneath.LinkRefused) as err:
            return f"Refused: {_reason(err)}"
        entries: list[str] = []
        total = 0
        pending: list[tuple[int, Path]] = [(top, Path())]
        while pending:
            fd, rel_dir = pending.pop(0)
            try:
                with os.scandir(fd) as listing:
                    found = sorted(listing, key=lambda e: (not e.is_dir(follow_symlinks=False), e.name))
                for entry in found:
                    total += 1
                    rel = rel_dir / entry.name
                    if entry.is_symlink():
                        line = f"{rel} -> {os.readlink(entry.name, dir_fd=fd)}"
                    elif entry.is_dir(follow_symlinks=False):
                        line = f"{rel}/"
                        if recursive and entry.name not in _SKIP_DIRS:
                            pending.append((beneath.open_dir_at(fd, entry.name), rel))
                    else:
                        line = f"{rel}  ({_size(entry.stat(follow_symlinks=False).st_size)})"
                    if len(entries) < max_entries:
                        entries.append(line)
            finally:
                os.close(fd)
            if not recursive:
                break
        for fd, _ in pending:
            os.close(fd)
        header = f"{self._name(root, parts)}/: {total} entr{'y' if total == 1 else 'ies'}"
        if total > len(entries):
            header += f", showing the first {len(entries)} ({total - len(entries)} not shown)"
        if recursive:
            header += f" (recursive; skipping {', '.join(sorted(_SKIP_DIRS))})"
        return header + "\n" + ("\n".join(entries) if entries else "(empty)")

    def _read(self, path: str, write: bool = False) -> tuple[Path, tuple[str, ...], bytes | str]:
        """The bytes of a file to edit, or a text saying why not (missing, a folder, too large, refused)."""
        try:
            root, parts = self._locate(path, write)
            info = beneath.lstat(root, parts)
            if info is None:
                return root, parts, f"'{path}' does not exist."
            if not stat.S_ISREG(info.st_mode):
                return root, parts, f"'{path}' is not a file."
            if info.st_size > _MAX_EDIT_BYTES:
                return root, parts, f"'{path}' is larger than {_size(_MAX_EDIT_BYTES)}; not editable with edit_file."
            return root, parts, beneath.read_bytes(root, parts)
        except (PathRefused, beneath.LinkRefused) as err:
            return Path(), (), f"Refused: {_reason(err)}"

    def read_file(self, path: str, start_line: int, end_line: int | None, max_chars: int) -> str:
        try:
            root, parts = self._locate(path)
            info = beneath.lstat(root, parts)
            if info is None:
                return f"'{path}' does not exist."
            if not stat.S_ISREG(info.st_mode):
                return f"'{path}' is not a file."
            fd = beneath.open_read(root, parts)
        except (PathRefused, beneath.LinkRefused) as err:
            return f"Refused: {_reason(err)}"
        with os.fdopen(fd, "rb") as raw:
            if _is_binary(raw.read(8192)):
                return f"'{path}' is a binary file ({_size(os.fstat(fd).st_size)}); not shown."
            raw.seek(0)
            # Stream line by line: a huge file costs time, not memory.
            handle = io.TextIOWrapper(raw, encoding="utf-8", errors="replace", newline="")
            shown, total, last, cut_by_size = _numbered_lines(handle, max(start_line, 1), end_line, max_chars)
        start = max(start_line, 1)
        name = self._name(root, parts)
        header = f"{name}: lines {start}-{last} of {total}"
        if not shown:
            header = f"{name}: {total} lines; nothing in the range {start}-{end_line or 'end'}"
        if cut_by_size:
            header += f" (cut at {max_chars:,} characters; ask for start_line={last + 1} to read on)"
        return header + "\n" + "\n".join(shown)

    def _remember(self, key: tuple[Path, tuple[str, ...]], previous: bytes | None) -> None:
        history = self._history.setdefault(key, [])
        history.append(previous)
        del history[:-_HISTORY_DEPTH]

    def write_file(self, path: str, content: str) -> str:
        try:
            root, parts = self._locate(path, write=True)
            info = beneath.lstat(root, parts)
            if info is not None and stat.S_ISDIR(info.st_mode):
                return f"'{path}' is a folder; give a file path."
            previous = beneath.read_bytes(root, parts) if info is not None else None
            data = content.encode("utf-8")
            beneath.write_bytes(root, parts, data)
        except (PathRefused, beneath.LinkRefused) as err:
            return f"Refused: {_reason(err)}"
        self._remember((root, parts), previous)
        verb = "replaced" if info is not None else "created"
        return f"{verb} {self._name(root, parts)} ({_size(len(data))}, {content.count(chr(10)) + 1} lines)"

    def edit_file(self, path: str, old_text: str, new_text: str, max_chars: int) -> str:
        root, parts, data = self._read(path, write=True)
        if isinstance(data, str):
            return data.replace("does not exist.", "does not exist; use write_file to create it.")
        if len(data) > _MAX_EDIT_BYTES or _is_binary(data):
            return f"'{path}' is binary or larger than {_size(_MAX_EDIT_BYTES)}; not editable with edit_file."
        if not old_text:
            return "old_text is empty; give the exact text to replace (use write_file for a whole file)."
        before = data.decode("utf-8", errors="surrogateescape")
        count = before.count(old_text)
        if count == 0:
            return (
                f"old_text was not found in {path}. It must match exactly, including whitespace and "
                "indentation; read_file shows the current text (without the line-number column)."
            )
        if count > 1:
            return f"old_text occurs {count} times in {path}; include more surrounding text so it matches once."
        after = before.replace(old_text, new_text, 1)
        try:
            beneath.write_bytes(root, parts, after.encode("utf-8", errors="surrogateescape"))
        except beneath.LinkRefused as err:
            return f"Refused: {_reason(err)}"
        self._remember((root, parts), data)
        name = self._name(root, parts)
        return f"edited {name}\n" + self._diff(before, after, name, max_chars)

    def undo_edit(self, path: str, max_chars: int) -> str:
        try:
            root, parts = self._locate(path, write=True)
        except PathRefused as err:
            return f"Refused: {err}"
        history = self._history.get((root, parts))
        if not history:
            return (
                f"No earlier version of {path} is recorded "
                "(undo covers write_file/edit_file made through this toolkit)."
            )
        name = self._name(root, parts)
        try:
            current = beneath.read_bytes(root, parts) if beneath.lstat(root, parts) is not None else b""
            previous = history.pop()
            if previous is None:
                beneath.unlink(root, parts)
                return f"undid the creation of {name}: the file is removed."
            beneath.write_bytes(root, parts, previous)
        except beneath.LinkRefused as err:
            return f"Refused: {_reason(err)}"
        restored = previous.decode("utf-8", errors="surrogateescape")
        left = len(history)
        return (
            f"restored the previous version of {name} ({left} older version(s) left)\n"
            + self._diff(current.decode("utf-8", errors="surrogateescape"), restored, name, max_chars)
        )

    def _diff(self, before: str, after: str, name: str, max_chars: int) -> str:
        diff = "".join(
            difflib.unified_diff(
                before.splitlines(keepends=True), after.splitlines(keepends=True), f"a/{name}", f"b/{name}"
            )
        )
        if len(diff) > max_chars:
            diff = diff[:max_chars] + f"\n[... diff cut at {max_chars:,} of {len(diff):,} characters]"
        return diff or "(no change)"


def _reason(err: Exception) -> str:
    """A refusal's text without errno's prefix."""
    return err.strerror if isinstance(err, OSError) and err.strerror else str(err)


def _numbered_lines(handle: io.TextIOWrapper, start: int, end_line: int | None,
                    max_chars: int) -> tuple[list[str], int, int, bool]:
    """The numbered lines start..end_line within max_chars, the file's line count, the last line shown, and
    whether the size cap cut the range."""
    shown: list[str] = []
    used = total = 0
    cut_by_size = False
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
    return shown, total, start + len(shown) - 1, cut_by_size
