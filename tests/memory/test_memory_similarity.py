"""Paraphrases of earlier hypotheses are found as similar; unrelated hypotheses are not."""


def test_labelled_set_is_large_enough(paraphrases):
    assert len(paraphrases["similar"]) >= 30
    assert len(paraphrases["unrelated"]) >= 30


def test_paraphrase_found_and_unrelated_not(open_memory, paraphrases):
    mem = open_memory(global_dir=False)
    earlier = {}
    for first, _ in paraphrases["similar"] + paraphrases["unrelated"]:
        if first not in earlier:
            earlier[first] = mem.propose(first).hypothesis.id

    missed = []
    for first, paraphrase in paraphrases["similar"]:
        found = {s.hypothesis.id for s in mem.similar(paraphrase, k=5)}
        if earlier[first] not in found:
            missed.append(paraphrase)
    false_hits = []
    for first, other in paraphrases["unrelated"]:
        found = {s.hypothesis.id for s in mem.similar(other, k=5)}
        if earlier[first] in found:
            false_hits.append((first, other))

    assert not missed, f"paraphrases not found as similar: {missed}"
    assert not false_hits, f"unrelated hypotheses found as similar: {false_hits}"


def test_propose_returns_earlier_outcome_not_itself(open_memory):
    mem = open_memory()
    first = mem.propose("Adding dropout of 0.1 to the attention layers will reduce overfitting.")
    mem.record_outcome(first.hypothesis.id, {"id": "ev-1", "score": 0.70, "best_before": 0.68})

    second = mem.propose("Regularising the attention blocks with 10% dropout should shrink the train-validation gap.")

    assert [s.hypothesis.id for s in second.similar] == [first.hypothesis.id]
    assert "tried in run run-a: improved by 2.9%" in str(second)
    assert second.hypothesis.id != first.hypothesis.id


def test_an_empty_store_answers_without_loading_the_embedding_model(tmp_path, open_memory):
    from memory import Memory

    mem = Memory(tmp_path / "runs" / "fresh", run_id="fresh", challenge="minipile", preset="smoke",
                 global_dir=tmp_path / "global-fresh")
    assert mem.recall("anything") == [] and mem.search_log("anything") == []
    assert mem._embedder is None  # a first run starts seconds sooner: there was nothing to compare with
    mem.log_step("tried a longer warm-up: no change")
    assert [h.entry.summary for h in mem.search_log("warm-up")] == ["tried a longer warm-up: no change"]
    mem.close()
