"""The baseline policy: no LLM. Run the challenge's reference recipe inside the budget, then score it.

It is the offline default and the reference every crew is compared with.
"""

from __future__ import annotations

import logging
import shlex
import subprocess
import time
from pathlib import Path

from challenges.harness import Evaluation, evaluate
from challenges.spec import Challenge, Preset
from checkpoints import atomic_write_json
from crew.clock import Deadline
from crew.errors import EXIT_INTERRUPTED, CrewError
from crew.rundir import RunDir
from crew.trace import Trace
from toolkit.env import scrubbed_env
from toolkit.procs import kill_process_group

log = logging.getLogger(__name__)
STOP_GRACE_S = 30.0  # time the recipe gets after SIGTERM to checkpoint and write its model


class BaselinePolicy:
    def __init__(self, run: RunDir, challenge: Challenge, preset: Preset, deadline: Deadline, trace: Trace,
                 score_context) -> None:
        self.run, self.challenge, self.preset = run, challenge, preset
        self.deadline, self.trace, self.score_context = deadline, trace, score_context

    @property
    def scoring_reserve_s(self) -> float:
        return self.preset.score_minutes * 60.0

    def execute(self) -> Evaluation | None:
        """Train with the recipe, then score what it wrote; None when there was nothing to score."""
        if not self.challenge.baseline_command:
            self.trace.emit("note", agent="baseline", text="the challenge has no baseline recipe")
            return None
        submission = self.run.workspace / "submission"
        self.run_recipe(submission)
        if not submission.exists():
            self.trace.emit("note", agent="baseline", text="the recipe wrote no submission")
            return None
        return self.score(submission)

    def run_recipe(self, submission: Path) -> int | None:
        """Run the recipe as a subprocess bounded by the budget; return its exit code (None if killed)."""
        recipe_budget_s = self.deadline.time_left_s() - self.scoring_reserve_s - STOP_GRACE_S / 3
        command = self.challenge.baseline_command_line(
            self.score_context.data_dir, submission, budget_s=max(1.0, recipe_budget_s)
        )
        job_dir = self.run.jobs / "baseline"
        job_dir.mkdir(parents=True, exist_ok=True)
        log_path = job_dir / "log"
        env = scrubbed_env(extra={"PYTHONUNBUFFERED": "1"})
        with open(log_path, "wb") as log_file:
            proc = subprocess.Popen(shlex.split(command), cwd=self.challenge.directory, stdout=log_file,
                                    stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env,
                                    start_new_session=True)
        meta = {"id": "baseline", "command": command, "pid": proc.pid, "cwd": str(self.challenge.directory),
                "started_at": time.time(), "budget_s": recipe_budget_s, "log": str(log_path)}
        atomic_write_json(job_dir / "job.json", meta)
        self.trace.emit("job_started", agent="baseline", job="baseline", command=command, pid=proc.pid,
                        budget_s=round(recipe_budget_s, 1))
        returncode = None
        try:
            returncode = self._wait(proc, timeout_s=recipe_budget_s + STOP_GRACE_S / 3)
        finally:  # also when interrupted: the job's end is on record either way
            ended = {"ended_at": time.time(), "exit_code": returncode if returncode is not None else proc.poll()}
            atomic_write_json(job_dir / "job.json", {**meta, **ended})
            self.trace.emit("job_finished", agent="baseline", job="baseline", exit_code=ended["exit_code"])
        return returncode

    def _wait(self, proc: subprocess.Popen, timeout_s: float) -> int | None:
        try:
            return proc.wait(timeout=max(1.0, timeout_s))
        except subprocess.TimeoutExpired:
            log.warning("baseline recipe passed its time; stopping it (SIGTERM, then SIGKILL)")
            kill_process_group(proc.pid, grace_s=STOP_GRACE_S)
            return proc.wait()
        except KeyboardInterrupt:
            kill_process_group(proc.pid, grace_s=STOP_GRACE_S)
            proc.wait()
            raise CrewError("interrupted while the baseline recipe ran; it was stopped and saved a checkpoint",
                            "start the run again; the recipe resumes from its checkpoint",
                            exit_code=EXIT_INTERRUPTED) from None

    def score(self, submission: Path) -> Evaluation:
        timeout_s = max(self.deadline.time_left_s(), 1.0)  # the reserve kept for scoring; never past the deadline
        record = evaluate(self.challenge, submission, self.score_context, self.run.evaluations, timeout_s)
        self.trace.emit("evaluation", agent="harness", evaluation=record.id, ok=record.ok, score=record.score,
                        error=record.error, artifact=record.artifact)
        return record
