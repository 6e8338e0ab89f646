"""result.json and report.md: written at the end of every run, however it ends."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from challenges.harness import Evaluation, best_evaluation, load_evaluations
from challenges.spec import Challenge
from checkpoints import atomic_write_json, atomic_write_text
from crew.config import RunConfig
from crew.durations import format_duration
from crew.rundir import RunDir
from crew.trace import read_events

STATUSES = ("submitted", "no_submission", "failed")


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


def build_result(config: RunConfig, challenge: Challenge, outcome: Outcome, elapsed_s: float,
                 baseline_score: float | None) -> dict[str, Any]:
    sub = outcome.submission
    score = sub.score if sub else None
    improvement = (challenge.metric.improvement(score, baseline_score)
                   if score is not None and baseline_score is not None else None)
    return {
        "run_id": config.run_id, "challenge": config.challenge, "preset": config.preset,
        "models": {"model": config.model, "supervisor": config.supervisor_model, "worker": config.worker_model},
        "status": outcome.status, "note": outcome.note,
        "metric": {"name": challenge.metric.name, "direction": challenge.metric.direction},
        "score": score, "baseline_score": baseline_score, "improvement": improvement,
        "success": improvement is not None and improvement >= challenge.metric.success_threshold,
        "submission": ({"path": sub.artifact, "sha256": sub.sha256, "evaluation": sub.id} if sub else None),
        "budget_s": config.budget_s, "elapsed_s": round(elapsed_s, 1), "steps": outcome.steps,
        "resumes": outcome.resumes,
        "tokens": {"input": outcome.usage.input, "output": outcome.usage.output,
                   "cache_read": outcome.usage.cache_read, "cache_write": outcome.usage.cache_write},
        "cost_usd": outcome.usage.cost_usd,
        "unverified_claims": outcome.unverified,
    }


def write_result(run: RunDir, result: dict[str, Any]) -> None:
    atomic_write_json(run.result, result)


def write_report(run: RunDir, challenge: Challenge) -> Path:
    """report.md from what the run directory holds: result, evaluations, trace, the job's last lines."""
    result = json.loads(run.result.read_text()) if run.result.is_file() else {}
    evaluations = load_evaluations(run.evaluations)
    best = best_evaluation(evaluations, challenge)
    note = f" ({result['note']})" if result.get("note") else ""
    lines = [f"# {challenge.title}: run {run.run_id}", "",
             f"- status: **{result.get('status', 'unknown')}**{note}",
             f"- preset: {result.get('preset')}, model: {result.get('models', {}).get('model')}",
             f"- metric: {challenge.metric.name} ({challenge.metric.direction})",
             f"- score: {_num(result.get('score'))}, baseline: {_num(result.get('baseline_score'))}, "
             f"improvement: {_pct(result.get('improvement'))}",
             f"- time: {format_duration(result.get('elapsed_s', 0))} of {format_duration(result.get('budget_s', 0))}",
             "", "## Evaluations (harness records)", ""]
    if evaluations:
        lines += ["| id | score | ok | duration | artifact | note |", "|---|---|---|---|---|---|"]
        for record in evaluations:
            mark = " (submitted)" if best and record.id == best.id and result.get("submission") else ""
            note = record.error or ", ".join(f"{k} {v:.3f}" for k, v in record.details.get("per_task", {}).items())
            lines.append(f"| {record.id}{mark} | {_num(record.score)} | {record.ok} | {record.duration_s:.0f}s "
                         f"| `{record.artifact}` | {note} |")
    else:
        lines.append("No artifact was scored.")
    claims = result.get("unverified_claims") or []
    if claims:
        lines += ["", "## Unverified claims (numbers cited with no evaluation record behind them)", ""]
        lines += [f"- {c['agent']}: {c['value']} in \"{c['context'].strip()}\"" for c in claims]
    lines += ["", "## Timeline", ""]
    for event in read_events(run.trace):
        details = {k: v for k, v in event.items() if k not in ("seq", "t", "kind", "agent")}
        lines.append(f"- {event['t']} `{event['kind']}` ({event['agent']}) {_brief(details)}")
    job_log = run.jobs / "baseline" / "log"
    if job_log.is_file():
        tail = job_log.read_text(encoding="utf-8", errors="replace").splitlines()[-15:]
        lines += ["", "## Baseline recipe, last lines of its log", "", "```", *tail, "```"]
    atomic_write_text(run.report_md, "\n".join(lines) + "\n")
    return run.report_md


def _num(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.4f}"


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{value:+.1%}"


def _brief(details: dict[str, Any]) -> str:
    text = ", ".join(f"{k}={v}" for k, v in details.items())
    return text if len(text) <= 200 else text[:200] + "…"
