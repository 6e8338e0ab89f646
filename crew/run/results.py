"""result.json and report.md: written at the end of every run, however it ends."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from challenges.framework.harness import Evaluation
from challenges.framework.spec import Challenge
from checkpoints import atomic_write_json
from crew.run.config import RunConfig
from crew.run.reference import Baseline
from crew.run.rundir import RunDir
from crew.run.sandboxing import sandbox_record
from crew.run.score_sets import FULL


@dataclass
class Usage:
    input: int = 0
    output: int = 0
    cache_read: int = 0
    cache_write: int = 0
    cost_usd: float = 0.0


@dataclass
class Outcome:
    """How the run ended, as the policy that ran it tells it."""

    status: str
    submission: Evaluation | None = None
    note: str = ""
    steps: int = 0
    resumes: int = 0
    usage: Usage = field(default_factory=Usage)
    unverified: list[dict[str, str]] = field(default_factory=list)  # numbers agents cited with no record
    interrupted: bool = False  # stopped by an outage, a signal or an error: `resume` continues it (exit 3)
    supervisor_choice: Evaluation | None = None  # the record the supervisor submitted, if it did
    pick: dict[str, Any] = field(default_factory=dict)  # how the submission was chosen (crew/run/final_pick.py)


def build_result(config: RunConfig, challenge: Challenge, outcome: Outcome, elapsed_s: float,
                 baseline: Baseline | None) -> dict[str, Any]:
    """The run's result. `score` is the submission's full score (the scorer's value on the whole set, the same
    kind of score as the baseline's and as published numbers); its dev and held-out parts are beside it."""
    sub = outcome.submission
    score = sub.full if sub else None
    baseline_score = baseline.score if baseline else None
    # Success is judged as the challenge states it: against its fixed reference_score when it gives one (a peer
    # suite's published baseline), else against the baseline policy's measured score.
    reference = challenge.reference_score if challenge.reference_score is not None else baseline_score
    improvement = (challenge.metric.improvement(score, reference)
                   if score is not None and reference is not None else None)
    within_noise = (baseline.within_noise(score) if baseline and score is not None
                    and challenge.reference_score is None else None)
    return {
        "run_id": config.run_id, "challenge": config.challenge, "preset": config.preset,
        "models": {"model": config.model, "supervisor": config.supervisor_model, "worker": config.worker_model},
        "status": outcome.status, "note": outcome.note,
        "resumable": outcome.interrupted,  # stopped early (exit 3): `research-crew resume` goes on
        "metric": {"name": challenge.metric.name, "direction": challenge.metric.direction},
        "score": score, "score_set": FULL,  # the submission's and the baseline's scores on the full set
        "baseline_score": baseline_score, "reference_score": challenge.reference_score,
        "success_against": "reference_score" if challenge.reference_score is not None else "baseline_score",
        "improvement": improvement,
        # The baseline policy's dev score: what a run's evaluations (dev scores) are compared with in plots.
        "baseline_dev_score": (sum(baseline.dev_scores) / len(baseline.dev_scores)
                               if baseline and baseline.dev_scores else None),
        "success": (improvement is not None and improvement >= challenge.metric.success_threshold
                    and not within_noise),
        # The baseline's seeds' scores and their spread; a score closer to the baseline than that spread is
        # "within baseline noise": no evidence of an improvement, and never a success.
        "baseline_noise": baseline.noise_record() if baseline else None,
        "within_baseline_noise": within_noise,
        "scores": ({"dev": sub.score, "heldout": sub.heldout_score, "full": sub.full,
                    "split": {k: sub.split.get(k) for k in ("dev_items", "heldout_items", "note")}}
                   if sub else None),
        "pick": outcome.pick or None,
        "submission": ({"path": str(sub.submission_path), "sha256": sub.sha256, "evaluation": sub.id,
                        "artifact": sub.artifact} if sub else None),
        "budget_s": config.budget_s, "elapsed_s": round(elapsed_s, 1), "steps": outcome.steps,
        "resumes": outcome.resumes,
        "tokens": {"input": outcome.usage.input, "output": outcome.usage.output,
                   "cache_read": outcome.usage.cache_read, "cache_write": outcome.usage.cache_write},
        "cost_usd": outcome.usage.cost_usd,
        "unverified_claims": outcome.unverified,
        "sandbox": sandbox_record(asdict(config)),
    }


def write_result(run: RunDir, result: dict[str, Any]) -> None:
    atomic_write_json(run.result, result)


def write_report(run: RunDir, challenge: Challenge) -> Path:
    """report.md and report.html from what the run directory holds (crew/reporting)."""
    from crew.reporting.report import write_reports  # matplotlib loads only when a report is written

    return write_reports(run.root, f"{challenge.title}: run {run.run_id}")[0]
