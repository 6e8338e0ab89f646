"""A finished (or running) run's history, from its directory: phases, subtasks, jobs, evaluations over time,
hypotheses and their outcomes, usage by agent, unverified claims. Plain data for report.md, report.html, plots."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from crew.reporting.curves import parse_curve
from crew.reporting.jobs_view import JobView, read_jobs
from crew.reporting.snapshot import RunSnapshot, read_json, read_snapshot
from crew.run.events import (
    CrewUsage,
    Event,
    ModelResponse,
    PhaseEntered,
    SubtaskFinished,
    SubtaskStarted,
    ToolResults,
    UnverifiedClaim,
)
from crew.run.rundir import RunDir
from crew.run.score_sets import record_set
from crew.run.trace import read_events

HYPOTHESIS_ID = re.compile(r"\bh-[0-9a-f]{6,}\b")


@dataclass
class Span:
    label: str
    start: float  # epoch seconds
    end: float
    detail: str = ""


@dataclass
class ScorePoint:
    id: str
    t: float
    score: float | None
    ok: bool
    note: str = ""
    experiment: dict[str, Any] = field(default_factory=dict)  # hypothesis, parent, kind, commit, lesson
    score_set: str = "dev"  # the set `score` is on (crew/run/score_sets.py)
    full: float | None = None  # the score on the full set


@dataclass
class HypothesisRow:
    id: str
    statement: str
    outcome: str = "untested"


@dataclass
class RunHistory:
    snapshot: RunSnapshot
    result: dict[str, Any]
    events: list[Event]
    start: float
    end: float
    phases: list[Span] = field(default_factory=list)
    subtasks: list[Span] = field(default_factory=list)
    jobs: list[JobView] = field(default_factory=list)
    scores: list[ScorePoint] = field(default_factory=list)
    hypotheses: list[HypothesisRow] = field(default_factory=list)
    usage_by_agent: dict[str, dict[str, float]] = field(default_factory=dict)
    plan: list[dict[str, Any]] = field(default_factory=list)
    claims: list[dict[str, Any]] = field(default_factory=list)
    curves: dict[str, list[tuple[int, float]]] = field(default_factory=dict)  # job id -> (step, loss)


def read_history(root: Path) -> RunHistory:
    run = RunDir(Path(root))
    snap = read_snapshot(run.root)
    events = read_events(run.trace)
    times = [_epoch(e.t) for e in events if e.t]
    start = float(snap.config.get("started_at") or (times[0] if times else 0.0))
    end = max(times, default=start)
    result = read_json(run.result)
    history = RunHistory(snapshot=snap, result=result, events=events, start=start, end=end)
    history.phases = _phases(events, start, end)
    history.subtasks = _subtasks(events, end)
    history.jobs = read_jobs(run.jobs)
    history.curves = {job.id: curve for job in history.jobs if len(curve := parse_curve(run.job_log(job.id))) >= 2}
    history.scores = _scores(run.evaluations)
    history.hypotheses = _hypotheses(events)
    state = read_json(run.latest_state)
    history.usage_by_agent = _usage(events, state)
    history.plan = state.get("plan", {}).get("items", [])
    history.claims = result.get("unverified_claims") or [
        {"agent": e.agent, "value": e.value, "context": e.context or ""}
        for e in events if isinstance(e, UnverifiedClaim)]
    return history


def _phases(events: list[Event], start: float, end: float) -> list[Span]:
    """Phase spans from `phase` events; a run from before those events is one span, named by how it ended."""
    marks = [(_epoch(e.t), str(e.phase)) for e in events if isinstance(e, PhaseEntered)]
    if not marks:
        return [Span("work", start, end)]
    if marks[0][0] > start:
        marks.insert(0, (start, "work"))
    return [Span(label, t, marks[i + 1][0] if i + 1 < len(marks) else end) for i, (t, label) in enumerate(marks)]


def _subtasks(events: list[Event], end: float) -> list[Span]:
    """One span per subtask; several may be open at once (traces before parallel subtasks have no ids)."""
    spans, open_spans = [], {}
    for event in events:
        if isinstance(event, SubtaskStarted):
            key = event.subtask_id or event.role or event.agent
            open_spans[key] = Span(str(event.role), _epoch(event.t), end, str(event.subtask or ""))
            spans.append(open_spans[key])
        elif isinstance(event, SubtaskFinished) and (key := event.subtask_id or event.agent) in open_spans:
            open_spans.pop(key).end = _epoch(event.t)
    return spans


def _scores(folder: Path) -> list[ScorePoint]:
    points = []
    for path in sorted(folder.glob("eval-*.json")) if folder.is_dir() else []:
        record = read_json(path)
        if not record:
            continue
        t = _epoch(record["started_at"]) + float(record.get("duration_s", 0.0)) if record.get("started_at") else 0.0
        points.append(ScorePoint(record["id"], t, record.get("score"), bool(record.get("ok")),
                                 record.get("error") or "; ".join(record.get("violations", [])),
                                 record.get("experiment") or {}, record_set(record),
                                 record.get("full_score", record.get("score"))))
    return points


def _hypotheses(events: list[Event]) -> list[HypothesisRow]:
    """Proposed hypotheses (the engineer's propose_hypothesis calls) and the outcomes record_outcome returned."""
    statements: dict[str, str] = {}  # tool call id -> statement
    rows: dict[str, HypothesisRow] = {}
    for event in events:
        if isinstance(event, ModelResponse):
            for call in (event.response or {}).get("tool_calls", []):
                if call.get("name") == "propose_hypothesis":
                    statements[call.get("id", "")] = _arguments(call).get("statement", "")
        elif isinstance(event, ToolResults):
            for result in event.results or []:
                found = HYPOTHESIS_ID.search(result.get("content", ""))
                if result.get("is_error") or not found:
                    continue
                if result.get("name") == "propose_hypothesis":
                    rows.setdefault(found.group(), HypothesisRow(found.group(),
                                                                 statements.get(result.get("call_id", ""), "")))
                elif result.get("name") == "record_outcome" and found.group() in rows:
                    rows[found.group()].outcome = result["content"].rsplit(" - ", 1)[-1].strip()
    return list(rows.values())


def _usage(events: list[Event], state: dict[str, Any]) -> dict[str, dict[str, float]]:
    """Tokens and cost per agent: the meter's own totals when saved, else summed from the model calls."""
    usage = (next((e.usage for e in reversed(events) if isinstance(e, CrewUsage) and e.usage), None)
             or state.get("usage"))
    if usage and usage.get("by_agent"):
        costs = usage.get("cost_by_agent", {})
        return {agent: {**tokens, "cost_usd": float(costs.get(agent, 0.0))}
                for agent, tokens in usage["by_agent"].items() if any(tokens.values()) or costs.get(agent)}
    totals: dict[str, dict[str, float]] = {}
    for event in events:
        if isinstance(event, ModelResponse):
            agent = totals.setdefault(str(event.agent), {"cost_usd": 0.0})
            for key, value in (event.usage or {}).items():
                agent[key] = agent.get(key, 0) + value
    return totals


def _arguments(call: dict[str, Any]) -> dict[str, Any]:
    arguments = call.get("arguments")
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except json.JSONDecodeError:
            return {}
    return arguments if isinstance(arguments, dict) else {}


def _epoch(iso: str) -> float:
    return datetime.fromisoformat(iso).timestamp()

