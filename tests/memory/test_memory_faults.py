"""Faults: a corrupted store, concurrent writers, a process restart, an unloadable model."""

import json
import logging
import subprocess
import sys
import time
from pathlib import Path

import pytest

from memory import Memory, MemoryStoreError, OutcomeClass, load_embedder
from memory.store import VectorStore

PROC = Path(__file__).with_name("memory_proc.py")


def _run(*args: str, background: bool = False):
    cmd = [sys.executable, str(PROC), *args]
    if background:
        return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stdout + done.stderr
    return done


def test_corrupted_store_is_moved_aside_with_a_warning(tmp_path, embedder, caplog):
    root = tmp_path / "run" / "memory"
    with Memory(tmp_path / "run", global_dir=False, embedder=embedder) as mem:
        mem.propose("Adding dropout of 0.1 to the attention layers will reduce overfitting.")
    database = root / "data" / "chroma.sqlite3"
    database.write_bytes(b"this is not a database" * 100)

    with caplog.at_level(logging.WARNING, logger="memory"):
        mem = Memory(tmp_path / "run", global_dir=False, embedder=embedder)
    aside = mem.run_store.recovered_from
    assert aside is not None and aside.parent == root and aside.name.startswith("data.corrupt-")
    assert (aside / "chroma.sqlite3").read_bytes() == b"this is not a database" * 100  # kept, not deleted
    warning = caplog.records[-1].getMessage()
    assert str(root / "data") in warning and str(aside) in warning
    # The fresh store works.
    assert mem.hypotheses() == []
    mem.propose("Label smoothing of 0.1 will improve calibration.")
    assert len(mem.hypotheses()) == 1
    mem.close()


def test_unreadable_manifest_counts_as_corrupted(tmp_path, caplog):
    VectorStore(tmp_path / "store", "m").close()
    (tmp_path / "store" / "data" / "store.json").write_text("{not json")
    with caplog.at_level(logging.WARNING, logger="memory"):
        store = VectorStore(tmp_path / "store", "m")
    assert store.recovered_from is not None and (store.recovered_from / "store.json").exists()
    assert "moved it to" in caplog.text
    store.close()


@pytest.mark.parametrize("model", ["/no/such/model-folder", "nobody/no-such-model"])
def test_unloadable_model_names_it_and_the_bundled_one(model):
    with pytest.raises(MemoryStoreError) as err:
        load_embedder(model)
    assert repr(model) in err.value.message
    assert "bundled" in err.value.hint and "all-MiniLM-L6-v2" in err.value.hint


def test_unloadable_model_through_memory(tmp_path):
    mem = Memory(tmp_path / "run", global_dir=False, model="/no/such/model-folder")
    with pytest.raises(MemoryStoreError, match="could not load the embedding model"):
        mem.propose("anything")
    mem.close()


def test_outcomes_persist_across_a_process_restart(tmp_path, embedder):
    # A run already open on the global store must also see what the other process wrote since.
    later = Memory(tmp_path / "run-second", global_dir=tmp_path / "global", embedder=embedder)
    assert later.recall("learning rate schedule") == []
    out = tmp_path / "first.json"
    _run("restart", str(tmp_path / "run-first"), str(tmp_path / "global"), str(out))
    first_id = json.loads(out.read_text())["id"]

    with Memory(tmp_path / "run-first", global_dir=tmp_path / "global", embedder=embedder) as again:
        h = again.get(first_id)
        assert h.outcome.status is OutcomeClass.WORSE and h.evaluations[0].path == "evaluations/ev-1.json"
        assert again.read_log()[0].summary.startswith("Tried a cosine schedule")
    proposal = later.propose("A cosine-annealed learning rate should reduce the final validation loss.")
    later.close()
    assert proposal.similar[0].hypothesis.id == first_id
    assert "tried in run run-first: worse by 3.1%" in str(proposal)


def test_two_processes_writing_the_global_store_lose_no_record(tmp_path, embedder):
    go, count = tmp_path / "go", 20
    procs = {
        tag: _run(
            "write",
            str(tmp_path / f"run-{tag}"),
            str(tmp_path / "global"),
            tag,
            str(count),
            str(go),
            str(tmp_path / f"{tag}.json"),
            background=True,
        )
        for tag in ("a", "b")
    }
    # Both writers load the model first, then start together on the signal.
    deadline = time.monotonic() + 120
    while not all(Path(f"{go}.ready-{tag}").exists() for tag in procs) and time.monotonic() < deadline:
        time.sleep(0.05)
    go.touch()
    for tag, proc in procs.items():
        output, _ = proc.communicate(timeout=180)
        assert proc.returncode == 0, f"writer {tag}: {output}"
    ids = [i for tag in procs for i in json.loads((tmp_path / f"{tag}.json").read_text())["ids"]]
    assert len(set(ids)) == 2 * count

    with Memory(None, global_dir=tmp_path / "global", embedder=embedder) as mem:
        stored = {h.id: h for h in mem.hypotheses()}
        assert set(stored) == set(ids)
        assert all(h.outcome.status is OutcomeClass.IMPROVED for h in stored.values() if h.evaluations[0].score > 1)
        assert all(len(h.evaluations) == 1 for h in stored.values())
        # Every record is in the vector index too, not only in the database.
        found = {s.hypothesis.id for s in mem.recall("lower the validation loss", k=2 * count)}
        assert found == set(ids)
