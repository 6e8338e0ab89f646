"""Data preparation runs once per (challenge, preset) and is cached across runs."""

from __future__ import annotations

import json
import shutil

import pytest

from challenges.framework.api import ChallengeError, DatasetUnavailable
from challenges.framework.data import PACKAGE_ROOT, fingerprint, imported_package_files, prepare_data
from challenges.framework.loader import load_challenge
from tests.foundation.helpers import write_challenge

COUNTING_PREPARE = """\
from pathlib import Path

def prepare(ctx):
    counter = Path({counter!r})
    counter.write_text(str(int(counter.read_text() or 0) + 1) if counter.exists() else "1")
    (ctx.data_dir / "train.txt").write_text("visible")
    (ctx.private_dir / "answers.txt").write_text("hidden")
"""


def test_prepare_runs_once_and_is_reused(tmp_path):
    counter = tmp_path / "count"
    folder = write_challenge(tmp_path / "c", prepare=COUNTING_PREPARE.format(counter=str(counter)))
    challenge = load_challenge(folder)
    first = prepare_data(challenge, "smoke")
    second = prepare_data(challenge, "smoke")
    assert not first.cached and second.cached
    assert counter.read_text() == "1"
    assert first.data_dir == second.data_dir
    assert (second.data_dir / "train.txt").read_text() == "visible"
    assert (second.private_dir / "answers.txt").read_text() == "hidden"
    assert not (second.data_dir / "train.txt").stat().st_mode & 0o222  # read-only for agents


def test_an_edited_prepare_prepares_afresh(tmp_path):
    counter = tmp_path / "count"
    folder = write_challenge(tmp_path / "c", prepare=COUNTING_PREPARE.format(counter=str(counter)))
    first = prepare_data(load_challenge(folder), "smoke")
    with open(folder / "prepare.py", "a") as handle:
        handle.write("# changed\n")
    second = prepare_data(load_challenge(folder), "smoke")
    assert counter.read_text() == "2" and first.data_dir != second.data_dir


def test_a_failed_prepare_leaves_nothing_half_done(tmp_path):
    folder = write_challenge(tmp_path / "c", prepare="""\
        def prepare(ctx):
            (ctx.data_dir / "partial.bin").write_text("half")
            raise RuntimeError("disk full")
        """)
    challenge = load_challenge(folder)
    with pytest.raises(RuntimeError, match="disk full"):
        prepare_data(challenge, "smoke")
    (folder / "prepare.py").write_text("def prepare(ctx):\n    (ctx.data_dir / 'ok.txt').write_text('ok')\n")
    data = prepare_data(load_challenge(folder), "smoke")
    assert not data.cached and [p.name for p in data.data_dir.iterdir()] == ["ok.txt"]


def test_unknown_preset_is_refused_before_any_work(tmp_path):
    folder = write_challenge(tmp_path / "c")
    with pytest.raises(ChallengeError, match="no preset 'full'"):
        prepare_data(load_challenge(folder), "full")


def test_minipile_smoke_data_is_built_offline():
    data = prepare_data(load_challenge("minipile"), "smoke")
    meta = json.loads((data.data_dir / "meta.json").read_text())
    assert meta["tokens"]["train"] > 100_000 and meta["vocab_size"] == 4096
    assert (data.data_dir / "tokenizer" / "tokenizer.json").is_file()
    for task in ("smoke_boolq", "smoke_cb", "smoke_copa"):
        items = (data.private_dir / "superglue_smoke" / f"{task}.jsonl").read_text().splitlines()
        assert len(items) == 100 and "label" in json.loads(items[0])
    assert not any(data.data_dir.rglob("*.jsonl"))  # the answers stay private


def test_unreachable_hub_dataset_names_the_id_and_says_offline():
    # HF_DATASETS_OFFLINE=1 (set for every test) makes the download fail at once, as with no network.
    with pytest.raises(DatasetUnavailable) as info:
        prepare_data(load_challenge("minipile"), "full")
    assert "AlgorithmicResearchGroup/minipile" in info.value.message and "offline" in info.value.message
    assert "--preset smoke" in info.value.hint


def test_an_edited_helper_beside_prepare_prepares_afresh(tmp_path):
    counter = tmp_path / "count"
    folder = write_challenge(tmp_path / "c", prepare="from helper import ROWS\n" + COUNTING_PREPARE.format(
        counter=str(counter)))
    (folder / "helper.py").write_text("ROWS = 3\n")
    first = prepare_data(load_challenge(folder), "smoke")
    (folder / "helper.py").write_text("ROWS = 4\n")
    second = prepare_data(load_challenge(folder), "smoke")
    assert counter.read_text() == "2" and first.data_dir != second.data_dir


def test_the_key_follows_the_library_modules_prepare_imports_not_the_harness(tmp_path, monkeypatch):
    package = tmp_path / "pkg" / "challenges"  # a copy of the framework and library, to edit
    shutil.copytree(PACKAGE_ROOT / "lib", package / "lib", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(PACKAGE_ROOT / "framework", package / "framework", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(PACKAGE_ROOT / "__init__.py", package / "__init__.py")
    monkeypatch.setattr("challenges.framework.data.PACKAGE_ROOT", package)
    folder = write_challenge(tmp_path / "c", prepare="""\
        from challenges.lib.tokens import write_meta

        def prepare(ctx):
            write_meta(ctx.data_dir, rows=1)
        """)
    challenge = load_challenge(folder)
    assert {p.relative_to(package).as_posix() for p in imported_package_files(folder / "prepare.py")} == {
        "__init__.py", "framework/__init__.py", "framework/api.py", "lib/__init__.py", "lib/tokens.py"}
    key = fingerprint(challenge)
    with open(package / "framework" / "harness.py", "a") as handle:
        handle.write("# edited\n")
    assert fingerprint(challenge) == key  # the harness is not what the data depends on
    with open(package / "lib" / "tokens.py", "a") as handle:
        handle.write("# edited\n")
    assert fingerprint(challenge) != key
