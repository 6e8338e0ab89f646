"""`research-crew run` with the live panel: a thread watches the run directory while the run goes on.
Without a terminal, or with --quiet, the same news comes as plain log lines."""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.live import Live

from crew.reporting.panel import plain_lines, render_panel
from crew.reporting.snapshot import RunWatcher
from crew.run.events import (
    EvaluationScored,
    Event,
    JobFinished,
    JobStarted,
    PhaseEntered,
    Resumed,
    SubtaskFinished,
    SubtaskStarted,
    UnverifiedClaim,
    WorkerStopped,
)
from crew.run.rundir import default_runs_root, new_run_id
from crew.run.score_sets import DEV, on_set

SUMMARY_EVERY_S = 300.0  # plain mode: the panel's lines this often, between event lines


def run_with_panel(start: Callable[..., Any], request: Any, say: Callable[[str], None], console: Console,
                   quiet: bool = False) -> Any:
    """Call `start(request, say=say)` while showing the run's progress; returns what it returns."""
    request = _with_run_dir(request)
    if request.run_dir is None:  # the challenge did not load: start() reports that, nothing to watch
        return start(request, say=say)
    watcher = RunWatcher(Path(request.run_dir))
    if not quiet and console.is_terminal:
        with Live(console=console, get_renderable=watcher.snapshot, refresh_per_second=1, transient=True):
            result = start(request, say=say)
        console.print(render_panel(watcher.snapshot()))
        return result
    stop = threading.Event()
    thread = threading.Thread(target=_log_lines, args=(watcher, say, stop), daemon=True, name="run-log-lines")
    thread.start()
    try:
        return start(request, say=say)
    finally:
        stop.set()
        thread.join(timeout=5)


def _with_run_dir(request: Any) -> Any:
    """The run directory chosen up front (as start_run would name it), so the watcher knows where to look."""
    if request.run_dir is not None:
        return request
    from challenges.framework.api import ChallengeError
    from challenges.framework.loader import load_challenge

    try:
        name = load_challenge(request.challenge).name
    except ChallengeError:
        return request
    return dataclasses.replace(request, run_dir=default_runs_root() / new_run_id(name))


def _log_lines(watcher: RunWatcher, say: Callable[[str], None], stop: threading.Event) -> None:
    last_summary = time.monotonic()
    while True:
        stopping = stop.wait(1.0)
        snap = watcher.snapshot()  # once more after the run ended: its last events are said too
        for event in watcher.new_events:
            if (line := event_line(event)) is not None:
                say(f"[{snap.run_id}] {line}")
        if stopping:
            return
        if time.monotonic() - last_summary >= SUMMARY_EVERY_S:
            last_summary = time.monotonic()
            for line in plain_lines(snap):
                say(line)


def event_line(event: Event) -> str | None:
    """One line for the events a person follows; None for the rest (model calls, tool results)."""
    if isinstance(event, PhaseEntered):
        return f"phase: {event.phase}"
    if isinstance(event, SubtaskStarted):
        return f"subtask for the {event.role} ({event.minutes} min): {_short(event.subtask)}"
    if isinstance(event, SubtaskFinished):
        return f"{event.agent} finished its subtask" + (f" (stopped: {event.stopped})" if event.stopped else "")
    if isinstance(event, EvaluationScored):
        score, name = event.score, event.evaluation
        if not event.ok:
            return f"evaluation {name} failed: {_short(event.error)}"
        if score is None:  # a blind challenge: the trace keeps no figure (the record has it)
            return f"evaluation {name}: scored (blind challenge: the figure is in evaluations/{name}.json)"
        return f"evaluation {name}: score {on_set(score, event.score_set or DEV)}"
    if isinstance(event, JobStarted):
        return f"job {event.job} started"
    if isinstance(event, JobFinished):
        return f"job {event.job} finished (exit code {event.exit_code})"
    if isinstance(event, Resumed | WorkerStopped | UnverifiedClaim):
        return f"{event.kind.replace('_', ' ')} ({event.agent}): {_short(event.details())}"
    return None


def _short(text: Any, limit: int = 100) -> str:
    text = " ".join(str(text or "").split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
