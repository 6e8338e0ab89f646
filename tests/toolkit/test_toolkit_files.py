"""File tools on a real workspace: confinement, read-only data, line ranges, exact edits, undo."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from toolkit import Toolkit


@pytest.fixture
def setup(tmp_path: Path) -> tuple[Toolkit, Path, Path]:
    """A run whose workspace has data/ linked to a cache folder, plus a secret file outside."""
    cache = tmp_path / "cache" / "minipile"
    cache.mkdir(parents=True)
    (cache / "train.txt").write_text("hello data\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("top secret\n")
    workspace = tmp_path / "run" / "workspace"
    workspace.mkdir(parents=True)
    (workspace / "data").symlink_to(cache)
    (workspace / "notes.txt").write_text("inside\n")
    (workspace / "link_out").symlink_to(outside / "secret.txt")
    (workspace / "dir_out").symlink_to(outside)
    (workspace / "chain1").symlink_to(workspace / "chain2")
    (workspace / "chain2").symlink_to(outside)
    tk = Toolkit(tmp_path / "run", read_only=[cache], max_output_chars=400)
    return tk, outside, cache


ESCAPES = [
    "/etc/passwd",  # absolute, elsewhere
    "../outside/secret.txt",  # parent traversal
    "sub/../../outside/secret.txt",  # traversal hidden behind a folder
    "./../outside/secret.txt",  # dot then traversal
    "~/secret.txt",  # home expansion
    "link_out",  # symlink to a file outside
    "dir_out/secret.txt",  # symlinked folder leading outside
    "chain1/secret.txt",  # a chain of symlinks leading outside
    "notes.txt\0.png",  # NUL byte trick
    "",  # empty path
    "{outside}/secret.txt",  # absolute path to the outside folder
    "{workspace}/../outside/secret.txt",  # absolute, via the workspace, with '..'
    "//etc/passwd",  # doubled slash
    "data/../../outside/secret.txt",  # traversal from the data mount
]


@pytest.mark.parametrize("raw", ESCAPES)
def test_path_escapes_are_refused_for_read_and_write(setup, raw: str) -> None:
    tk, outside, _ = setup
    path = raw.format(outside=outside, workspace=tk.workspace)
    read = tk.read_file(path)
    assert read.startswith("Refused:"), read
    assert "top secret" not in read
    wrote = tk.write_file(path, "pwned")
    assert wrote.startswith("Refused:"), wrote
    assert (outside / "secret.txt").read_text() == "top secret\n"
    assert tk.edit_file(path, "top", "pwned").startswith("Refused:")
    assert tk.list_files(path).startswith("Refused:")


def test_escape_forms_are_at_least_ten() -> None:
    assert len(ESCAPES) >= 10


def test_read_only_data_is_readable_but_not_writable(setup) -> None:
    tk, _, cache = setup
    assert "hello data" in tk.read_file("data/train.txt")
    assert "train.txt" in tk.list_files("data")
    for target in ("data/train.txt", "data/new.txt", "data/sub/new.txt", "data"):
        answer = tk.write_file(target, "overwritten")
        assert answer.startswith("Refused:") and "read-only" in answer, answer
    assert tk.write_file(f"{cache}/train.txt", "overwritten").startswith("Refused:")
    assert tk.edit_file("data/train.txt", "hello", "bye").startswith("Refused:")
    assert (cache / "train.txt").read_text() == "hello data\n"
    assert not (cache / "new.txt").exists()


def test_absolute_paths_inside_the_workspace_are_fine(setup) -> None:
    tk, _, _ = setup
    assert "inside" in tk.read_file(str(tk.workspace / "notes.txt"))


def test_write_creates_folders_and_read_gives_numbered_line_ranges(setup) -> None:
    tk, _, _ = setup
    content = "".join(f"line {i}\n" for i in range(1, 101))
    assert "created" in tk.write_file("src/big.txt", content)
    part = tk.read_file("src/big.txt", start_line=10, end_line=12)
    assert "lines 10-12 of 100" in part
    assert "    10\tline 10" in part and "line 13" not in part and "line 9\n" not in part
    capped = tk.read_file("src/big.txt")
    assert "cut at 400 characters" in capped and "start_line=" in capped
    assert len(capped) < 600
    assert "replaced" in tk.write_file("src/big.txt", "short\n")


def test_binary_and_missing_files(setup) -> None:
    tk, _, _ = setup
    (tk.workspace / "blob.bin").write_bytes(b"\0\1\2" * 100)
    assert "binary" in tk.read_file("blob.bin")
    assert "does not exist" in tk.read_file("nope.txt")


def test_edit_must_match_exactly_once_and_returns_a_diff(setup) -> None:
    tk, _, _ = setup
    tk.write_file("train.py", "lr = 0.1\nsteps = 10\nlr_min = 0.1\n")
    diff = tk.edit_file("train.py", "steps = 10", "steps = 20")
    assert "-steps = 10" in diff and "+steps = 20" in diff and "@@" in diff
    twice = tk.edit_file("train.py", "0.1", "0.2")
    assert "occurs 2 times" in twice
    missing = tk.edit_file("train.py", "steps=20", "x")
    assert "not found" in missing
    assert (tk.workspace / "train.py").read_text() == "lr = 0.1\nsteps = 20\nlr_min = 0.1\n"


def test_undo_walks_back_the_history_per_file(setup) -> None:
    tk, _, _ = setup
    tk.write_file("a.txt", "one\n")
    tk.edit_file("a.txt", "one", "two")
    tk.edit_file("a.txt", "two", "three")
    tk.write_file("b.txt", "other\n")
    assert "+two" in tk.undo_edit("a.txt")
    assert (tk.workspace / "a.txt").read_text() == "two\n"
    tk.undo_edit("a.txt")
    assert (tk.workspace / "a.txt").read_text() == "one\n"
    assert "removed" in tk.undo_edit("a.txt")
    assert not (tk.workspace / "a.txt").exists()
    assert "No earlier version" in tk.undo_edit("a.txt")
    assert (tk.workspace / "b.txt").read_text() == "other\n"


def test_list_files_flat_recursive_and_cut(setup) -> None:
    tk, _, _ = setup
    for i in range(400):
        tk.write_file(f"many/f{i:03d}.txt", "x")
    tk.write_file("many/.git/config", "x")
    flat = tk.list_files(".")
    assert "notes.txt" in flat and "data ->" in flat and "many/" in flat and "f000" not in flat
    deep = tk.list_files(".", recursive=True)
    assert "many/f000.txt" in deep and "not shown" in deep and ".git/config" not in deep


def test_writes_are_atomic_files_not_symlink_follows(setup) -> None:
    tk, outside, _ = setup
    # A symlink planted inside the workspace to a file outside must not be written through.
    os.symlink(outside / "secret.txt", tk.workspace / "planted")
    assert tk.write_file("planted", "x").startswith("Refused:")
    assert (outside / "secret.txt").read_text() == "top secret\n"


def test_file_system_errors_come_back_as_text(setup) -> None:
    tk, _, _ = setup
    tk.write_file("plain.txt", "x")
    answer = tk.write_file("plain.txt/child.txt", "y")  # a file where a folder should be
    assert answer.startswith("write_file failed:") and "plain.txt" in answer
