"""Typed signals of the step loop: decisions the agents make through their tools, and limits.

A decision tool raises its signal; the agent adapter turns it into the tool's result for the model and
hands it to the loop with the turn. Limits are raised by the loop's one check and caught in one place.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal


class Decision(Exception):  # noqa: N818 - a signal, not an error
    """A tool call that ends the agent's say in this turn. `message` is the tool result the model sees."""

    message = ""
    combines = False  # whether more decisions of this kind may come in the same turn


@dataclass
class Delegated(Decision):
    role: str
    subtask: str
    minutes: float
    combines = True  # two delegations in one turn start two subtasks (when the slots allow)

    @property
    def message(self) -> str:
        return (f"Delegated to the {self.role} ({self.minutes:g} min). You get a turn when a subtask reports; "
                "meanwhile the workers act.")


@dataclass
class Submitted(Decision):
    evaluation_id: str
    rationale: str
    score: float | None = None

    @property
    def message(self) -> str:
        return f"Submitted {self.evaluation_id}. The run will end."


@dataclass
class Reported(Decision):
    report: dict[str, Any] = field(default_factory=dict)
    message = "Report received; your subtask is over."


@dataclass
class Waiting(Decision):
    """The supervisor waits without model calls until a job event, a phase change or `minutes`."""

    minutes: float

    @property
    def message(self) -> str:
        return f"Waiting up to {self.minutes:g} min for a job event; the next turn says what happened."


LimitKind = Literal["final_phase", "steps", "cost", "no_calls"]


@dataclass
class LimitExceeded(Exception):  # noqa: N818
    kind: LimitKind
    limit: float
    used: float

    def __str__(self) -> str:
        return {"final_phase": "the final phase began: the best evaluation record is submitted",
                "steps": f"the step limit ({self.limit:g}) was reached",
                "cost": f"the cost limit (${self.limit:g}) was reached (${self.used:.2f} spent)",
                "no_calls": f"the model made no valid tool call in {self.used:g} turns"}[self.kind]


@dataclass
class SubtaskOver(Exception):  # noqa: N818
    """A worker's subtask must end now (its steps, its time, a repeat, a phase change)."""

    reason: str

    def __str__(self) -> str:
        return self.reason
