"""The tools each role gets: the Toolkit's methods, evaluate, memory, and the crew's own
(plan, delegate, submit, report). The crew's tools only record a decision; the loop acts on it."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from autogen_core.tools import FunctionTool

from challenges.api import ScoreContext
from challenges.harness import evaluate as harness_evaluate
from challenges.spec import Challenge
from crew.durations import format_duration
from crew.ledger import Ledger
from crew.plan import Plan
from crew.trace import Trace
from toolkit import Toolkit
from toolkit.paths import PathRefused

ENGINEER_TOOLKIT = ("run_bash", "run_python", "job_status", "tail_job", "stop_job", "list_jobs",
                    "list_files", "read_file", "write_file", "edit_file", "undo_edit", "gpu_status")
SCOUT_TOOLKIT = ("search_arxiv", "read_arxiv_paper", "search_github", "read_github_file", "list_files", "read_file")


@dataclass
class Decisions:
    """What the agents decided through their tools, for the loop to carry out. Plain data."""

    delegation: dict[str, Any] | None = None
    submission: dict[str, Any] | None = None
    report: dict[str, Any] | None = None
    evaluations: list[str] = field(default_factory=list)


class CrewTools:
    def __init__(self, *, challenge: Challenge, toolkit: Toolkit, ledger: Ledger, plan: Plan, trace: Trace,
                 score_context: ScoreContext, evaluations_dir: Path, memory: Any | None,
                 eval_timeout_s: Any) -> None:
        self.challenge, self.toolkit, self.ledger, self.plan, self.trace = challenge, toolkit, ledger, plan, trace
        self.score_context, self.evaluations_dir, self.memory = score_context, evaluations_dir, memory
        self.eval_timeout_s = eval_timeout_s  # a callable: seconds the scorer may take now
        self.on_evaluation = None  # called with each new record (the budget learns scoring times)
        self.decisions = Decisions()
        self._lock = threading.Lock()
        # After a resume: what the step in flight at the crash had already done, so that doing the step
        # again re-attaches to its job and reuses its evaluation instead of doing them twice.
        self.inflight_jobs: dict[tuple[str, str], str] = {}
        self.inflight_evaluations: list[str] = []

    # -- the supervisor's tools -------------------------------------------------------------------

    def update_plan(self, phase: str, status: str, minutes: float | None = None) -> str:
        """Update one item of the research plan: its phase name (baseline, exploration, main training,
        final evaluation, reserve, or a new one), a short status line, and optionally its minutes."""
        return self.plan.update(phase, status, minutes)

    def delegate(self, role: Literal["engineer", "scout"], subtask: str, minutes: float) -> str:
        """Give one subtask to a worker: role "engineer" (code, commands, jobs, evaluate) or "scout" (papers,
        code search, memory). Say exactly what to do and what to report; minutes is its time allotment."""
        if role not in ("engineer", "scout"):
            return f"Unknown role '{role}': use 'engineer' or 'scout'."
        if not subtask.strip() or minutes <= 0:
            return "Give a subtask text and a positive number of minutes."
        self.decisions.delegation = {"role": role, "subtask": subtask.strip(), "minutes": float(minutes)}
        return f"Delegated to the {role} ({minutes:g} min). Its report comes in your next turn."

    def submit(self, evaluation_id: str, rationale: str) -> str:
        """Choose the final submission by naming an evaluation record from the ledger. This ends the run."""
        record = self.ledger.get(evaluation_id)
        if record is None:
            return f"No evaluation '{evaluation_id}' in the ledger. Known: {[r.id for r in self.ledger.records()]}"
        if not record.ok:
            return f"Evaluation {record.id} failed ({record.error}); submit a successful one."
        self.decisions.submission = {"evaluation": record.id, "rationale": rationale}
        return f"Submitted {record.id} (score {record.score:.4f}). The run will end."

    # -- the workers' tools -----------------------------------------------------------------------

    def start_job(self, command: str, name: str, timeout_s: float | None = None) -> str:
        """Start a long-running bash command (e.g. training) in the background and return at once.
        name is a short label. Check it with job_status / tail_job, stop it with stop_job. It is stopped
        at timeout_s or at the end of the current budget phase, whichever comes first: it gets SIGTERM a
        grace period before, so save checkpoints regularly and on SIGTERM. Print `progress: <done>/<total>`
        lines to get progress and an ETA."""
        existing = self.inflight_jobs.pop((command, name), None)
        if existing is not None:
            return f"(re-attached after a restart; not started twice)\n{self.toolkit.job_status(existing)}"
        return str(self.toolkit.start_job(command, name, timeout_s))

    def evaluate(self, artifact_path: str) -> str:
        """Score an artifact (a file or folder in the workspace, e.g. a saved model folder) with the
        challenge's scoring harness. The result is an evaluation record; only such records count as scores.
        Takes as long as the scorer needs (minutes for language-model benchmarks)."""
        try:
            artifact = self.toolkit.files.confine.resolve(artifact_path)
        except PathRefused as err:
            return f"Refused: {err}"
        if not artifact.exists():
            return f"'{artifact_path}' does not exist in the workspace."
        record = self._inflight_record(artifact)
        if record is None:
            record = harness_evaluate(self.challenge, artifact, self.score_context, self.evaluations_dir,
                                      timeout_s=self.eval_timeout_s())
            self.trace.emit("evaluation", agent="harness", evaluation=record.id, ok=record.ok, score=record.score,
                            error=record.error, artifact=record.artifact, duration_s=record.duration_s)
            if self.on_evaluation is not None:
                self.on_evaluation(record)
        with self._lock:
            self.decisions.evaluations.append(record.id)
        if not record.ok:
            reasons = "; ".join(record.violations) or record.error
            return f"Evaluation {record.id} failed: {reasons}. Log: {record.log}"
        return (f"Evaluation {record.id}: {self.challenge.metric.name} = {record.score:.4f} "
                f"({self.challenge.metric.direction} is better). Details: {record.details}")

    def _inflight_record(self, artifact: Path):
        from challenges.harness import artifact_sha256

        for record_id in list(self.inflight_evaluations):
            record = self.ledger.get(record_id)
            if record and record.artifact == str(artifact) and record.sha256 == artifact_sha256(artifact):
                self.inflight_evaluations.remove(record_id)
                return record
        return None

    def propose_hypothesis(self, statement: str, rationale: str = "", change: str = "") -> str:
        """Record a hypothesis before testing it; returns similar earlier hypotheses and how they turned out,
        and the id to use with record_outcome."""
        if self.memory is None:
            return "Memory is off for this run."
        return str(self.memory.propose(statement, rationale=rationale, change=change))

    def record_outcome(self, hypothesis_id: str, evaluation_id: str) -> str:
        """Attach an evaluation record's measured result to a hypothesis (from propose_hypothesis)."""
        if self.memory is None:
            return "Memory is off for this run."
        record = self.ledger.get(evaluation_id)
        if record is None:
            return f"No evaluation '{evaluation_id}' in the ledger."
        best = self.ledger.best()
        result = self.memory.record_outcome(hypothesis_id, {
            "id": record.id, "score": record.score, "error": record.error,
            "best_before": best.score if best and best.id != record.id else None,
            "direction": self.challenge.metric.direction})
        return str(result)

    def recall(self, query: str, k: int = 5) -> str:
        """Search what this and earlier runs tried (hypotheses and their measured outcomes) by meaning."""
        if self.memory is None:
            return "Memory is off for this run."
        hits = self.memory.recall(query, k=k)
        return "\n".join(str(h) for h in hits) or "Nothing similar in memory."

    def report(self, changed: str, commands: str, evaluations: list[str], learned: str, proposes: str) -> str:
        """End your subtask with a structured report for the supervisor: what you changed (files), which
        commands and jobs ran, which evaluation ids you asked for, what you learned, what you propose next."""
        self.decisions.report = {"changed": changed, "commands": commands, "evaluations": list(evaluations),
                                 "learned": learned, "proposes": proposes}
        return "Report received; your subtask is over."

    # -- jobs, for the loop ------------------------------------------------------------------------

    def job_ids(self) -> list[str]:
        return self.toolkit.jobs.ids()

    def running_jobs(self) -> list:
        return [status for status in map(self.toolkit.jobs.status, self.job_ids()) if status.running]

    def stop_running_jobs(self) -> list[str]:
        """SIGTERM (then SIGKILL after the grace period) every running job; return their ids."""
        stopped = []
        for status in self.running_jobs():
            self.toolkit.jobs.stop(status.record.id)
            stopped.append(status.record.id)
        return stopped

    def job_warnings(self, budget) -> str:
        """Running jobs whose ETA passes the start of wrap-up, with the numbers."""
        lines = []
        for status in self.running_jobs():
            progress, elapsed = status.progress, status.runtime_s() or 0.0
            if progress is None or progress.eta_s is None or progress.eta_s <= budget.work_left_s():
                continue
            rate = progress.done / elapsed if elapsed else 0.0
            lines.append(f"- {status.record.id}: elapsed {format_duration(elapsed)}, {progress.done:g}/"
                         f"{progress.total:g} at {rate:.3g}/s, ETA {format_duration(progress.eta_s)}, but only "
                         f"{format_duration(budget.work_left_s())} left before wrap-up")
        return "\n".join(lines)

    # -- sets of tools per role -------------------------------------------------------------------

    def for_role(self, role: str) -> list[FunctionTool]:
        if role == "supervisor":
            own = [self.update_plan, self.delegate, self.submit]
            return [_tool(f) for f in own]
        names = ENGINEER_TOOLKIT if role == "engineer" else SCOUT_TOOLKIT
        toolkit = [getattr(self.toolkit, name) for name in names]
        own = ([self.start_job, self.evaluate, self.propose_hypothesis, self.record_outcome] if role == "engineer"
               else [self.recall])
        return [_tool(f) for f in [*toolkit, *own, self.report]]


class _Tool(FunctionTool):
    """A FunctionTool whose JSON schema is built once: autogen rebuilds it with pydantic on every model
    call otherwise, which was most of a step's own cost."""

    @property
    def schema(self):
        if not hasattr(self, "_schema_cache"):
            self._schema_cache = super().schema
        return self._schema_cache


def _tool(method) -> FunctionTool:
    description = " ".join((method.__doc__ or method.__name__).split())
    return _Tool(method, description=description, name=method.__name__)
