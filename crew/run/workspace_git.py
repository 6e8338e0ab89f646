"""The workspace as a git repository: the crew commits the agents' own files at every evaluation, so the
exact code behind each score can be checked out and diffed. Data and large outputs stay out of it.

The crew runs this git on the host, on files the agents write, so it reads nothing they can write but the
work tree itself: the repository (objects, index, config, hooks) lives beside the workspace, in
`<run>/workspace.git`, which the sandbox never shows; no system or global config is read, hooks and fsmonitor
are off, and the environment is a fixed one. An agent's own `workspace/.git` is just files to git here.
Git only lists the work tree: the crew reads each file itself, opening every component without following links,
and hands git the bytes, so a folder swapped for a link to private data never reaches a commit."""

from __future__ import annotations

import logging
import os
import shutil
import stat
import subprocess
import threading
from pathlib import Path

from checkpoints import beneath

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


def _git(workspace: Path, *args: str, stdin: str | bytes | None = None, check: bool = True) -> str:
    env = {**GIT_ENV, "PATH": os.environ.get("PATH", "/usr/bin:/bin"), "GIT_DIR": str(git_dir(workspace)),
           "GIT_WORK_TREE": str(workspace)}
    data = stdin.encode() if isinstance(stdin, str) else stdin
    done = subprocess.run([*GIT, *args], cwd=workspace, capture_output=True, timeout=60, check=check, env=env,
                          input=data if data is not None else b"")
    return done.stdout.decode("utf-8", "replace").strip()


def _index_entry(workspace: Path, name: str) -> str | None:
    """An index line ("mode sha\tpath") for a small file or a link, its content read by the crew itself without
    following any link on the way (checkpoints.beneath), written to git from memory. `git add` would open the
    path by name, through a folder an agent's job swapped for a link to private data a moment before."""
    try:
        info = beneath.lstat(workspace, name)
        if info is None:
            return None
        if stat.S_ISLNK(info.st_mode):  # git stores the link itself, never what it points at
            with beneath.parent_dir(workspace, name) as (dir_fd, last):
                content, mode = os.fsencode(os.readlink(last, dir_fd=dir_fd)), "120000"
        elif stat.S_ISREG(info.st_mode) and info.st_size <= MAX_FILE_BYTES:
            with os.fdopen(beneath.open_read(workspace, name), "rb") as handle:
                content = handle.read(MAX_FILE_BYTES + 1)
            if len(content) > MAX_FILE_BYTES:  # it grew since: an output, not code
                return None
            mode = "100755" if info.st_mode & 0o111 else "100644"
        else:
            return None
    except OSError as err:  # a link on the way (LinkRefused), or the file went away: not committed
        log.info("not committed: %s (%s)", name, err)
        return None
    sha = _git(workspace, "hash-object", "-w", "--stdin", stdin=content)
    return f"{mode} {sha}\t{name}\n"


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
        entries = [entry for name in listed.split("\0") if name and (entry := _index_entry(workspace, name))]
        if entries:
            _git(workspace, "update-index", "--add", "--index-info", stdin="".join(entries))
        deleted = [name for name in _git(workspace, "ls-files", "-z", "--deleted").split("\0") if name]
        if deleted:
            _git(workspace, "update-index", "--force-remove", "--", *deleted)
        # Plumbing, so that git reads nothing more of the work tree than the listing above.
        tree = _git(workspace, "write-tree")
        parent = _git(workspace, "rev-parse", "-q", "--verify", "HEAD", check=False)
        commit = _git(workspace, "commit-tree", tree, *(["-p", parent] if parent else []), "-m", message)
        _git(workspace, "update-ref", "HEAD", commit)
        return commit
    except (subprocess.SubprocessError, OSError) as err:  # a broken repository must not stop an evaluation
        log.warning("could not commit the workspace: %s", err)
        return None
