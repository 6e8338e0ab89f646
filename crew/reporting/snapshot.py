"""A run as its directory shows it right now: phase, budget, subtask, jobs, best score, tokens and cost.

Read from files only (run.toml, trace.jsonl, evaluations/, jobs/, result.json, all named by RunDir), so it works
from another terminal, after the fact, and on a run written by an older or newer version. The watcher reads the trace
incrementally, so the live panel costs the same at hour 20 as at minute 1.
"""

from __future__ import annotations

import json
import time
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from challenges.framework.spec import default_score_minutes
from crew.errors import EXIT_INTERRUPTED
from crew.reporting.jobs_view import JobView, read_jobs
from crew.run.clock import observed_elapsed_s, read_saved
from crew.run.events import (
    Event,
    ModelResponse,
    PhaseEntered,
    Resumed,
    RunFinished,
    RunStarted,
    SubtaskFinished,
    SubtaskStarted,
)
from crew.run.rundir import RunDir
from crew.run.score_sets import record_set
from crew.run.trace import parse_lines


@dataclass
class Best:
    id: str
    score: float
    artifact: str
    t: str
    score_set: str = "dev"  # which set `score` is on (crew/run/score_sets.py)


@dataclass
class RunSnapshot:
    root: Path
    config: dict[str, Any]
    state: str = "starting"  # starting, running, finished, interrupted
    status: str | None = None  # result.json's status once the run ended
    note: str = ""
    phase: str = "starting"
    elapsed_s: float = 0.0
    budget_s: float = 0.0
    reserve_s: float = 0.0
    agent: str | None = None
    subtasks: list[dict[str, Any]] = field(default_factory=list)  # under way
    jobs: list[JobView] = field(default_factory=list)
    best: Best | None = None
    evaluations: int = 0
    failed_evaluations: int = 0
    metric: dict[str, str] = field(default_factory=dict)
    tokens: dict[str, int] = field(default_factory=lambda: dict.fromkeys(TOKEN_KEYS, 0))
    cost_usd: float = 0.0
    steps: int = 0
    resumes: int = 0
    last_event_t: str | None = None

    @property
    def run_id(self) -> str:
        return str(self.config.get("run_id", self.root.name))

    @property
    def remaining_s(self) -> float:
        return max(0.0, self.budget_s - self.elapsed_s)

    @property
    def finished(self) -> bool:
        return self.state in ("finished", "interrupted", "abandoned")


TOKEN_KEYS = ("input", "output", "cache_read", "cache_write")
# A run with no recorded end is abandoned (its process is gone: killed and never resumed, or stopped before it
# started) once its wall deadline is this far behind and nothing in it has been written for as long.
ABANDONED_AFTER_S = 600.0


class RunWatcher:
    """Follows one run directory; `snapshot()` reads only what changed since the last call."""

    def __init__(self, root: Path) -> None:
        self.run = RunDir(Path(root))
        self.root = self.run.root
        self._offset = 0
        self._events: _EventState = _EventState()
        self._evaluations: dict[str, dict[str, Any]] = {}
        self._config: dict[str, Any] | None = None
        self.new_events: list[Event] = []  # what the last snapshot() read, for log lines

    def snapshot(self) -> RunSnapshot:
        config = self._load_config()
        self.new_events = self._new_events()
        for event in self.new_events:
            self._events.apply(event)
        snap = RunSnapshot(root=self.root, config=config)
        snap.budget_s = float(config.get("budget_s", 0.0))
        # The reserve as the run's clock last saved it (it grows with slow scorings), else the preset's.
        snap.reserve_s = float(read_saved(self.run.state).get("reserve_s") or _scoring_reserve_s(config))
        self._events.fill(snap)
        self._fill_evaluations(snap)
        snap.jobs = read_jobs(self.run.jobs)
        self._fill_end(snap, config)
        return snap

    def _load_config(self) -> dict[str, Any]:
        if self._config is None:
            try:
                self._config = tomllib.loads(self.run.run_toml.read_text(encoding="utf-8"))
            except (OSError, tomllib.TOMLDecodeError):
                return {}  # not written yet: try again next time
        return self._config

    def _new_events(self) -> list[Event]:
        """Complete lines appended since the last call; a torn last line waits for its newline."""
        try:
            with open(self.run.trace, "rb") as handle:
                handle.seek(self._offset)
                data = handle.read()
        except OSError:
            return []
        complete = data[: data.rfind(b"\n") + 1]
        self._offset += len(complete)
        return parse_lines(complete.splitlines())

    def _fill_evaluations(self, snap: RunSnapshot) -> None:
        folder = self.run.evaluations
        for path in sorted(folder.glob("eval-*.json")) if folder.is_dir() else []:
            if path.stem not in self._evaluations:
                try:
                    self._evaluations[path.stem] = json.loads(path.read_text(encoding="utf-8"))
                except (OSError, json.JSONDecodeError):
                    continue  # being written: next look
        records = list(self._evaluations.values())
        snap.evaluations = len(records)
        snap.failed_evaluations = sum(1 for r in records if not r.get("ok"))
        for record in records:
            snap.metric = record.get("metric") or snap.metric
            if not record.get("ok") or record.get("score") is None:
                continue
            better = (snap.best is None or (record["score"] > snap.best.score if snap.metric.get("direction") != "min"
                                            else record["score"] < snap.best.score))
            if better:
                snap.best = Best(record["id"], record["score"], record.get("artifact", ""),
                                 record.get("started_at", ""), record_set(record))

    def _fill_end(self, snap: RunSnapshot, config: dict[str, Any]) -> None:
        ended = self._events.finished
        started_at = float(config.get("started_at", 0.0))
        if ended is None:
            snap.state = "running" if config else "starting"
            mode = config.get("budget_clock", "wall")
            snap.elapsed_s = observed_elapsed_s(started_at, mode, self.run.state)
            if not self._events.phase and snap.budget_s:  # the baseline policy has no phase events
                snap.phase = "wrap-up" if snap.remaining_s <= snap.reserve_s else "work"
            if started_at and _abandoned(self.run, started_at + snap.budget_s):
                snap.state = snap.phase = "abandoned"
                snap.note = "no end recorded: `research-crew resume` continues it"
                snap.elapsed_s = observed_elapsed_s(started_at, mode, self.run.state, stopped_at=_last_write(self.run))
            return
        snap.state = "interrupted" if ended.exit_code == EXIT_INTERRUPTED else "finished"
        snap.status, snap.note = ended.status, ended.note or ""
        snap.phase = ("interrupted" if snap.state == "interrupted" else "done") + (
            f" (last phase: {self._events.phase})" if self._events.phase else "")
        result = read_json(self.run.result)
        snap.elapsed_s = float(result.get("elapsed_s") or (time.time() - started_at if started_at else 0.0))
        snap.steps = int(result.get("steps") or snap.steps)
        if result.get("tokens"):
            snap.tokens = {k: int(result["tokens"].get(k, 0)) for k in TOKEN_KEYS}
            snap.cost_usd = float(result.get("cost_usd") or snap.cost_usd)


class _EventState:
    """What the trace has said so far, folded event by event."""

    def __init__(self) -> None:
        self.phase: str | None = None
        self.agent: str | None = None
        self.subtasks: dict[str, dict[str, Any]] = {}  # under way, by subtask id
        self.tokens = dict.fromkeys(TOKEN_KEYS, 0)
        self.cost_usd = 0.0
        self.steps = 0
        self.resumes = 0
        self.finished: RunFinished | None = None
        self.last_t: str | None = None

    def apply(self, event: Event) -> None:
        self.last_t = event.t or self.last_t
        if isinstance(event, RunStarted | Resumed):
            self.finished = None  # a resumed run is running again
            self.resumes += isinstance(event, Resumed)
        elif isinstance(event, RunFinished):
            self.finished = event
        elif isinstance(event, PhaseEntered):
            self.phase = event.phase
        elif isinstance(event, SubtaskStarted):
            self.subtasks[event.subtask_id or event.role] = {
                "role": event.role, "subtask": event.subtask, "minutes": event.minutes, "t": event.t}
        elif isinstance(event, SubtaskFinished):
            self.subtasks.pop(event.subtask_id or event.agent, None)
        elif isinstance(event, ModelResponse):
            self.agent = event.agent
            self.steps = max(self.steps, int(event.step or 0))
            for key in TOKEN_KEYS:
                self.tokens[key] += int((event.usage or {}).get(key) or 0)
            self.cost_usd = float(event.cost_usd or self.cost_usd)  # the meter's running total

    def fill(self, snap: RunSnapshot) -> None:
        snap.agent, snap.subtasks = self.agent, list(self.subtasks.values())
        snap.tokens, snap.cost_usd = dict(self.tokens), self.cost_usd
        snap.steps, snap.resumes, snap.last_event_t = self.steps, self.resumes, self.last_t
        if self.phase:
            snap.phase = self.phase


def _abandoned(run: RunDir, deadline: float) -> bool:
    now = time.time()
    return now > deadline + ABANDONED_AFTER_S and now > _last_write(run) + ABANDONED_AFTER_S


def _last_write(run: RunDir) -> float:
    """When the run last wrote anything a live run writes: its trace, crew state or a job's log."""
    paths = [run.trace, run.run_toml, *run.state.glob("*"), *run.job_logs()]
    return max((p.stat().st_mtime for p in paths if p.exists()), default=0.0)


def read_snapshot(root: Path) -> RunSnapshot:
    return RunWatcher(root).snapshot()


def _scoring_reserve_s(config: dict[str, Any]) -> float:
    """The preset's scoring reserve, from the challenge folder the run recorded (0 if it is gone)."""
    try:
        toml = tomllib.loads((Path(config["challenge_dir"]) / "challenge.toml").read_text(encoding="utf-8"))
    except (KeyError, OSError, tomllib.TOMLDecodeError):
        return 0.0
    preset = toml.get("presets", {}).get(config.get("preset", ""), {})
    minutes = preset.get("score_minutes")
    return float(minutes if minutes is not None else default_score_minutes(float(preset.get("hours", 0.0)))) * 60.0


def read_json(path: Path) -> dict[str, Any]:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return {}
