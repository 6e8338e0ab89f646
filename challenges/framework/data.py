"""Preparing a challenge's data once per (challenge, preset), cached across runs."""

from __future__ import annotations

import ast
import fcntl
import hashlib
import logging
import os
import shutil
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from challenges.framework.api import ScoreContext, row_limit
from challenges.framework.spec import Challenge

log = logging.getLogger(__name__)
DONE_MARKER = ".complete"


@dataclass(frozen=True)
class PreparedData:
    data_dir: Path
    private_dir: Path
    cached: bool  # True when an earlier run had already prepared it


def cache_root() -> Path:
    """RESEARCH_CREW_CACHE, else $XDG_CACHE_HOME/research-crew, else ~/.cache/research-crew."""
    if explicit := os.environ.get("RESEARCH_CREW_CACHE"):
        return Path(explicit).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "research-crew"


def prepare_data(challenge: Challenge, preset: str, device: str = "cpu") -> PreparedData:
    """Return the challenge's prepared data, running its prepare step only if no run has done it yet.

    The cache key is a hash of what prepare depends on (see `fingerprint`): an edited challenge folder
    prepares afresh, an edit elsewhere (the harness, a library module prepare does not import) does not.
    A lock keeps two runs from preparing at once; a half-prepared folder is never used.
    """
    challenge.preset(preset)  # unknown preset: ChallengeError before anything is written
    folder = cache_root() / "data" / challenge.name / preset
    target = folder / fingerprint(challenge)
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (target / DONE_MARKER).exists():
            return PreparedData(target / "data", target / "private", cached=True)
        staging = folder / f".staging-{os.getpid()}"
        shutil.rmtree(staging, ignore_errors=True)
        try:
            _run_prepare(challenge, preset, device, staging)
            (staging / DONE_MARKER).touch()
            shutil.rmtree(target, ignore_errors=True)  # an incomplete leftover of a crashed prepare
            os.replace(staging, target)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    return PreparedData(target / "data", target / "private", cached=False)


def _run_prepare(challenge: Challenge, preset: str, device: str, staging: Path) -> None:
    ctx = ScoreContext(
        challenge=challenge.name, preset=preset, data_dir=staging / "data", private_dir=staging / "private",
        scratch_dir=staging / "scratch", device=device, challenge_dir=challenge.directory,
    )
    for path in (ctx.data_dir, ctx.private_dir, ctx.scratch_dir):
        path.mkdir(parents=True)
    if challenge.has_prepare:
        from challenges.framework.loader import load_module

        log.info("preparing data for %s (%s preset)", challenge.name, preset)
        load_module(challenge.directory / "prepare.py", f"challenge_prepare_{challenge.name}").prepare(ctx)
    shutil.rmtree(ctx.scratch_dir, ignore_errors=True)
    _make_read_only(ctx.data_dir)


def _make_read_only(folder: Path) -> None:
    # Files only: folders stay writable so that the cache can still be deleted by its owner.
    for path in folder.rglob("*"):
        if path.is_file() and not path.is_symlink():
            path.chmod(path.stat().st_mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))


def is_prepared(challenge: Challenge, preset: str) -> bool:
    """True when an earlier run has already prepared this preset's data as the challenge now stands."""
    return (cache_root() / "data" / challenge.name / preset / fingerprint(challenge) / DONE_MARKER).exists()


def fingerprint(challenge: Challenge) -> str:
    """Hash of what decides the data: every file of the challenge folder, and every module of this package
    that its prepare.py imports, directly or through its own helpers (the harness is not among them)."""
    folder = challenge.directory.resolve()
    digest = hashlib.sha256()
    for path in sorted(p for p in folder.rglob("*") if p.is_file() and "__pycache__" not in p.parts):
        digest.update(str(path.relative_to(folder)).encode() + b"\0" + path.read_bytes())
    for path in sorted(imported_package_files(folder / "prepare.py")):
        digest.update(str(path.relative_to(PACKAGE_ROOT.parent)).encode() + b"\0" + path.read_bytes())
    _hash_external_inputs(challenge, digest)
    key = digest.hexdigest()[:12]  # a capped preparation (RESEARCH_CREW_ROW_LIMIT) is never taken for a full one
    return key if row_limit() is None else f"{key}-rows{row_limit()}"


PACKAGE_ROOT = Path(__file__).resolve().parents[1]  # challenges/


def _hash_external_inputs(challenge: Challenge, digest) -> None:
    """What prepare declares it reads from outside the folder ([prepare] env and paths): each variable's value,
    and the content of the file or folder a variable or path names, so that a new competition zip given from
    outside prepares afresh."""
    for name in challenge.prepare_env:
        value = os.environ.get(name)
        digest.update(f"env:{name}={value}".encode() + b"\0")
        if value and Path(value).expanduser().exists():
            _hash_tree(Path(value).expanduser(), digest)
    for text in challenge.prepare_paths:
        path = Path(text).expanduser()
        path = path if path.is_absolute() else challenge.directory / path
        digest.update(f"path:{text}".encode() + b"\0")
        _hash_tree(path, digest)


def _hash_tree(path: Path, digest) -> None:
    if not path.exists():
        digest.update(b"missing\0")
        return
    files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
    for file in files:
        digest.update(str(file.relative_to(path) if path.is_dir() else file.name).encode() + b"\0")
        with open(file, "rb") as handle:
            for chunk in iter(lambda: handle.read(1 << 20), b""):
                digest.update(chunk)


def imported_package_files(start: Path) -> set[Path]:
    """The files of the `challenges` package that `start` imports, followed through the modules it reaches
    (its sibling helpers included). Read from the source, never imported; imports inside functions count."""
    folder, seen, found = start.parent.resolve(), set(), set()
    todo = [start.resolve()] if start.is_file() else []
    while todo:
        path = todo.pop()
        if path in seen:
            continue
        seen.add(path)
        for name in _imported_names(path):
            target = _module_file(name, folder)
            if target is not None:
                todo.append(target)
                if target.is_relative_to(PACKAGE_ROOT) and not target.is_relative_to(folder):
                    found.add(target)
    return found


def _imported_names(path: Path) -> Iterator[str]:
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    except (SyntaxError, UnicodeDecodeError):
        return
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module, *(f"{node.module}.{alias.name}" for alias in node.names)]  # `from pkg import mod`
        else:
            continue
        for name in names:  # importing a.b.c runs a/__init__.py and a/b/__init__.py first
            parts = name.split(".")
            yield from (".".join(parts[:i]) for i in range(1, len(parts) + 1))


def _module_file(name: str, folder: Path) -> Path | None:
    """The file of a module of the `challenges` package, or of a helper beside prepare.py; None otherwise."""
    if name == "challenges" or name.startswith("challenges."):
        base = PACKAGE_ROOT.parent.joinpath(*name.split("."))
    else:
        base = folder.joinpath(*name.split("."))
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate.resolve()
    return None
