"""The baseline policy: no LLM. Run the challenge's reference recipe inside the budget, then score it.

It is the offline default and the reference every crew is compared with. The recipe runs as a toolkit
background job, so it outlives a killed run; a resumed run re-attaches to it, or starts it again (the
recipe resumes from its own checkpoint), and never has two running.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path

from challenges.harness import Evaluation, evaluate, load_evaluations, release_unfinished
from challenges.spec import Challenge, Preset
from crew.clock import Deadline
from crew.errors import EXIT_INTERRUPTED, CrewError
from crew.results import Outcome
from crew.rundir import RunDir
from crew.trace import Trace
from toolkit.env import scrubbed_env
from toolkit.jobs import JobManager

log = logging.getLogger(__name__)
STOP_GRACE_S = 30.0  # time the recipe gets after SIGTERM to checkpoint and write its model
JOB_NAME = "baseline"
POLL_S = 0.5


class BaselinePolicy:
    def __init__(self, run: RunDir, challenge: Challenge, preset: Preset, deadline: Deadline, trace: Trace,
                 score_context) -> None:
        self.run, self.challenge, self.preset = run, challenge, preset
        self.deadline, self.trace, self.score_context = deadline, trace, score_context
        env = scrubbed_env(extra={"PYTHONUNBUFFERED": "1", "OMP_WAIT_POLICY": "PASSIVE"})  # no spinning threads
        self.jobs = JobManager(run.jobs, cwd=challenge.directory, env=env, grace_s=STOP_GRACE_S)

    @property
    def scoring_reserve_s(self) -> float:
        return self.preset.score_minutes * 60.0

    @property
    def submission(self) -> Path:
        return self.run.workspace / "submission"

    def execute(self) -> Outcome:
        """Train with the recipe, then score what it wrote (the Policy protocol, crew/results.py)."""
        record = self._train_and_score()
        if record is not None and record.ok:
            return Outcome("submitted", submission=record)
        return Outcome("no_submission", note=record.error if record is not None else "no artifact to score")

    def _train_and_score(self) -> Evaluation | None:
        """The scored submission; None when there was nothing to score."""
        release_unfinished(self.run.evaluations)  # a scoring cut short by a crash is made again
        done = [r for r in load_evaluations(self.run.evaluations) if r.artifact == str(self.submission)]
        if done:
            return done[-1]
        if not self.challenge.baseline_command:
            self.trace.emit("note", agent="baseline", text="the challenge has no baseline recipe")
            return None
        if not self._recipe_finished():
            self.run_recipe()
        if not self.submission.exists():
            self.trace.emit("note", agent="baseline", text="the recipe wrote no submission")
            return None
        return self.score(self.submission)

    def _recipe_finished(self) -> bool:
        ids = [i for i in self.jobs.ids() if i.endswith(f"-{JOB_NAME}")]
        return bool(ids) and self.jobs.status(ids[-1]).record.exit_code == 0 and self.submission.exists()

    def run_recipe(self) -> int | None:
        """Run (or re-attach to) the recipe's job, bounded by the budget; return its exit code."""
        running = [s for s in map(self.jobs.status, self.jobs.ids()) if s.running and s.record.name == JOB_NAME]
        if running:
            job_id = running[0].record.id
            self.trace.emit("job_reattached", agent="baseline", job=job_id)
        else:
            recipe_budget_s = self.deadline.time_left_s() - self.scoring_reserve_s - STOP_GRACE_S / 3
            command = self.challenge.baseline_command_line(
                self.score_context.data_dir, self.submission, budget_s=max(1.0, recipe_budget_s))
            deadline = time.time() + max(1.0, recipe_budget_s) + STOP_GRACE_S
            status = self.jobs.start(command, JOB_NAME, deadline)
            job_id = status.record.id
            self.trace.emit("job_started", agent="baseline", job=job_id, command=command, pid=status.record.pid,
                            budget_s=round(recipe_budget_s, 1))
        exit_code = self._wait(job_id)
        self.trace.emit("job_finished", agent="baseline", job=job_id, exit_code=exit_code)
        return exit_code

    def _wait(self, job_id: str) -> int | None:
        try:
            while (status := self.jobs.status(job_id)).running:
                if self.deadline.time_left_s() < self.scoring_reserve_s - STOP_GRACE_S:
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

    def score(self, submission: Path) -> Evaluation:
        timeout_s = max(self.deadline.time_left_s(), 1.0)  # the reserve kept for scoring; never past the deadline
        record = evaluate(self.challenge, submission, self.score_context, self.run.evaluations, timeout_s)
        self.trace.emit("evaluation", agent="harness", evaluation=record.id, ok=record.ok, score=record.score,
                        error=record.error, artifact=record.artifact, duration_s=record.duration_s)
        return record
