"""The trace's events as typed records: one frozen dataclass per kind, the only way to write or read one.

A writer builds a record and hands it to `Trace.emit`, which stamps its `seq` and `t`; a reader gets the same
records back from `read_events` / `parse_event`, so a field that no writer sets cannot be read
(tests/crew/test_trace_events.py checks every reader's attribute accesses against these classes).

On disk each event stays one JSON object: seq, t, kind, agent, then the record's fields. An optional field
(default None) is left out while it is None (a missing field and a null one read back alike, as None). Lines
from older or newer versions still read: unknown fields are dropped, and an unknown kind becomes an
`UnknownEvent` that keeps its fields.
"""

from __future__ import annotations

from dataclasses import MISSING, dataclass, field, fields
from typing import TYPE_CHECKING, Any, ClassVar

if TYPE_CHECKING:
    from challenges.framework.harness import Evaluation

STAMP = ("seq", "t", "kind", "agent")  # what every line has, before the record's own fields


@dataclass(frozen=True, kw_only=True)
class Event:
    kind: ClassVar[str] = ""
    agent: str = "crew"
    seq: int = 0  # stamped by Trace.emit
    t: str = ""  # UTC ISO time, stamped by Trace.emit

    def details(self) -> dict[str, Any]:
        """The record's own fields (not seq, t, kind, agent), as the line on disk has them."""
        return {f.name: getattr(self, f.name) for f in fields(self) if f.name not in STAMP
                and not (getattr(self, f.name) is None and f.default is None)}

    def to_json(self) -> dict[str, Any]:
        return {"seq": self.seq, "t": self.t, "kind": self.kind, "agent": self.agent, **self.details()}


@dataclass(frozen=True, kw_only=True)
class UnknownEvent(Event):
    """A line of a kind this version does not write (an older or newer run's): kept, never interpreted."""

    name: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "kind", self.name)  # its own kind, where a known record's is its class's

    def details(self) -> dict[str, Any]:
        return dict(self.extra)

    def to_json(self) -> dict[str, Any]:
        return {"seq": self.seq, "t": self.t, "kind": self.name, "agent": self.agent, **self.extra}


# --- the run (crew/policy/runner.py) ---

@dataclass(frozen=True, kw_only=True)
class RunStarted(Event):
    kind: ClassVar[str] = "run_started"
    challenge: str
    preset: str
    model: str
    budget_s: float
    device: str
    data_cached: bool
    budget_clock: str
    sandbox: str
    agent_network: str


@dataclass(frozen=True, kw_only=True)
class Resumed(Event):
    kind: ClassVar[str] = "resumed"
    from_step: int
    inflight_jobs: list[str] | None = None  # the crew's: jobs started after its last saved step
    inflight_evaluations: list[str] | None = None
    freed_evaluation_ids: list[str] | None = None


@dataclass(frozen=True, kw_only=True)
class SubmissionChecked(Event):
    kind: ClassVar[str] = "submission_checked"
    note: str


@dataclass(frozen=True, kw_only=True)
class FinalPick(Event):
    kind: ClassVar[str] = "final_pick"
    by: str
    evaluation: str | None
    dev_best: str | None
    supervisor_choice: str | None
    candidates: list[str]


@dataclass(frozen=True, kw_only=True)
class RunFinished(Event):
    kind: ClassVar[str] = "run_finished"
    status: str
    exit_code: int
    note: str


# --- the baseline recipe and experiment 0 (crew/policy/baseline.py, floor.py) ---

@dataclass(frozen=True, kw_only=True)
class Note(Event):
    kind: ClassVar[str] = "note"
    text: str


@dataclass(frozen=True, kw_only=True)
class JobReattached(Event):
    kind: ClassVar[str] = "job_reattached"
    job: str


@dataclass(frozen=True, kw_only=True)
class JobStarted(Event):
    kind: ClassVar[str] = "job_started"
    job: str
    command: str
    pid: int | None
    budget_s: float
    seed: int | None = None  # the baseline policy's seeds; experiment 0 has one


@dataclass(frozen=True, kw_only=True)
class JobFinished(Event):
    kind: ClassVar[str] = "job_finished"
    job: str
    exit_code: int | None


@dataclass(frozen=True, kw_only=True)
class EvaluationScored(Event):
    kind: ClassVar[str] = "evaluation"
    evaluation: str
    ok: bool
    score: float | None  # None on a blind challenge: the trace keeps no figure (the record has it)
    score_set: str
    error: str
    artifact: str
    duration_s: float
    experiment: dict[str, Any] | None = None  # hypothesis, parent, kind, commit, job (when the crew annotated it)


def evaluation_event(record: Evaluation, blind: bool) -> EvaluationScored:
    """The one builder of the evaluation event, for the baseline policy and the crew's evaluate tool alike."""
    from crew.run.score_sets import record_set

    # Blind: the trace, which a resumed crew's context may draw on, keeps no score either.
    return EvaluationScored(agent="harness", evaluation=record.id, ok=record.ok,
                            score=None if blind else record.score, score_set=record_set(vars(record)),
                            error=record.error, artifact=record.artifact, duration_s=record.duration_s,
                            experiment=record.experiment or None)


# --- the crew (crew/policy/crew_policy.py, crew/loop/) ---

@dataclass(frozen=True, kw_only=True)
class ModelRetry(Event):
    kind: ClassVar[str] = "model_retry"
    attempt: int
    delay_s: float
    error: str


@dataclass(frozen=True, kw_only=True)
class DiskLow(Event):
    kind: ClassVar[str] = "disk_low"
    note: str


@dataclass(frozen=True, kw_only=True)
class CrewUsage(Event):
    kind: ClassVar[str] = "crew_usage"
    usage: dict[str, Any]  # UsageMeter.to_dict(): totals, by_agent, cost_by_agent
    cost_usd: float
    unverified_claims: int
    jobs_stopped: list[str]


@dataclass(frozen=True, kw_only=True)
class PhaseEntered(Event):
    kind: ClassVar[str] = "phase"
    phase: str
    time_left_s: float


@dataclass(frozen=True, kw_only=True)
class Waited(Event):
    kind: ClassVar[str] = "waited"
    event: str


@dataclass(frozen=True, kw_only=True)
class SubtaskStarted(Event):
    kind: ClassVar[str] = "subtask_started"
    subtask_id: str
    role: str
    subtask: str
    minutes: float


@dataclass(frozen=True, kw_only=True)
class WorkerStopped(Event):
    kind: ClassVar[str] = "worker_stopped"
    subtask_id: str
    reason: str


@dataclass(frozen=True, kw_only=True)
class SubtaskFinished(Event):
    kind: ClassVar[str] = "subtask_finished"
    subtask_id: str
    report: dict[str, Any] | None
    stopped: str | None


@dataclass(frozen=True, kw_only=True)
class TurnCut(Event):
    kind: ClassVar[str] = "turn_cut"
    step: int
    subtask_id: str | None = None  # a worker's turn; the supervisor's has none


@dataclass(frozen=True, kw_only=True)
class ModelResponse(Event):
    kind: ClassVar[str] = "model_response"
    step: int
    response: dict[str, Any]  # crew/agent/replay.py response_record: text and/or tool_calls
    usage: dict[str, int]  # this call's tokens: input, output, cache_read, cache_write
    subtask_id: str | None = None  # a worker's call; the supervisor's has none
    cost_usd: float  # the meter's running total
    truncated_retries: int | None = None
    text_calls: int | None = None
    cut: bool | None = None


@dataclass(frozen=True, kw_only=True)
class ToolResults(Event):
    kind: ClassVar[str] = "tool_results"
    step: int
    subtask_id: str | None = None
    results: list[dict[str, Any]]  # call_id, name, content, is_error


@dataclass(frozen=True, kw_only=True)
class UnverifiedClaim(Event):
    kind: ClassVar[str] = "unverified_claim"
    value: str
    context: str


EVENT_TYPES: dict[str, type[Event]] = {cls.kind: cls for cls in (
    RunStarted, Resumed, SubmissionChecked, FinalPick, RunFinished, Note, JobReattached, JobStarted, JobFinished,
    EvaluationScored, ModelRetry, DiskLow, CrewUsage, PhaseEntered, Waited, SubtaskStarted, WorkerStopped,
    SubtaskFinished, TurnCut, ModelResponse, ToolResults, UnverifiedClaim)}


def parse_event(line: dict[str, Any]) -> Event:
    """A JSON line as its typed record. Unknown fields are dropped; a missing one (an older writer's) reads as
    its default, or None."""
    seq = line.get("seq")
    stamp = {"agent": str(line.get("agent", "crew")), "seq": seq if isinstance(seq, int) else 0,
             "t": str(line.get("t", ""))}
    kind = str(line.get("kind", ""))
    cls = EVENT_TYPES.get(kind)
    if cls is None:
        return UnknownEvent(**stamp, name=kind, extra={k: v for k, v in line.items() if k not in STAMP})
    values = {}
    for f in fields(cls):
        if f.name in STAMP:
            continue
        if f.name in line:
            values[f.name] = line[f.name]
        elif f.default is MISSING and f.default_factory is MISSING:
            values[f.name] = None
    return cls(**stamp, **values)
