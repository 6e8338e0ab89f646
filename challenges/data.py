"""Preparing a challenge's data once per (challenge, preset), cached across runs."""

from __future__ import annotations

import fcntl
import hashlib
import logging
import os
import shutil
import stat
from dataclasses import dataclass
from pathlib import Path

from challenges.api import ScoreContext
from challenges.spec import Challenge

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

    The cache key includes a hash of prepare.py, challenge.toml and the shared helpers in challenges/,
    so an edited challenge prepares afresh. A lock keeps two runs from preparing at once; a half-prepared
    folder is never used.
    """
    challenge.preset(preset)  # unknown preset: ChallengeError before anything is written
    folder = cache_root() / "data" / challenge.name / preset
    target = folder / _fingerprint(challenge)
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
        from challenges.loader import load_module

        log.info("preparing data for %s (%s preset)", challenge.name, preset)
        load_module(challenge.directory / "prepare.py", f"challenge_prepare_{challenge.name}").prepare(ctx)
    shutil.rmtree(ctx.scratch_dir, ignore_errors=True)
    _make_read_only(ctx.data_dir)


def _make_read_only(folder: Path) -> None:
    # Files only: folders stay writable so that the cache can still be deleted by its owner.
    for path in folder.rglob("*"):
        if path.is_file() and not path.is_symlink():
            path.chmod(path.stat().st_mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))


def _fingerprint(challenge: Challenge) -> str:
    """Hash of what decides the data: the challenge's toml and prepare.py, and our shared helpers."""
    digest = hashlib.sha256()
    helpers = sorted(Path(__file__).parent.glob("*.py"))
    for path in [challenge.directory / "challenge.toml", challenge.directory / "prepare.py", *helpers]:
        if path.is_file():
            digest.update(path.name.encode() + path.read_bytes())
    return digest.hexdigest()[:12]
