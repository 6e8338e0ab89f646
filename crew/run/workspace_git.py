"""The workspace as a git repository: the crew commits the agents' own files at every evaluation, so the
exact code behind each score can be checked out and diffed. Data and large outputs stay out of it.

The crew runs this git on the host, on files the agents write, so it reads nothing they can write but the
work tree itself: the repository (objects, index, config, hooks) lives beside the workspace, in
`<run>/workspace.git`, which the sandbox never shows; no system or global config is read, hooks and fsmonitor
are off, and the environment is a fixed one. An agent's own `workspace/.git` is just files to git here."""

from __future__ import annotations

import logging
import os
import shutil
import stat
import subprocess
import threading
from pathlib import Path

log = logging.getLogger(__name__)
MAX_FILE_BYTES = 1 << 20  # larger files (weights, datasets) are outputs, not code
IGNORED = ["data", "*.pt", "*.pth", "*.bin", "*.safetensors", "*.ckpt", "*.npy", "*.arrow", "*.parquet",
           "__pycache__/", "*-checkpoints/", "ckpt/", "checkpoints/", "wandb/", "papers/"]
GIT = ["git", "-c", "user.name=research-crew", "-c", "user.email=crew@localhost", "-c", "commit.gpgsign=false",
       "-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false", "-c", "core.untrackedCache=false",
       "-c", "core.symlinks=true", "-c", "protocol.allow=never"]
GIT_ENV = {"GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_TERMINAL_PROMPT": "0",
           "HOME": "/nonexistent", "LC_ALL": "C"}
_COMMITTING = threading.Lock()  # two workers evaluating at once would race for git's index.lock


def git_dir(workspace: Path) -> Path:
    """Where the workspace's repository lives: beside it, out of the agents' reach."""
    return workspace.with_name(workspace.name + ".git")


def _git(workspace: Path, *args: str) -> str:
    env = {**GIT_ENV, "PATH": os.environ.get("PATH", "/usr/bin:/bin"), "GIT_DIR": str(git_dir(workspace)),
           "GIT_WORK_TREE": str(workspace)}
    done = subprocess.run([*GIT, *args], cwd=workspace, capture_output=True, text=True, timeout=60, check=True,
                          env=env, stdin=subprocess.DEVNULL)
    return done.stdout.strip()


def _small_file_or_link(path: Path) -> bool:
    """A regular file of at most MAX_FILE_BYTES, or a symlink (git stores the link, never what it points at)."""
    try:
        info = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISLNK(info.st_mode) or (stat.S_ISREG(info.st_mode) and info.st_size <= MAX_FILE_BYTES)


def init_repo(workspace: Path) -> bool:
    """Make the workspace a repository with an ignore list; False (and a warning) where git is missing."""
    if shutil.which("git") is None:
        log.warning("git is not installed: evaluations will not record the code behind them")
        return False
    if not git_dir(workspace).exists():
        (workspace / ".gitignore").write_text("\n".join(IGNORED) + "\n")
        _git(workspace, "init", "-q", "-b", "main")
        commit_all(workspace, "the workspace at the start of the run")
    return True


def commit_all(workspace: Path, message: str) -> str | None:
    """Commit every new or changed file of at most MAX_FILE_BYTES; return the commit's id (None without git)."""
    if not git_dir(workspace).exists() or shutil.which("git") is None:
        return None
    with _COMMITTING:
        return _commit(workspace, message)


def _commit(workspace: Path, message: str) -> str | None:
    try:
        listed = _git(workspace, "ls-files", "-z", "--others", "--modified", "--exclude-standard")
        files = [name for name in listed.split("\0") if name and _small_file_or_link(workspace / name)]
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
