"""Cross-run recall, filters, the research log, the digest and store configuration."""

from pathlib import Path

import pytest

from memory import Memory, MemoryStoreError, OutcomeClass, global_memory_dir
from memory.digest import estimate_tokens
from memory.locking import FileLock


def test_cross_run_recall(open_memory):
    first = open_memory("run-1")
    h = first.propose("Rotary position embeddings will work better than learned absolute position embeddings.")
    first.record_outcome(h.hypothesis.id, {"id": "ev-1", "score": 3.30, "best_before": 3.20, "direction": "min"})
    first.close()

    second = open_memory("run-2")
    hits = second.recall("Should we swap positional embeddings for RoPE?", k=3)
    assert hits[0].hypothesis.id == h.hypothesis.id
    assert hits[0].hypothesis.run_id == "run-1"
    assert hits[0].describe().startswith("tried in run run-1: worse by 3.1%")
    # This run's own store holds only this run's records.
    assert second.hypotheses() == []


def test_recall_filters(open_memory):
    mem = open_memory("run-1", challenge="minipile")
    other = open_memory("run-2", challenge="tabular")
    a = mem.propose("Warming up the learning rate over 1000 steps will stabilise early training.").hypothesis
    mem.record_outcome(a.id, {"id": "ev", "score": 0.5, "best_before": 0.6})
    other.propose("Warming up the learning rate over 500 steps will stabilise early training.")

    only_minipile = mem.recall("learning rate warmup", k=5, filters={"challenge": "minipile"})
    assert [s.hypothesis.id for s in only_minipile] == [a.id]
    worse = mem.recall("learning rate warmup", k=5, filters={"outcome": ["worse", "crashed"]})
    assert [s.hypothesis.outcome.status for s in worse] == [OutcomeClass.WORSE]
    with pytest.raises(MemoryStoreError, match="unknown memory filter") as err:
        mem.recall("x", filters={"colour": "red"})
    assert "challenge" in err.value.hint


def test_research_log_append_read_search(open_memory):
    mem = open_memory("run-1")
    mem.log_step("Ran the baseline recipe: superglue_mean 0.512.", agent="worker-1")
    mem.log_step("Tried a cosine schedule; loss plateaued early.", agent="worker-2")
    mem.log_step("Doubling the width ran out of GPU memory.", agent="worker-1")

    entries = mem.read_log()
    assert [e.step for e in entries] == [1, 2, 3]
    assert entries[1].summary.startswith("Tried a cosine schedule")
    assert [e.step for e in mem.read_log(last=1)] == [3]

    later = open_memory("run-2")
    hits = later.search_log("out of memory error when making the model wider", k=1)
    assert hits[0].entry.summary.startswith("Doubling the width")
    assert hits[0].entry.run_id == "run-1"
    assert later.read_log(run_id="run-1")[0].agent == "worker-1"
    assert later.read_log() == []


def test_digest_stays_within_token_cap(open_memory):
    mem = open_memory()
    for i in range(12):
        h = mem.propose(f"Variant {i}: a learning rate of {i + 1}e-4 with cosine decay will lower the loss.")
        mem.record_outcome(h.hypothesis.id, {"id": f"ev-{i}", "score": 0.5 + i / 100, "best_before": 0.55})
    for cap in (30, 80, 200, 1000):
        text = mem.digest("learning rate schedule", max_tokens=cap)
        assert estimate_tokens(text) <= cap
    assert "improved by" in mem.digest("learning rate schedule", max_tokens=1000)
    assert mem.digest(max_tokens=5) == ""


def test_run_only_memory_and_model_mismatch(tmp_path, embedder):
    with Memory(tmp_path / "run", global_dir=False, embedder=embedder) as mem:
        mem.propose("Tying the input and output embeddings will reduce parameters.")
        assert mem.global_store is None
    with pytest.raises(MemoryStoreError, match="built with embedding model") as err:
        Memory(tmp_path / "run", global_dir=False, model="/some/other/model")
    assert "another folder" in err.value.hint


def test_global_dir_resolution(monkeypatch, tmp_path):
    monkeypatch.setenv("RESEARCH_CREW_MEMORY_DIR", str(tmp_path / "env"))
    assert global_memory_dir() == tmp_path / "env"
    assert global_memory_dir(tmp_path / "arg") == tmp_path / "arg"
    monkeypatch.delenv("RESEARCH_CREW_MEMORY_DIR")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    assert global_memory_dir() == tmp_path / "xdg" / "research-crew" / "memory"
    monkeypatch.delenv("XDG_DATA_HOME")
    assert global_memory_dir() == Path.home() / ".local" / "share" / "research-crew" / "memory"


def test_lock_times_out_with_a_clear_error(tmp_path):
    held, waiting = FileLock(tmp_path / "lock"), FileLock(tmp_path / "lock", timeout_s=0.2)
    with held.hold(), pytest.raises(MemoryStoreError, match="timed out") as err:
        with waiting.hold():
            pass
    assert "process" in err.value.hint


def test_global_store_defaults_to_the_configured_folder(monkeypatch, tmp_path, embedder):
    monkeypatch.setenv("RESEARCH_CREW_MEMORY_DIR", str(tmp_path / "shared-memory"))
    with Memory(tmp_path / "run", embedder=embedder) as mem:
        assert mem.global_store.root == (tmp_path / "shared-memory").resolve()
        assert mem.run_store.root == (tmp_path / "run" / "memory").resolve()
        assert mem.run_id == "run"


def test_records_read_well_as_tool_results(open_memory):
    mem = open_memory("run-1")
    h = mem.propose("Label smoothing of 0.1 will improve calibration.").hypothesis
    result = mem.record_outcome(h.id, {"id": "ev-1", "score": 0.5, "error": None, "best_before": 0.4})
    assert (
        str(result)
        == f'Hypothesis {h.id} (run run-1): "Label smoothing of 0.1 will improve calibration." - improved by 25.0%'
    )
    assert str(mem.recall("label smoothing")[0]).startswith("tried in run run-1: improved by 25.0%")
    mem.log_step("Label smoothing helped.", agent="worker-1")
    assert str(mem.read_log()[0]) == "[run run-1 step 1 worker-1] Label smoothing helped."
    assert str(mem.search_log("smoothing")[0]).startswith("[run run-1 step 1 worker-1] Label smoothing helped.")
