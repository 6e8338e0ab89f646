"""The baseline policy: no LLM. Run the challenge's reference recipe inside the budget, then score it.

It is the offline default and the reference every crew is compared with. The recipe runs as a toolkit
background job, so it outlives a killed run; a resumed run re-attaches to it, or starts it again (the
recipe resumes from its own checkpoint), and never has two running. A preset with `baseline_seeds = N`
trains and scores it N times, seeds 0..N-1 one after another in equal shares of the budget: their scores'
spread is the noise band results are judged against (crew/run/reference.py); seed 0's model is the submission.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path

from challenges.framework.harness import Evaluation, evaluate, load_evaluations, release_unfinished
from challenges.framework.spec import Challenge, Preset
from crew.errors import EXIT_INTERRUPTED, CrewError
from crew.run import events
from crew.run.clock import Clock
from crew.run.results import Outcome
from crew.run.rundir import RunDir
from crew.run.trace import Trace
from toolkit.env import scrubbed_env
from toolkit.jobs import JobManager

log = logging.getLogger(__name__)
STOP_GRACE_S = 30.0  # time the recipe gets after SIGTERM to checkpoint and write its model
JOB_NAME = "baseline"
POLL_S = 0.5
USED_SAVE_EVERY_S = 2.0


def recipe_jobs(run: RunDir, challenge: Challenge, manager: type[JobManager] = JobManager) -> JobManager:
    """Jobs that run the challenge's recipe on the host, in the challenge folder (its own trusted code)."""
    env = scrubbed_env(extra={"PYTHONUNBUFFERED": "1", "OMP_WAIT_POLICY": "PASSIVE"})  # no spinning threads
    return manager(run.jobs, cwd=challenge.directory, env=env, grace_s=STOP_GRACE_S)


class BaselinePolicy:
    picks_final = False  # what it submits is seed 0's model, as the recipe made it
    agent = "baseline"  # who the trace says ran the recipe (the floor's recipe says "floor")

    def __init__(self, run: RunDir, challenge: Challenge, preset: Preset, clock: Clock, trace: Trace,
                 score_context) -> None:
        self.run, self.challenge, self.preset = run, challenge, preset
        self.clock, self.trace, self.score_context = clock, trace, score_context
        self.jobs = recipe_jobs(run, challenge)
        self.seed_records: list[Evaluation] = []  # every seed's scored record, for the reference
        self._used_saved_at = -USED_SAVE_EVERY_S

    @property
    def submission(self) -> Path:
        return self.submission_for(0)

    def submission_for(self, seed: int) -> Path:
        return self.run.workspace / ("submission" if seed == 0 else f"submission-seed{seed}")

    def execute(self) -> Outcome:
        """Train with the recipe, then score what it wrote, once per seed (the Policy protocol,
        crew/policy/protocol.py). Seed 0's record is the submission; a later seed that fails only leaves the noise
        unmeasured."""
        seeds = max(1, self.preset.baseline_seeds)
        for seed in range(seeds):
            record = self._train_and_score(seed, seeds - seed)
            if record is None or not record.ok:
                break
            self.seed_records.append(record)
        if self.seed_records:
            note = "" if len(self.seed_records) == seeds else (
                f"only {len(self.seed_records)} of {seeds} seeds scored: the baseline's noise is not measured")
            return Outcome("submitted", submission=self.seed_records[0], note=note)
        return Outcome("no_submission", note=record.error if record is not None else "no artifact to score")

    def reference_records(self, outcome: Outcome) -> list[Evaluation]:
        """Its scored seeds are the challenge's baseline reference (crew/run/reference.py)."""
        return (self.seed_records or [outcome.submission]) if outcome.submission else []

    def _train_and_score(self, seed: int = 0, seeds_left: int = 1) -> Evaluation | None:
        """The scored submission of one seed; None when there was nothing to score."""
        release_unfinished(self.run.evaluations)  # a scoring cut short by a crash is made again
        submission = self.submission_for(seed)
        done = [r for r in load_evaluations(self.run.evaluations) if r.artifact == str(submission)]
        if done:
            return done[-1]
        if not self.challenge.baseline_command:
            self.note("the challenge has no baseline recipe")
            return None
        if not self._recipe_finished(seed):
            self.run_recipe(seed, seeds_left)
        if not submission.exists():
            self.note(f"the recipe (seed {seed}) wrote no submission")
            return None
        return self.score(submission)

    @staticmethod
    def job_name(seed: int) -> str:
        return JOB_NAME if seed == 0 else f"{JOB_NAME}-seed{seed}"

    def _recipe_finished(self, seed: int = 0) -> bool:
        ids = [i for i in self.jobs.ids() if i.endswith(f"-{self.job_name(seed)}")]
        return (bool(ids) and self.jobs.status(ids[-1]).record.exit_code == 0
                and self.submission_for(seed).exists())

    def run_recipe(self, seed: int = 0, seeds_left: int = 1) -> int | None:
        """Run (or re-attach to) one seed's job, bounded by its share of the budget (each seed left keeps a
        scoring reserve); return its exit code."""
        name = self.job_name(seed)
        reserve_s = self.clock.scoring_reserve_s(seeds_left)
        running = [s for s in map(self.jobs.status, self.jobs.ids()) if s.running and s.record.name == name]
        if running:
            job_id = running[0].record.id
            self.trace.emit(events.JobReattached(agent=self.agent, job=job_id))
        else:
            recipe_budget_s = self.clock.share_before_scoring_s(seeds_left, grace_s=STOP_GRACE_S / 3)
            command = self.challenge.baseline_command_line(
                self.score_context.data_dir, self.submission_for(seed), budget_s=max(1.0, recipe_budget_s), seed=seed)
            deadline = time.time() + max(1.0, recipe_budget_s) + STOP_GRACE_S
            status = self.jobs.start(command, name, deadline)
            job_id = status.record.id
            self.job_started(job_id, command, status.record.pid, recipe_budget_s, seed)
        exit_code = self._wait(job_id, reserve_s)  # the job's own deadline keeps it to its share
        self.job_finished(job_id, exit_code)
        return exit_code

    # The recipe's events, written here only (for the baseline and for the floor's recipe).
    def note(self, text: str) -> None:
        self.trace.emit(events.Note(agent=self.agent, text=text))

    def job_started(self, job_id: str, command: str, pid: int | None, budget_s: float, seed: int | None) -> None:
        self.trace.emit(events.JobStarted(agent=self.agent, job=job_id, command=command, pid=pid,
                                          budget_s=round(budget_s, 1), seed=seed))

    def job_finished(self, job_id: str, exit_code: int | None) -> None:
        self.trace.emit(events.JobFinished(agent=self.agent, job=job_id, exit_code=exit_code))

    def _wait(self, job_id: str, reserve_s: float | None = None) -> int | None:
        reserve_s = self.clock.scoring_reserve_s() if reserve_s is None else reserve_s
        try:
            while (status := self.jobs.status(job_id)).running:
                self._save_clock(reserve_s)
                if self.clock.to_deadline_s() < reserve_s - STOP_GRACE_S:
                    log.warning("baseline recipe passed its time; stopping it (SIGTERM, then SIGKILL)")
                    status = self.jobs.stop(job_id)
                    break
                time.sleep(POLL_S)
            return status.record.exit_code
        except KeyboardInterrupt:
            self.jobs.stop(job_id)
            raise CrewError("interrupted while the baseline recipe ran; it was stopped and saved a checkpoint",
                            f"continue with `research-crew resume {self.run.root}`",
                            exit_code=EXIT_INTERRUPTED) from None

    def _save_clock(self, reserve_s: float) -> None:
        """Save the clock (the budget used, for the active clock) every few seconds while the recipe runs."""
        if time.monotonic() - self._used_saved_at >= USED_SAVE_EVERY_S:
            self.clock.save(self.run.state, reserve_s)
            self._used_saved_at = time.monotonic()

    def score(self, submission: Path, eval_id: str | None = None) -> Evaluation:
        timeout_s = max(self.clock.to_deadline_s(), 1.0)  # the reserve kept for scoring; never past the deadline
        record = evaluate(self.challenge, submission, self.score_context, self.run.evaluations, timeout_s, eval_id)
        self.trace.emit(events.evaluation_event(record, self.challenge.blind))
        return record
