"""Outcomes: classes, the measured difference from the best score at the time, and bad input."""

import pytest

from memory import Evaluation, MemoryStoreError, OutcomeClass
from memory.outcome import classify


@pytest.mark.parametrize(
    ("score", "best", "direction", "status", "text"),
    [
        (0.62, 0.64, "max", OutcomeClass.WORSE, "worse by 3.1%"),
        (0.66, 0.64, "max", OutcomeClass.IMPROVED, "improved by 3.1%"),
        (3.10, 3.20, "min", OutcomeClass.IMPROVED, "improved by 3.1%"),
        (3.30, 3.20, "min", OutcomeClass.WORSE, "worse by 3.1%"),
        (0.6401, 0.64, "max", OutcomeClass.INCONCLUSIVE, "inconclusive (+0.0%)"),
        (0.5, 0.0, "max", OutcomeClass.IMPROVED, "improved by 0.5"),
    ],
)
def test_classify(score, best, direction, status, text):
    outcome = classify(Evaluation("ev", score, direction=direction, best_before=best), best, 0.005)
    assert outcome.status is status
    assert outcome.describe() == text


def test_crash_and_missing_reference():
    crashed = classify(Evaluation("ev", None, error="CUDA out of memory"), 0.5, 0.005)
    assert crashed.status is OutcomeClass.CRASHED
    assert crashed.describe() == "crashed: CUDA out of memory"
    first = classify(Evaluation("ev", 0.5), None, 0.005)
    assert first.status is OutcomeClass.INCONCLUSIVE


def test_record_outcome_keeps_evaluations_and_best_one_wins(open_memory):
    mem = open_memory()
    h = mem.propose("Gradient clipping at norm 1.0 will prevent the training divergence we saw.").hypothesis
    mem.record_outcome(h.id, {"id": "ev-1", "score": None, "error": "loss became NaN", "best_before": 0.6})
    assert mem.get(h.id).outcome.status is OutcomeClass.CRASHED
    updated = mem.record_outcome(
        h.id, {"id": "ev-2", "path": "evaluations/ev-2.json", "score": 0.63, "best_before": 0.6}
    )
    assert updated.outcome.status is OutcomeClass.IMPROVED
    assert updated.outcome.evaluation_id == "ev-2"
    assert [e.evaluation_id for e in mem.get(h.id).evaluations] == ["ev-1", "ev-2"]


def test_reference_defaults_to_best_recorded_score(open_memory):
    mem = open_memory()
    a = mem.propose("Replacing ReLU with GELU activations will improve the model's accuracy.").hypothesis
    mem.record_outcome(a.id, {"id": "ev-a", "score": 0.80})
    b = mem.propose("Label smoothing of 0.1 will improve calibration and test accuracy.").hypothesis
    outcome = mem.record_outcome(b.id, {"id": "ev-b", "score": 0.76}).outcome
    assert outcome.reference == 0.80
    assert outcome.describe() == "worse by 5.0%"


def test_bad_evaluations_and_ids(open_memory):
    mem = open_memory()
    with pytest.raises(MemoryStoreError, match="no hypothesis 'h-missing'") as err:
        mem.record_outcome("h-missing", {"id": "ev", "score": 1.0})
    assert "propose" in err.value.hint
    with pytest.raises(MemoryStoreError, match="needs an id or a path"):
        Evaluation.from_mapping({"score": 1.0})
    with pytest.raises(MemoryStoreError, match="no 'score'"):
        Evaluation.from_mapping({"id": "ev"})
    with pytest.raises(MemoryStoreError, match="direction"):
        Evaluation.from_mapping({"id": "ev", "score": 1.0, "direction": "up"})
