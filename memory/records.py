"""The records the memory keeps: hypotheses, evaluations, outcomes and research-log entries."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any

from memory.errors import MemoryStoreError


def utc_now() -> str:
    """The current time as an ISO 8601 UTC string."""
    return datetime.now(UTC).isoformat(timespec="seconds")


def new_id(prefix: str) -> str:
    """A short random id such as `h-3f9c0a1b2d4e`."""
    return f"{prefix}-{uuid.uuid4().hex[:12]}"


class OutcomeClass(StrEnum):
    """What testing a hypothesis showed."""

    IMPROVED = "improved"
    WORSE = "worse"
    INCONCLUSIVE = "inconclusive"
    CRASHED = "crashed"
    UNTESTED = "untested"


@dataclass
class Evaluation:
    """One harness scoring of an artifact that tested a hypothesis.

    `score` is None when the evaluation crashed (then `error` says why). `best_before` is the best
    verified score at the time of the evaluation (the reference the outcome is measured against);
    `direction` is "max" when higher scores are better, "min" when lower are.
    """

    evaluation_id: str
    score: float | None
    path: str = ""
    direction: str = "max"
    best_before: float | None = None
    metric: str = ""
    error: str = ""
    at: str = field(default_factory=utc_now)

    def __post_init__(self) -> None:
        if self.direction not in ("max", "min"):
            raise MemoryStoreError(
                f"evaluation {self.evaluation_id!r} has direction {self.direction!r}",
                hint='use "max" (higher is better) or "min" (lower is better)',
            )

    @property
    def crashed(self) -> bool:
        return self.score is None or bool(self.error)

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any]) -> Evaluation:
        """Build from a plain dict, e.g. an evaluations/*.json record of the harness."""
        ev_id = data.get("evaluation_id") or data.get("id") or data.get("path") or ""
        if not ev_id:
            raise MemoryStoreError(
                "an evaluation needs an id or a path",
                hint="pass 'evaluation_id' (or 'id', or 'path' of the evaluations/ record) in the dict",
            )
        if "score" not in data and not data.get("error"):
            raise MemoryStoreError(
                f"evaluation {ev_id!r} has no 'score'",
                hint="give the measured score, or score None with an 'error' when the evaluation crashed",
            )
        score = data.get("score")
        best = data.get("best_before", data.get("best_score"))
        return cls(
            evaluation_id=str(ev_id),
            score=None if score is None else float(score),
            path=str(data.get("path") or data.get("evaluation_path") or ""),
            direction=str(data.get("direction") or "max"),
            best_before=None if best is None else float(best),
            metric=str(data.get("metric") or ""),
            error=str(data.get("error") or ""),
            at=str(data.get("at") or utc_now()),
        )


@dataclass
class Outcome:
    """The outcome class and the measured difference from the best score at the time.

    `difference` is in metric units and `relative` a fraction of the reference; both are signed so
    that positive means better, whatever the metric's direction.
    """

    status: OutcomeClass = OutcomeClass.UNTESTED
    score: float | None = None
    reference: float | None = None
    difference: float | None = None
    relative: float | None = None
    evaluation_id: str = ""
    note: str = ""

    def describe(self) -> str:
        """A short phrase such as 'worse by 3.1%' or 'crashed: CUDA out of memory'."""
        if self.status is OutcomeClass.UNTESTED:
            return "not yet tested"
        if self.status is OutcomeClass.CRASHED:
            return f"crashed: {self.note}" if self.note else "crashed"
        if self.relative is not None:
            size = f"{abs(self.relative) * 100:.1f}%"
        elif self.difference is not None:
            size = f"{abs(self.difference):.4g}"
        else:
            return f"{self.status.value} ({self.note})" if self.note else self.status.value
        if self.status is OutcomeClass.IMPROVED:
            return f"improved by {size}"
        if self.status is OutcomeClass.WORSE:
            return f"worse by {size}"
        sign = "+" if (self.relative or self.difference or 0) >= 0 else "-"
        return f"inconclusive ({sign}{size})"


@dataclass
class Hypothesis:
    """A hypothesis the crew proposed, what it implies to change, and what testing it showed."""

    statement: str
    rationale: str = ""
    change: str = ""
    challenge: str = ""
    preset: str = ""
    run_id: str = ""
    id: str = field(default_factory=lambda: new_id("h"))
    evaluations: list[Evaluation] = field(default_factory=list)
    outcome: Outcome = field(default_factory=Outcome)
    created_at: str = field(default_factory=utc_now)
    updated_at: str = field(default_factory=utc_now)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def __str__(self) -> str:
        # What a tool hands back to the model: short and readable, unlike the dataclass repr.
        where = f" (run {self.run_id})" if self.run_id else ""
        return f'Hypothesis {self.id}{where}: "{self.statement}" - {self.outcome.describe()}'

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Hypothesis:
        fields = dict(data)
        fields["evaluations"] = [Evaluation(**e) for e in fields.get("evaluations", [])]
        outcome = dict(fields.get("outcome") or {})
        outcome["status"] = OutcomeClass(outcome.get("status", OutcomeClass.UNTESTED))
        fields["outcome"] = Outcome(**outcome)
        return cls(**fields)


@dataclass
class LogEntry:
    """One step of the research log: what was done, seen and decided."""

    summary: str
    step: int = 0
    agent: str = ""
    challenge: str = ""
    run_id: str = ""
    id: str = field(default_factory=lambda: new_id("log"))
    at: str = field(default_factory=utc_now)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def __str__(self) -> str:
        who = f" {self.agent}" if self.agent else ""
        return f"[run {self.run_id} step {self.step}{who}] {self.summary}"


@dataclass
class SimilarHypothesis:
    """An earlier hypothesis found by meaning, with how close it is (cosine similarity, 1 = same)."""

    hypothesis: Hypothesis
    similarity: float

    def __str__(self) -> str:
        return self.describe()

    def describe(self) -> str:
        """One line such as 'tried in run X: worse by 3.1% - "statement"'."""
        h = self.hypothesis
        where = f"run {h.run_id}" if h.run_id else "an earlier run"
        verb = "proposed" if h.outcome.status is OutcomeClass.UNTESTED else "tried"
        closeness = f"{h.id}, similarity {self.similarity:.2f}"
        return f'{verb} in {where}: {h.outcome.describe()} - "{h.statement}" ({closeness})'


@dataclass
class Proposal:
    """What `propose` returns: the recorded hypothesis and the similar earlier ones."""

    hypothesis: Hypothesis
    similar: list[SimilarHypothesis]

    def __str__(self) -> str:
        lines = [f"Recorded hypothesis {self.hypothesis.id} (untested)."]
        if not self.similar:
            lines.append("No similar earlier hypothesis in memory.")
        else:
            lines.append("Similar earlier hypotheses:")
            lines.extend(f"- {s.describe()}" for s in self.similar)
        return "\n".join(lines)


@dataclass
class LogHit:
    """A research-log entry found by meaning."""

    entry: LogEntry
    similarity: float

    def __str__(self) -> str:
        return f"{self.entry} (similarity {self.similarity:.2f})"
