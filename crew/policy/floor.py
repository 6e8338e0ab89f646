"""The floor: experiment 0 of every crew run, the challenge's baseline recipe at the "short" size.

A crew whose model never gets a tool call through would otherwise end with nothing, below the baseline
policy that needs no model at all. So a crew run starts the recipe as a background job of its own (on the
host, in the challenge folder, like the baseline policy: crew/policy/baseline.py) with a short share of the budget
(crew/loop/sizing.py), and the harness scores what it writes as `eval-0000`, a record in the ledger like any
other. The final pick and every fallback (outage, error, final phase, cost cap) then have at least that
record, and the supervisor reads it as the reference its own work must beat.

The job's output goes to `floor/` in the run directory, outside the workspace the agents can touch; its
job folder is `jobs/000-baseline`, so the agents' own jobs keep their numbers (001-...). On a GPU run it holds
one of the run's GPUs like any job (the engineer's jobs see it busy until the recipe ends).
"""

from __future__ import annotations

import logging
import threading
import time
from pathlib import Path

from challenges.framework.harness import Evaluation
from challenges.framework.spec import Challenge, Preset
from crew.loop.sizing import SIZES
from crew.policy.baseline import STOP_GRACE_S, BaselinePolicy, recipe_jobs
from crew.run.clock import Clock
from crew.run.devices import visible_devices
from crew.run.durations import format_duration
from crew.run.ledger import Ledger
from crew.run.rundir import RunDir
from crew.run.trace import Trace
from toolkit.errors import ToolkitError
from toolkit.jobs import JobManager

log = logging.getLogger(__name__)
FLOOR_ID = "eval-0000"
FLOOR_JOB = "000-baseline"
MIN_FLOOR_S = 30.0  # a recipe has fixed costs (imports, data loading, writing the model) whatever its budget
POLL_S = 0.5


def floor_budget_s(budget_s: float) -> float:
    """The recipe's budget: the "short" experiment size's share of the run's budget, at least MIN_FLOOR_S."""
    return max(MIN_FLOOR_S, dict(SIZES)["short"] * budget_s)


class _FloorJobs(JobManager):
    """The recipe's job manager: its one job always has the id 000-baseline."""

    def _new_dir(self, name: str) -> Path:
        job_dir = self.jobs_dir / FLOOR_JOB
        job_dir.mkdir(parents=True)
        return job_dir


class Floor:
    """Runs and scores experiment 0 in a thread of its own while the crew works; `settle` waits for it."""

    def __init__(self, run: RunDir, challenge: Challenge, preset: Preset, clock: Clock, trace: Trace,
                 score_context) -> None:
        self.recipe = BaselinePolicy(run, challenge, preset, clock, trace, score_context)  # its job and scoring
        self.recipe.jobs = recipe_jobs(run, challenge, manager=_FloorJobs)
        self.recipe.agent = "floor"
        self.recipe.jobs.devices = visible_devices() if score_context.device == "cuda" else []
        self.run, self.challenge, self.clock, self.trace = run, challenge, clock, trace
        self.submission = run.root / "floor" / "submission"
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @staticmethod
    def applies(challenge: Challenge) -> bool:
        return bool(challenge.baseline_command)

    def record(self) -> Evaluation | None:
        return Ledger(self.run.evaluations, self.challenge).get(FLOOR_ID)

    def start(self) -> str:
        """Start (or, after a resume, re-attach to or score) experiment 0; return the line that tells the
        supervisor about it."""
        if (record := self.record()) is not None:
            return describe(record, self.challenge)
        try:
            self._start_job()  # before the first model call, so that the supervisor sees it in the jobs table
        except ToolkitError as err:  # e.g. a resumed run whose GPUs the agents' jobs hold
            self.recipe.note(f"experiment 0 did not start: {err}")
            return f"Experiment 0 (the baseline recipe) did not start: {err}."
        self._thread = threading.Thread(target=self._work, name="floor", daemon=True)
        self._thread.start()
        return (f"Experiment 0 ({FLOOR_ID}) is the challenge's baseline recipe, running now as job {FLOOR_JOB} "
                f"({format_duration(self.budget_s())}, a short experiment) and then scored by the harness: the "
                "floor of this run, submitted if nothing beats it. Your work must beat it.")

    def budget_s(self) -> float:
        return floor_budget_s(self.clock.budget_s)

    def settle(self, wait: bool = True) -> Evaluation | None:
        """The run ends: wait for the recipe (bounded by its job's own deadline) and its scoring; without
        `wait` (an interruption), stop the job instead: a resumed run scores it."""
        if self._thread is not None:
            if not wait:
                self._stop.set()
            self._thread.join(None if wait else STOP_GRACE_S)  # a scoring under way is made again on resume
        return self.record()

    def _work(self) -> None:
        try:
            if self._train():
                record = self.recipe.score(self.submission, FLOOR_ID)
                Ledger(self.run.evaluations, self.challenge).annotate(record, {
                    "hypothesis": "the challenge's baseline recipe at the short size (the floor)", "parent": None,
                    "kind": "draft", "commit": None, "job": FLOOR_JOB})
        except Exception as err:  # noqa: BLE001 - the floor is a safety net, never a reason to stop the crew
            log.exception("experiment 0 (the baseline recipe) failed")
            self.recipe.note(f"experiment 0 failed: {type(err).__name__}: {err}")

    def _start_job(self) -> None:
        """Start the recipe unless a run before a resume did."""
        jobs = self.recipe.jobs
        if FLOOR_JOB in jobs.ids():
            return
        budget_s = min(self.budget_s(), max(1.0, self.clock.to_deadline_s() - self.clock.scoring_reserve_s()))
        command = self.challenge.baseline_command_line(self.recipe.score_context.data_dir, self.submission,
                                                       budget_s=budget_s)
        self.submission.parent.mkdir(parents=True, exist_ok=True)
        status = jobs.start(command, "baseline", time.time() + budget_s + STOP_GRACE_S)
        self.recipe.job_started(FLOOR_JOB, command, status.record.pid, budget_s, seed=None)

    def _train(self) -> bool:
        """Wait for the recipe to end; whether it wrote a submission to score."""
        jobs = self.recipe.jobs
        while (status := jobs.status(FLOOR_JOB)).running:
            if self._stop.is_set():
                jobs.stop(FLOOR_JOB)  # SIGTERM first: the recipe saves its checkpoint
                return False
            time.sleep(POLL_S)
        self.recipe.job_finished(FLOOR_JOB, status.record.exit_code)
        if not self.submission.exists():
            self.recipe.note("experiment 0: the recipe wrote no submission")
            return False
        return True


def describe(record: Evaluation, challenge: Challenge) -> str:
    """Experiment 0's outcome, for the supervisor."""
    if not record.ok:
        return f"Experiment 0 ({FLOOR_ID}, the baseline recipe at the short size) failed: {record.error}."
    if challenge.blind:  # [feedback] agents = "none": no figure reaches any agent, the floor's included
        return (f"Experiment 0 ({FLOOR_ID}, the baseline recipe at the short size) was scored by the harness (blind: "
                "no figure is shown): the floor of this run, submitted if nothing beats it. Your work must beat it.")
    return (f"Experiment 0 ({FLOOR_ID}, the baseline recipe at the short size) scored "
            f"{challenge.metric.name} = {record.score:.4f}: the floor of this run, submitted if nothing beats it. "
            "Your work must beat it.")
