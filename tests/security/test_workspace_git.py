"""The crew's git on the agents' workspace reads no file through a link: a folder swapped for a link to private
data between git's listing and the commit (what a racing job does, and won under load in the red-team run)
commits nothing of the private data."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import crew.run.workspace_git as workspace_git
from crew.run.workspace_git import commit_all, git_dir, init_repo

SECRET = "HELDOUT-ANSWER-91f3"


def _objects(workspace: Path) -> bytes:
    return subprocess.run(["git", "--git-dir", str(git_dir(workspace)), "cat-file", "--batch-all-objects", "--batch"],
                          capture_output=True, check=True).stdout


def test_a_folder_swapped_for_a_link_after_the_listing_commits_nothing_of_its_target(tmp_path, monkeypatch):
    private = tmp_path / "private"
    private.mkdir()
    (private / "answer.txt").write_text(f"0.42\n{SECRET}\n")
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    assert init_repo(workspace)
    (workspace / "box").mkdir()
    (workspace / "box" / "answer.txt").write_text("0.5")  # the decoy git lists
    (workspace / "train.py").write_text("print('honest work')\n")
    (workspace / "run.sh").write_text("#!/bin/sh\n")
    (workspace / "run.sh").chmod(0o755)
    os.symlink("train.py", workspace / "latest.py")

    real_git = workspace_git._git

    def git_then_swap(ws, *args, **kwargs):
        out = real_git(ws, *args, **kwargs)
        if args[:1] == ("ls-files",) and "--others" in args and (ws / "box").is_dir():
            (ws / "box").rename(ws / "decoy")  # the agent's job wins the race: box is now a link to private/
            os.symlink(private, ws / "box")
        return out

    monkeypatch.setattr(workspace_git, "_git", git_then_swap)
    commit = commit_all(workspace, "before scoring box")
    assert commit is not None
    assert SECRET.encode() not in _objects(workspace)
    files = subprocess.run(["git", "--git-dir", str(git_dir(workspace)), "ls-tree", "-r", commit],
                           capture_output=True, text=True, check=True).stdout
    assert "box/answer.txt" not in files  # refused: a link on its way
    assert "100644 blob" in files and "\ttrain.py" in files
    assert "100755 blob" in files and "\trun.sh" in files  # the executable bit kept
    assert "120000 blob" in files and "\tlatest.py" in files  # a link stored as a link
    shown = subprocess.run(["git", "--git-dir", str(git_dir(workspace)), "show", f"{commit}:train.py"],
                           capture_output=True, text=True, check=True).stdout
    assert shown == "print('honest work')\n"


def test_deleted_files_leave_the_next_commit(tmp_path):
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    (workspace / "old.py").write_text("x = 1\n")
    init_repo(workspace)
    (workspace / "old.py").unlink()
    commit = commit_all(workspace, "after the delete")
    files = subprocess.run(["git", "--git-dir", str(git_dir(workspace)), "ls-tree", "-r", "--name-only", commit],
                           capture_output=True, text=True, check=True).stdout.split()
    assert "old.py" not in files and ".gitignore" in files
