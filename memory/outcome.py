"""Classifying a hypothesis's evaluations into an outcome measured against the best score at the time."""

from memory.records import Evaluation, Outcome, OutcomeClass


def classify(evaluation: Evaluation, reference: float | None, tolerance: float) -> Outcome:
    """The outcome of one evaluation against `reference` (the best score at the time).

    A relative change within `tolerance` (a fraction, e.g. 0.005 = 0.5%) is inconclusive: scores
    that close are within run-to-run noise for most metrics.
    """
    if evaluation.crashed:
        note = evaluation.error or "no score"
        return Outcome(OutcomeClass.CRASHED, evaluation_id=evaluation.evaluation_id, note=note)
    score = float(evaluation.score)  # type: ignore[arg-type]  # crashed covers None
    if reference is None:
        return Outcome(
            OutcomeClass.INCONCLUSIVE,
            score=score,
            evaluation_id=evaluation.evaluation_id,
            note="no earlier score to compare with",
        )
    sign = 1.0 if evaluation.direction == "max" else -1.0
    difference = sign * (score - reference)
    # A zero reference has no meaningful relative change; the absolute difference stands alone.
    relative = difference / abs(reference) if reference != 0 else None
    size = abs(relative) if relative is not None else abs(difference)
    if size <= tolerance:
        status = OutcomeClass.INCONCLUSIVE
    else:
        status = OutcomeClass.IMPROVED if difference > 0 else OutcomeClass.WORSE
    return Outcome(status, score, reference, difference, relative, evaluation.evaluation_id)


def best_outcome(outcomes: list[Outcome]) -> Outcome:
    """The outcome of a hypothesis tested several times: its best non-crashed evaluation wins."""
    scored = [o for o in outcomes if o.status is not OutcomeClass.CRASHED]
    if not scored:
        return outcomes[-1] if outcomes else Outcome()
    with_diff = [o for o in scored if o.difference is not None]
    if not with_diff:
        return scored[-1]
    return max(with_diff, key=lambda o: o.difference)  # type: ignore[arg-type, return-value]


def best_score(evaluations: list[Evaluation]) -> float | None:
    """The best score among evaluations (by their direction), or None when none scored."""
    scored = [e for e in evaluations if not e.crashed]
    if not scored:
        return None
    pick = max if scored[-1].direction == "max" else min
    return pick(float(e.score) for e in scored)  # type: ignore[arg-type]
