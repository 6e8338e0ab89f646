"""The tools each role gets: the Toolkit's methods, evaluate, waiting, memory, and the crew's own decisions
(delegate, submit, report, wait), which raise typed signals (crew/agent/signals.py) for the loop to act on."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any, Literal

from challenges.framework.api import ScoreContext
from challenges.framework.harness import artifact_sha256
from challenges.framework.harness import evaluate as harness_evaluate
from challenges.framework.spec import Challenge
from crew.agent.signals import Delegated, Reported, Submitted, Waiting
from crew.loop.plan import Plan
from crew.loop.state import WorkerSlots
from crew.run import events
from crew.run.clock import Clock
from crew.run.durations import format_duration
from crew.run.ledger import Ledger, agent_reason
from crew.run.trace import Trace
from crew.run.workspace_git import commit_all
from toolkit import Toolkit
from toolkit.paths import PathRefused

ENGINEER_TOOLKIT = ("run_bash", "run_python", "job_status", "tail_job", "stop_job", "list_jobs",
                    "list_files", "read_file", "write_file", "edit_file", "undo_edit", "gpu_status")
SCOUT_TOOLKIT = ("search_arxiv", "read_arxiv_paper", "search_github", "read_github_file", "list_files", "read_file")
POLL_S = 2.0  # how often a wait looks at the jobs
MILESTONE = 0.1  # a wait for progress returns at each further tenth of a job


class CrewTools:
    def __init__(self, *, challenge: Challenge, toolkit: Toolkit, ledger: Ledger, plan: Plan, trace: Trace,
                 score_context: ScoreContext, evaluations_dir: Path, memory: Any | None,
                 clock: Clock) -> None:
        self.challenge, self.toolkit, self.ledger, self.plan, self.trace = challenge, toolkit, ledger, plan, trace
        self.score_context, self.evaluations_dir, self.memory = score_context, evaluations_dir, memory
        self.clock = clock
        self.poll_s = POLL_S
        # After a resume: what the step in flight at the crash had already done, so that doing the step
        # again re-attaches to its job and reuses its evaluation instead of doing them twice.
        self.inflight_jobs: dict[tuple[str, str], str] = {}
        self.inflight_evaluations: list[str] = []
        # The loop keeps it up to date. On SLURM the engineers' slots are the run's jobs on the cluster.
        self.workers = WorkerSlots(gpus=len(toolkit.jobs.devices), cluster_jobs=toolkit.jobs.max_jobs)
        self.disk_watch: Any | None = None  # crew/run/disk_watch.py, while the loop runs

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
        if refusal := self.workers.refusal(role):
            return f"Not delegated: {refusal}"
        self.workers.reserve(role)
        raise Delegated(role, subtask.strip(), float(minutes))

    def submit(self, evaluation_id: str, rationale: str) -> str:
        """Choose the final submission by naming an evaluation record from the ledger. This ends the run."""
        record = self.ledger.get(evaluation_id)
        if record is None:
            return f"No evaluation '{evaluation_id}' in the ledger. Known: {[r.id for r in self.ledger.records()]}"
        if not record.ok:
            return f"Evaluation {record.id} failed ({record.error}); submit a successful one."
        raise Submitted(record.id, rationale, record.score)

    def wait(self, minutes: float) -> str:
        """Wait without model calls while jobs run: your next turn comes when a job ends or passes a tenth of
        its progress, when the budget phase changes, or after `minutes`, whichever is first."""
        if minutes <= 0:
            return "Give a positive number of minutes."
        raise Waiting(float(minutes))

    def adopt_unfinished(self, known_jobs: set[str], known_evaluations: set[str]) -> None:
        """After a resume: the jobs and records that the step cut short had begun, for its redo to re-attach to
        instead of starting them again."""
        for job_id in self.job_ids():
            if job_id not in known_jobs:
                record = self.toolkit.jobs.status(job_id).record
                self.inflight_jobs[(record.command, record.name)] = job_id
        self.inflight_evaluations = [r.id for r in self.ledger.records() if r.id not in known_evaluations]

    # -- the workers' tools -----------------------------------------------------------------------

    def start_job(self, command: str, name: str, timeout_s: float | None = None, gpus: int | None = None) -> str:
        """Start a long-running bash command (e.g. training) in the background and return at once.
        name is a short label. Check it with job_status / tail_job, stop it with stop_job. It is stopped
        at timeout_s or at the end of the current budget phase, whichever comes first: it gets SIGTERM a
        grace period before, so save checkpoints regularly and on SIGTERM. Print `progress: <done>/<total>`
        lines to get progress and an ETA. gpus: how many free GPUs it gets (default one when the run has
        GPUs); gpu_status says which are free."""
        existing = self.inflight_jobs.pop((command, name), None)
        if existing is not None:
            return f"(re-attached after a restart; not started twice)\n{self.toolkit.job_status(existing)}"
        if self.disk_watch is not None and (refusal := self.disk_watch.refusal()):
            return f"Not started: {refusal}"
        return str(self.toolkit.start_job(command, name, timeout_s, gpus))

    def evaluate(self, artifact_path: str, hypothesis: str = "", parent: str = "",
                 kind: Literal["draft", "debug", "improve"] = "draft", job_id: str = "") -> str:
        """Score an artifact (a file or folder in the workspace, e.g. a saved model folder) with the
        challenge's scoring harness. Every evaluation is an experiment: say the hypothesis it tests, its
        parent (the evaluation id it changes from, if any), its kind (draft: a new solution; debug: a fix of a
        failed parent; improve: a change to a working parent) and the job that made it. The workspace's code
        is committed first, so the record points at the exact code. Only such records count as scores. Takes
        as long as the scorer needs (minutes for language-model benchmarks). Then add a lesson (note_lesson)."""
        try:  # resolved once, lexically; the harness opens it beneath the workspace without following links
            root, parts = self.toolkit.files.confine.locate(artifact_path)
        except PathRefused as err:
            return f"Refused: {err}"
        if root != self.toolkit.files.confine.real_root or not parts:
            return f"Refused: '{artifact_path}' is not a file or folder the agents made in the workspace."
        artifact = root.joinpath(*parts)
        if not os.path.lexists(artifact):
            return f"'{artifact_path}' does not exist in the workspace."
        if parent and self.ledger.get(parent) is None:
            return f"No evaluation '{parent}' to be the parent. Known: {[r.id for r in self.ledger.records()]}"
        record = self._inflight_record(artifact)
        if record is None:
            commit = commit_all(self.toolkit.workspace, f"before scoring {artifact_path}: {hypothesis or kind}")
            record = harness_evaluate(self.challenge, Path(*parts), self.score_context, self.evaluations_dir,
                                      timeout_s=max(30.0, self.clock.until_final_s()),
                                      root=root)
            self.ledger.annotate(record, {"hypothesis": hypothesis, "parent": parent or None, "kind": kind,
                                          "commit": commit, **self._job_facts(job_id)})
            # Blind: the trace, which a resumed crew's context may draw on, keeps no score either.
            self.trace.emit(events.evaluation_event(record, self.challenge.blind))
            self.clock.observe_scoring(record.duration_s)
        if not record.ok:
            return f"Evaluation {record.id} failed: {agent_reason(record)}"
        if self.challenge.blind:
            return (f"Evaluation {record.id} recorded: it scored without error. This challenge is blind: no score "
                    "is shown to agents (the harness keeps it for the final pick); judge your work on your own "
                    "validation split.")
        return (f"Evaluation {record.id}: {self.challenge.metric.name} = {record.score:.4f} "
                f"({self.challenge.metric.direction} is better). Details: {record.details}")

    def note_lesson(self, evaluation_id: str, lesson: str) -> str:
        """Write the one-line lesson of an evaluated experiment (what its score teaches), for the experiment
        table and for the memory later runs on this challenge start from."""
        record = self.ledger.get(evaluation_id)
        if record is None:
            return f"No evaluation '{evaluation_id}' in the ledger."
        self.ledger.annotate(record, {"lesson": lesson.strip()})
        if self.memory is not None:
            outcome = f"score {record.score:.4f}" if record.ok else f"failed ({agent_reason(record)[:80]})"
            hypothesis = record.experiment.get("hypothesis") or f"{record.experiment.get('kind', 'draft')} experiment"
            self.memory.log_step(f"{record.id} ({hypothesis}): {outcome}. Lesson: {lesson.strip()}", agent="engineer")
        return f"Lesson recorded for {record.id}."

    def _job_facts(self, job_id: str) -> dict[str, Any]:
        if not job_id or job_id not in self.job_ids():
            return {"job": None}
        status = self.toolkit.jobs.status(job_id)
        return {"job": job_id, "command": status.record.command, "job_wall_s": round(status.runtime_s() or 0.0, 1)}

    def _inflight_record(self, artifact: Path):
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
        raise Reported({"changed": changed, "commands": commands, "evaluations": list(evaluations),
                        "learned": learned, "proposes": proposes})

    def wait_for_job(self, job_id: str, until: Literal["exit", "progress"] = "exit", max_minutes: float = 30) -> str:
        """Wait for a background job without spending model calls: returns when it exits, or (until="progress")
        when it passes its next tenth of progress, or when the budget phase changes, or after max_minutes.
        Use this instead of polling job_status or sleeping."""
        if job_id not in self.job_ids():
            return f"No job '{job_id}'. Jobs: {', '.join(self.job_ids()) or 'none'}"
        event = self.wait_for_event([job_id], until, max_minutes * 60)
        return f"{event}\n{self.toolkit.job_status(job_id)}"

    # -- jobs, for the loop ------------------------------------------------------------------------

    def wait_for_event(self, job_ids: list[str], until: str, max_s: float) -> str:
        """Block until one of the jobs exits (or, until="progress", passes a tenth of its progress), the budget
        phase changes, or max_s pass; say which."""
        phase, started = self.clock.phase(), time.monotonic()
        marks = {j: _milestone(self.toolkit.jobs.status(j)) for j in job_ids}
        while True:
            for job_id in job_ids:
                status = self.toolkit.jobs.status(job_id)
                if not status.running:
                    return f"Job {job_id} ended ({status.state}) after {format_duration(status.runtime_s())}."
                if until == "progress" and _milestone(status) > marks[job_id]:
                    return f"Job {job_id} reached {status.progress}."
            if self.clock.phase() != phase:
                return f"The budget phase changed to {self.clock.phase()}."
            waited = time.monotonic() - started
            if waited >= max_s:
                return f"No job event in {format_duration(waited)}."
            time.sleep(min(self.poll_s, max_s - waited, max(0.05, self.clock.phase_left_s())))

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

    def jobs_table(self, ended_shown: int = 5) -> str:
        """The running jobs (state, progress, ETA, and whether each can finish before wrap-up) and the last few
        that ended; older ones as a count, so the table stays small however many jobs a run makes."""
        statuses = [self.toolkit.jobs.status(j) for j in self.job_ids()]
        ended = [s for s in statuses if not s.running]
        shown = [s for s in statuses if s.running or s in ended[-ended_shown:]]
        lines = [f"({len(ended) - ended_shown} earlier jobs ended; list_jobs shows them)"] if len(ended) > ended_shown \
            else []
        for status in shown:
            line = f"- {status.summary_line()}"
            progress, work_left = status.progress, self.clock.work_left_s()
            if status.running and progress and progress.eta_s is not None and progress.eta_s > work_left:
                elapsed = status.runtime_s() or 0.0
                rate = progress.done / elapsed if elapsed else 0.0
                line += (f" — WILL NOT FINISH: {progress.done:g}/{progress.total:g} at {rate:.3g}/s, ETA "
                         f"{format_duration(progress.eta_s)}, only {format_duration(work_left)} left before wrap-up")
            lines.append(line)
        return "\n".join(lines) or "No jobs."

    # -- sets of tools per role -------------------------------------------------------------------

    def for_role(self, role: str) -> list:
        """The methods each role may call (their docstrings are what the model reads)."""
        if role == "supervisor":
            return [self.update_plan, self.delegate, self.submit, self.wait, self.recall]
        names = ENGINEER_TOOLKIT if role == "engineer" else SCOUT_TOOLKIT
        toolkit = [getattr(self.toolkit, name) for name in names]
        own = ([self.start_job, self.wait_for_job, self.evaluate, self.note_lesson, self.propose_hypothesis,
                self.record_outcome]
               if role == "engineer" else [self.recall])
        return [*toolkit, *own, self.report]


def _milestone(status) -> int:
    """Which tenth of its progress a job has passed (-1 without progress lines)."""
    return int(status.progress.fraction / MILESTONE) if status.progress else -1
