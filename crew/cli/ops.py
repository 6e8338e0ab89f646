"""`status`, `runs`, `report` and `bench`: operating runs from their directories."""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from crew.cli.console import fail, out
from crew.errors import CrewError
from crew.run.rundir import RunDir, default_runs_root

MAX_DEPTH = 3  # `runs` looks this deep: runs/<id>/, and a bench's <bench>/runs/<id>/


def register(app: typer.Typer) -> None:
    app.command()(status)
    app.command()(runs)
    app.command()(report)
    app.command()(experiments)
    from crew.bench.cli import bench_app

    app.add_typer(bench_app, name="bench")


def status(run_dir: Annotated[Path, typer.Argument(help="a run directory, or a bench folder (as `bench status`)")]
           ) -> None:
    """Show a run's phase, budget, current subtask, jobs, best score, tokens and cost (from its files only);
    for a bench folder, as `research-crew bench status`: each cell's state (SLURM's view of its job included)."""
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
    from challenges.framework.harness import load_evaluations
    from crew.run.score_sets import on_set, record_set

    _require_run(run_dir)
    table = Table("id", "kind", "parent", "score", "commit", "job", "hypothesis", "lesson", title=str(run_dir))
    for r in load_evaluations(RunDir(run_dir).evaluations):
        e = r.experiment
        score = on_set(r.score, record_set(vars(r))) if r.ok else f"failed: {r.error[:40]}"
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
    from crew.run.config import check_run_dir

    snaps, damaged = [], []
    for run in _run_dirs(folder):
        try:
            check_run_dir(run.root)
        except CrewError as error:
            damaged.append((run.root, error))
            continue
        snaps.append(read_snapshot(run.root))
    snaps.sort(key=lambda s: float(s.config.get("started_at", 0.0)), reverse=True)
    if not snaps and not damaged:
        out.print(f"no runs under {folder}", markup=False)
        return
    table = Table(title=f"runs under {folder}", title_justify="left")
    for column in ("run", "challenge", "model", "status", "score", "age"):
        table.add_column(column, overflow="fold")
    for snap in snaps:
        state = snap.status or snap.state
        score = _run_score(snap)
        table.add_row(str(snap.root.relative_to(folder)), f"{snap.config.get('challenge')} "
                      f"({snap.config.get('preset')})", str(snap.config.get("model")), state, score,
                      _age(float(snap.config.get("started_at", 0.0))))
    for root, error in damaged:  # listed, never skipped: the user sees the run and that it needs care
        table.add_row(str(root.relative_to(folder)), "?", "?", f"damaged ({error.message.split('/')[-1]})",
                      "-", "?")
    out.print(table)


def report(run_dir: Annotated[Path, typer.Argument(help="a run directory")]) -> None:
    """Write report.md and a self-contained report.html (plots included) for a run, finished or not."""
    from crew.reporting.report import write_reports

    _require_run(run_dir)
    logging.basicConfig(level=logging.WARNING)
    md, html = write_reports(run_dir)
    out.print(f"wrote {md}" + (f" and {html}" if html else " (no report.html: plotting failed, see the log)"),
              markup=False)


def _run_score(snap) -> str:
    """A finished run's submitted score (full set, as result.json has it); a running one's best so far."""
    from crew.reporting.snapshot import read_json
    from crew.run.score_sets import FULL, on_set

    result = read_json(RunDir(snap.root).result)
    if snap.finished and result.get("score") is not None:
        return on_set(result["score"], result.get("score_set", FULL))
    return on_set(snap.best.score, snap.best.score_set) if snap.best else "-"


def _require_run(run_dir: Path) -> None:
    """Refuse a folder that is no run directory, or one whose run.toml or result.json is damaged (exit 2)."""
    from crew.run.config import check_run_dir

    try:
        check_run_dir(run_dir)
    except CrewError as error:
        fail(error)


def _run_dirs(folder: Path) -> list[RunDir]:
    found, level = [], [folder]
    for _ in range(MAX_DEPTH):
        level = [child for parent in level for child in parent.iterdir() if child.is_dir()]
        found += [RunDir(child) for child in level if RunDir(child).is_run()]
        level = [child for child in level if not RunDir(child).is_run()]
    return found


def _age(started_at: float) -> str:
    from crew.run.durations import format_duration

    return f"{format_duration(time.time() - started_at)} ago" if started_at else "?"
