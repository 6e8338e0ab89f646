"""The console's line for an evaluation: a blind challenge's record (no figure in the trace) is not a failure."""

from crew.reporting.live import event_line
from crew.run.events import parse_event


def test_a_blind_evaluation_is_scored_not_failed() -> None:
    line = event_line(parse_event({"kind": "evaluation", "agent": "harness", "evaluation": "eval-0001", "ok": True,
                       "score": None, "error": ""}))
    assert line is not None and "failed" not in line and "blind" in line


def test_a_failed_and_a_scored_evaluation_say_so() -> None:
    failed = event_line(parse_event({"kind": "evaluation", "evaluation": "eval-0002", "ok": False, "score": None,
                         "error": "scorer raised ValueError"}))
    scored = event_line(parse_event({"kind": "evaluation", "evaluation": "eval-0003", "ok": True, "score": 0.5,
                         "score_set": "dev"}))
    assert "failed: scorer raised ValueError" in failed and "0.5000 (dev set)" in scored
