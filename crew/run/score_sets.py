"""Which set a score is on, said the same way wherever a person reads one: "0.4351 (dev set)".

A harness record's `score` is its dev score (what agents see and rank by) where the scorer gave per-item
results and the harness held some out; without them it is the score on every item, the full set. A run's
headline `score` is always the submission's full-set score (result.json's `score_set`).
"""

from __future__ import annotations

from typing import Any

DEV, HELDOUT, FULL = "dev", "held-out", "full"


def record_set(record: dict[str, Any]) -> str:
    """The set an evaluation record's (a saved record's or an Evaluation's fields') `score` is on."""
    return DEV if record.get("heldout_score") is not None else FULL


def on_set(value: float | None, score_set: str) -> str:
    return "n/a" if value is None else f"{value:.4f} ({score_set} set)"
