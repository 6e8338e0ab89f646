"""The run panel (rich): phase, budget bar, subtask and agent, jobs with progress and ETA, best score, usage.
`status` prints it once; `run` keeps it live. `plain_lines` is the same in words, for logs without a terminal."""

from __future__ import annotations

import time

from rich.console import Group, RenderableType
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from crew.reporting.snapshot import RunSnapshot
from crew.run.durations import format_duration
from crew.run.score_sets import on_set
from toolkit.progress import format_duration as format_eta

STATE_STYLE = {"running": "bold green", "finished": "bold blue", "interrupted": "bold yellow", "starting": "dim",
               "abandoned": "bold red"}


def render_panel(snap: RunSnapshot) -> RenderableType:
    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="bold", no_wrap=True)
    grid.add_column()
    grid.add_row("challenge", f"{snap.config.get('challenge', '?')} ({snap.config.get('preset', '?')}), "
                              f"model {snap.config.get('model', '?')}")
    state = Text(snap.state, style=STATE_STYLE.get(snap.state, ""))
    if snap.status:
        state.append(f" · {snap.status}" + (f" ({snap.note})" if snap.note else ""))
    elif snap.note:
        state.append(f" ({snap.note})")
    grid.add_row("state", state)
    grid.add_row("phase", snap.phase)
    grid.add_row("budget", _budget(snap))
    grid.add_row("agent", _agent(snap))
    grid.add_row("best score", best_line(snap))
    grid.add_row("usage", usage_line(snap))
    parts: list[RenderableType] = [grid]
    if snap.jobs:
        parts.append(_jobs_table(snap))
    return Panel(Group(*parts), title=f"run {snap.run_id}", border_style="cyan", expand=False)


def _budget(snap: RunSnapshot, width: int = 30) -> RenderableType:
    """A bar in three parts: used, still free for work, and the reserve kept for scoring at the end."""
    total = max(snap.budget_s, 1.0)
    used = round(width * min(snap.elapsed_s, total) / total)
    reserve = min(round(width * snap.reserve_s / total), width - used)
    bar = Text("█" * used, style="green")
    bar.append("░" * (width - used - reserve), style="dim")
    bar.append("▒" * reserve, style="yellow")
    return bar.append(" " + budget_line(snap))


def budget_line(snap: RunSnapshot) -> str:
    return (f"elapsed {format_duration(snap.elapsed_s)} of {format_duration(snap.budget_s)}, "
            f"remaining {format_duration(snap.remaining_s)}, reserve {format_duration(snap.reserve_s)}")


def _agent(snap: RunSnapshot) -> str:
    if snap.subtasks:
        at_work = "; ".join(_subtask_text(s) for s in snap.subtasks)
        return f"{at_work}; last: {snap.agent}"
    return snap.agent or "none yet"


def _subtask_text(subtask: dict) -> str:
    text = " ".join(str(subtask.get("subtask", "")).split())
    text = text if len(text) <= 90 else text[:89] + "…"
    return f"{subtask.get('role')} on \"{text}\" ({subtask.get('minutes')} min)"


def best_line(snap: RunSnapshot) -> str:
    metric = snap.metric.get("name", "score")
    evaluated = f"{snap.evaluations} evaluation(s), {snap.failed_evaluations} failed"
    if snap.best is None:
        return f"none yet ({evaluated})"
    return f"{metric} = {on_set(snap.best.score, snap.best.score_set)} from {snap.best.id} ({evaluated})"


def usage_line(snap: RunSnapshot) -> str:
    t = snap.tokens
    return (f"{snap.steps} steps, tokens in {t['input']:,} out {t['output']:,} cache read {t['cache_read']:,} "
            f"write {t['cache_write']:,}, cost ${snap.cost_usd:.2f}")


def _jobs_table(snap: RunSnapshot) -> Table:
    table = Table(title="jobs", title_justify="left", expand=False, pad_edge=False)
    for column in ("job", "state", "ran", "progress", "ETA"):
        table.add_column(column)
    now = time.time()
    for job in snap.jobs[-8:]:  # the latest few; `runs`/the report show all
        progress = job.progress
        table.add_row(job.id, job.state, format_eta(job.runtime_s(now)),
                      f"{progress.done:g}/{progress.total:g} ({progress.fraction:.0%})" if progress else "-",
                      format_eta(progress.eta_s) if progress and job.running else "-")
    return table


def plain_lines(snap: RunSnapshot) -> list[str]:
    """The panel as log lines (no terminal, or --quiet)."""
    lines = [f"[{snap.run_id}] {snap.state} · phase {snap.phase} · {budget_line(snap)}",
             f"[{snap.run_id}] best: {best_line(snap)} · {usage_line(snap)}"]
    for job in snap.jobs:
        if job.running:
            eta = format_eta(job.progress.eta_s) if job.progress else "unknown"
            lines.append(f"[{snap.run_id}] job {job.id}: {job.progress or 'no progress yet'} (ETA {eta})")
    return lines
