"""The final pick: which evaluation a crew run submits.

Agents chose and tuned their experiments by dev scores, so the best dev score is the one most inflated by
that search. The run therefore submits, among the top dev records (and the supervisor's own choice), the one
with the best held-out score: a part of the scoring set no agent ever saw (challenges/framework/split.py). Without
held-out scores (a scorer that gives no per-item results) the pick is what it always was: the supervisor's
choice, else the best dev record.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from challenges.framework.harness import Evaluation
from challenges.framework.spec import Challenge

TOP_K = 3  # dev records the held-out score chooses among: few, so the held-out part is used for little


@dataclass
class Pick:
    submission: Evaluation | None
    by: str = "dev"  # "held-out" when the held-out scores chose it
    candidates: list[Evaluation] = field(default_factory=list)
    dev_best: str | None = None
    supervisor_choice: str | None = None
    note: str = ""

    def to_dict(self) -> dict[str, Any]:
        sub = self.submission.id if self.submission else None
        return {
            "by": self.by, "evaluation": sub, "dev_best": self.dev_best,
            "supervisor_choice": self.supervisor_choice,
            "differs_from_dev_best": sub is not None and sub != self.dev_best,
            "differs_from_supervisor": (sub != self.supervisor_choice) if self.supervisor_choice else None,
            "candidates": [{"evaluation": r.id, "dev": r.score, "heldout": r.heldout_score, "full": r.full}
                           for r in self.candidates],
            "note": self.note,
        }


def ranked_by_dev(records: list[Evaluation], challenge: Challenge) -> list[Evaluation]:
    """Scored records, best dev score first; among equal scores the earlier record first."""
    scored = [r for r in records if r.ok and r.score is not None]
    sign = -1.0 if challenge.metric.direction == "max" else 1.0
    return sorted(scored, key=lambda r: sign * r.score)


def final_pick(records: list[Evaluation], challenge: Challenge, supervisor_choice: Evaluation | None) -> Pick:
    """The record to submit: the best held-out score among the top TOP_K by dev and the supervisor's choice,
    when every one of them has a held-out score; else the supervisor's choice, else the best dev record."""
    ranked = ranked_by_dev(records, challenge)
    if not ranked:
        return Pick(supervisor_choice, note="no scored record")
    candidates = ranked[:TOP_K]
    choice = supervisor_choice if supervisor_choice is not None and supervisor_choice.ok else None
    if choice is not None and choice.id not in {r.id for r in candidates}:
        candidates.append(choice)
    pick = Pick(choice or ranked[0], candidates=candidates, dev_best=ranked[0].id,
                supervisor_choice=choice.id if choice else None)
    missing = [r.id for r in candidates if r.heldout_score is None]
    if missing:
        reasons = sorted({r.split.get("note") or "scored before held-out splits" for r in candidates
                          if r.heldout_score is None})
        pick.note = f"no held-out score for {', '.join(missing)} ({'; '.join(reasons)}): picked by dev"
        return pick
    sign = 1.0 if challenge.metric.direction == "max" else -1.0
    # Best held-out first; a tie goes to the better dev score, then to the dev ranking's order.
    pick.submission = max(candidates, key=lambda r: (sign * r.heldout_score, sign * r.score,
                                                     -candidates.index(r)))
    pick.by = "held-out"
    if pick.submission.id != pick.dev_best:
        pick.note = (f"the held-out part ranks {pick.submission.id} above the dev-best {pick.dev_best}: "
                     "the dev lead did not hold on unseen items")
    return pick
