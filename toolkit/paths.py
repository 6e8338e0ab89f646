"""Confinement: every path a tool touches resolves inside the workspace (reads may also reach the
challenge's read-only data); writes never reach read-only data.

The data is either a symlink at workspace/data (no sandbox) or a read-only bind there that only the sandbox
sees; for the latter the file tools, which run outside, map `data/...` to the data folder themselves.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path

DATA_DIR = "data"


class PathRefused(Exception):
    """Internal: a path the tools will not touch. Tools turn it into a text observation."""


def _inside(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


class Confinement:
    def __init__(self, workspace: Path, read_only: Sequence[Path] = (), mounts: Mapping[str, Path] | None = None,
                 seen_as: Path | None = None):
        self.root = Path(os.path.abspath(workspace))
        self.seen_as = seen_as  # the workspace's path inside the sandbox: agents' absolute paths may start there
        self.real_root = self.root.resolve()
        self._read_only = [Path(os.path.abspath(p)) for p in read_only]
        # workspace/<name> shows this folder, read-only (a bind inside the sandbox).
        self.mounts = {name: Path(os.path.abspath(p)) for name, p in (mounts or {}).items()}

    def read_only_roots(self) -> list[Path]:
        """Read-only places, both as named and as resolved (the data folder is a symlink to a cache)."""
        roots = [*self._read_only, self.root / DATA_DIR, *self.mounts.values()]
        return list(dict.fromkeys([*roots, *(r.resolve() for r in roots)]))

    def _mounted(self, candidate: Path, text: str, write: bool) -> Path | None:
        """The real path behind a path under a mounted folder, or None when it is not under one."""
        rel = candidate.relative_to(self.root)
        if not rel.parts or rel.parts[0] not in self.mounts:
            return None
        if write:
            raise PathRefused(f"'{text}' is in the challenge's read-only data; write somewhere else in the workspace")
        target = self.mounts[rel.parts[0]]
        real = target.joinpath(*rel.parts[1:]).resolve()
        if not _inside(real, target.resolve()):
            raise PathRefused(f"'{text}' leads outside the data folder through a symlink; refused")
        return real

    def locate(self, path: str | os.PathLike[str], *, write: bool = False) -> tuple[Path, tuple[str, ...]]:
        """Where `path` lies, without touching the file system below the workspace: a trusted root and the
        components beneath it, which the tools then open one by one without following links
        (checkpoints.beneath), so a link an agent makes or swaps in is refused, not followed."""
        text = os.fspath(path)
        parts = self._lexical(text).relative_to(self.root).parts
        read_only = PathRefused(f"'{text}' is in the challenge's read-only data; write somewhere else in the workspace")
        if parts and parts[0] in self.mounts:
            if write:
                raise read_only
            return self.mounts[parts[0]].resolve(), parts[1:]
        link = self.root / DATA_DIR
        if parts and parts[0] == DATA_DIR and link.is_symlink():  # without a sandbox: the crew's link to the data
            if write:
                raise read_only
            target = link.resolve()
            if not any(_inside(target, r.resolve()) for r in self._read_only):
                raise PathRefused(f"'{text}' leads outside the workspace through a symlink; refused")
            return target, parts[1:]
        return self.real_root, parts

    def _lexical(self, text: str) -> Path:
        """`text` as an absolute path under the workspace, checked without looking at the file system."""
        if not text or "\0" in text:
            raise PathRefused("an empty path or one with a NUL byte is not a file name")
        if text.startswith("~"):
            raise PathRefused(f"'{text}' names a home folder; only paths inside the workspace are allowed")
        if ".." in Path(text).parts:
            raise PathRefused(f"'{text}' uses '..'; give a path inside the workspace without '..'")
        candidate = Path(text)
        if candidate.is_absolute():
            absolute = Path(os.path.normpath(text))
            if _inside(absolute, self.root):
                candidate = absolute
            elif self.seen_as is not None and _inside(absolute, self.seen_as):
                candidate = self.root / absolute.relative_to(self.seen_as)
            elif _inside(absolute, self.real_root):
                candidate = self.root / absolute.relative_to(self.real_root)
            else:
                raise PathRefused(f"'{text}' is outside the workspace; use a path relative to it")
        else:
            candidate = self.root / candidate
        return candidate

    def resolve(self, path: str | os.PathLike[str], *, write: bool = False) -> Path:
        """The real path `path` names, or PathRefused saying why it is not allowed. For display and for
        commands that run inside the sandbox; the file tools open through `locate`, never through this."""
        text = os.fspath(path)
        candidate = self._lexical(text)
        mounted = self._mounted(candidate, text, write)
        if mounted is not None:
            return mounted
        real = candidate.resolve()
        read_only = self.read_only_roots()
        in_read_only = any(_inside(real, r) or _inside(candidate, r) for r in read_only)
        if write and in_read_only:
            raise PathRefused(f"'{text}' is in the challenge's read-only data; write somewhere else in the workspace")
        if not _inside(real, self.real_root) and not in_read_only:
            raise PathRefused(f"'{text}' leads outside the workspace through a symlink; refused")
        return real

    def display(self, real: Path) -> str:
        """A path as the model should write it: relative to the workspace where possible."""
        for root in (self.real_root, self.root):
            if _inside(real, root):
                rel = real.relative_to(root)
                return str(rel) if str(rel) != "." else "."
        for name, target in self.mounts.items():
            if _inside(real, target.resolve()):
                return str(Path(name) / real.relative_to(target.resolve()))
        for root in self.read_only_roots():
            if _inside(real, root.resolve()) and root.is_relative_to(self.root):
                return str(root.relative_to(self.root) / real.relative_to(root.resolve()))
        return str(real)
