"""The workspace as a git repository: the crew commits the agents' own files at every evaluation, so the
exact code behind each score can be checked out and diffed. Data and large outputs stay out of it."""

from __future__ import annotations

import logging
import shutil
import subprocess
import threading
from pathlib import Path

log = logging.getLogger(__name__)
MAX_FILE_BYTES = 1 << 20  # larger files (weights, datasets) are outputs, not code
IGNORED = ["data", "*.pt", "*.pth", "*.bin", "*.safetensors", "*.ckpt", "*.npy", "*.arrow", "*.parquet",
           "__pycache__/", "*-checkpoints/", "ckpt/", "checkpoints/", "wandb/", "papers/"]
GIT = ["git", "-c", "user.name=research-crew", "-c", "user.email=crew@localhost", "-c", "commit.gpgsign=false",
       "-c", "core.hooksPath=/dev/null"]
_COMMITTING = threading.Lock()  # two workers evaluating at once would race for git's index.lock


def _git(workspace: Path, *args: str) -> str:
    done = subprocess.run([*GIT, *args], cwd=workspace, capture_output=True, text=True, timeout=60, check=True)
    return done.stdout.strip()


def init_repo(workspace: Path) -> bool:
    """Make the workspace a repository with an ignore list; False (and a warning) where git is missing."""
    if shutil.which("git") is None:
        log.warning("git is not installed: evaluations will not record the code behind them")
        return False
    if not (workspace / ".git").exists():
        (workspace / ".gitignore").write_text("\n".join(IGNORED) + "\n")
        _git(workspace, "init", "-q", "-b", "main")
        commit_all(workspace, "the workspace at the start of the run")
    return True


def commit_all(workspace: Path, message: str) -> str | None:
    """Commit every new or changed file of at most MAX_FILE_BYTES; return the commit's id (None without git)."""
    if not (workspace / ".git").exists() or shutil.which("git") is None:
        return None
    with _COMMITTING:
        return _commit(workspace, message)


def _commit(workspace: Path, message: str) -> str | None:
    try:
        listed = _git(workspace, "ls-files", "-z", "--others", "--modified", "--exclude-standard")
        files = [name for name in listed.split("\0") if name and (workspace / name).is_file()
                 and (workspace / name).stat().st_size <= MAX_FILE_BYTES]
        if files:
            _git(workspace, "add", "--", *files)
        deleted = [name for name in _git(workspace, "ls-files", "-z", "--deleted").split("\0") if name]
        if deleted:
            _git(workspace, "rm", "-q", "--cached", "--", *deleted)
        _git(workspace, "commit", "-q", "--allow-empty", "-m", message)
        return _git(workspace, "rev-parse", "HEAD")
    except (subprocess.SubprocessError, OSError) as err:  # a broken repository must not stop an evaluation
        log.warning("could not commit the workspace: %s", err)
        return None
