"""`status`, `runs`, `report` and `bench`: operating runs from their directories."""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from crew.console import fail, out
from crew.errors import CrewError
from crew.rundir import default_runs_root

MAX_DEPTH = 3  # `runs` looks this deep: runs/<id>/, and a bench's <bench>/runs/<id>/


def register(app: typer.Typer) -> None:
    app.command()(status)
    app.command()(runs)
    app.command()(report)
    app.command()(experiments)
    from crew.bench.cli import bench

    app.command()(bench)


def status(run_dir: Annotated[Path, typer.Argument(help="a run directory, or a bench folder")]) -> None:
    """Show a run's phase, budget, current subtask, jobs, best score, tokens and cost (from its files only);
    for a bench folder, each cell's state (SLURM's view of its job included)."""
    from crew.reporting.panel import render_panel
    from crew.reporting.snapshot import read_snapshot

    if (run_dir / "bench.json").is_file():
        from crew.bench.status import bench_status

        out.print(bench_status(run_dir), markup=False)
        return
    _require_run(run_dir)
    out.print(render_panel(read_snapshot(run_dir)))


def experiments(run_dir: Annotated[Path, typer.Argument(help="a run directory")]) -> None:
    """The run's experiment table: every evaluation with its kind, parent, score, commit, hypothesis and lesson."""
    from challenges.harness import load_evaluations

    _require_run(run_dir)
    table = Table("id", "kind", "parent", "score", "commit", "job", "hypothesis", "lesson", title=str(run_dir))
    for r in load_evaluations(run_dir / "evaluations"):
        e = r.experiment
        score = f"{r.score:.4f}" if r.ok else f"failed: {r.error[:40]}"
        table.add_row(r.id, e.get("kind", ""), e.get("parent") or "", score, (e.get("commit") or "")[:10],
                      e.get("job") or "", e.get("hypothesis", ""), e.get("lesson", ""))
    out.print(table)


def runs(folder: Annotated[Path | None, typer.Argument(help="where to look; default: runs/ "
                                                            "(or $RESEARCH_CREW_RUNS)")] = None) -> None:
    """List the runs under a folder: challenge, model, status, score and age, newest first."""
    from crew.reporting.snapshot import read_snapshot

    folder = folder or default_runs_root()
    if not folder.is_dir():
        fail(CrewError(f"{folder} is not a folder", "give the folder that holds run directories, e.g. runs/"))
    snaps = sorted((read_snapshot(p.parent) for p in _run_tomls(folder)),
                   key=lambda s: float(s.config.get("started_at", 0.0)), reverse=True)
    if not snaps:
        out.print(f"no runs under {folder}", markup=False)
        return
    table = Table(title=f"runs under {folder}", title_justify="left")
    for column in ("run", "challenge", "model", "status", "score", "age"):
        table.add_column(column, overflow="fold")
    for snap in snaps:
        state = snap.status or snap.state
        score = f"{snap.best.score:.4f}" if snap.best else "-"
        table.add_row(str(snap.root.relative_to(folder)), f"{snap.config.get('challenge')} "
                      f"({snap.config.get('preset')})", str(snap.config.get("model")), state, score,
                      _age(float(snap.config.get("started_at", 0.0))))
    out.print(table)


def report(run_dir: Annotated[Path, typer.Argument(help="a run directory")]) -> None:
    """Write report.md and a self-contained report.html (plots included) for a run, finished or not."""
    from crew.reporting.report import write_reports

    _require_run(run_dir)
    logging.basicConfig(level=logging.WARNING)
    md, html = write_reports(run_dir)
    out.print(f"wrote {md}" + (f" and {html}" if html else " (no report.html: plotting failed, see the log)"),
              markup=False)


def _require_run(run_dir: Path) -> None:
    if not (run_dir / "run.toml").is_file():
        fail(CrewError(f"{run_dir} is not a run directory (it has no run.toml)",
                       "give a folder made by `research-crew run`; `research-crew runs` lists them"))


def _run_tomls(folder: Path) -> list[Path]:
    found, level = [], [folder]
    for _ in range(MAX_DEPTH):
        level = [child for parent in level for child in parent.iterdir() if child.is_dir()]
        found += [child / "run.toml" for child in level if (child / "run.toml").is_file()]
        level = [child for child in level if not (child / "run.toml").is_file()]
    return found


def _age(started_at: float) -> str:
    from crew.durations import format_duration

    return f"{format_duration(time.time() - started_at)} ago" if started_at else "?"
