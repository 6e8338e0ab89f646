"""The `research-crew` command line."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from challenges.api import ChallengeError
from challenges.loader import challenge_folders, load_challenge
from challenges.validator import validate
from crew.errors import EXIT_BAD_INPUT, CrewError

app = typer.Typer(help="Unattended ML research inside a hard time budget.", no_args_is_help=True,
                  pretty_exceptions_enable=False, add_completion=False)
challenges_app = typer.Typer(help="List, show and validate challenges.", no_args_is_help=True)
app.add_typer(challenges_app, name="challenges")
out = Console(soft_wrap=True)
err = Console(stderr=True, soft_wrap=True)


def fail(error: CrewError | ChallengeError, code: int = EXIT_BAD_INPUT) -> None:
    err.print(f"[bold red]error:[/] {escape(error.message)}", highlight=False)
    if error.hint:
        err.print(f"[bold]hint:[/] {escape(error.hint)}", highlight=False)
    raise typer.Exit(getattr(error, "exit_code", code))


@app.command()
def run(
    challenge: Annotated[str, typer.Argument(help="challenge name (see `challenges list`) or folder")],
    preset: Annotated[str, typer.Option(help="full, mini or smoke (offline, CPU, minutes)")] = "full",
    model: Annotated[str | None, typer.Option(help="baseline, anthropic:M, openai:M[@URL], replay:PATH")] = None,
    supervisor_model: Annotated[str | None, typer.Option(help="model spec for the supervisor")] = None,
    worker_model: Annotated[str | None, typer.Option(help="model spec for the workers")] = None,
    budget: Annotated[str | None, typer.Option(help="wall clock, e.g. 24h or 90m; default: the preset's")] = None,
    max_cost: Annotated[float | None, typer.Option(help="stop spending on model calls past this many USD")] = None,
    run_dir: Annotated[Path | None, typer.Option(help="default: runs/<challenge>-<UTC time>-<hex>")] = None,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="debug logging")] = False,
) -> None:
    """Run a challenge end to end and write result.json, report.md and trace.jsonl."""
    from crew.runner import RunRequest, start_run

    # The user reads the run's own lines; library chatter only with --verbose.
    logging.basicConfig(level=logging.DEBUG if verbose else logging.WARNING,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s", datefmt="%H:%M:%S")
    request = RunRequest(challenge, preset, model, supervisor_model, worker_model, budget, max_cost, run_dir)
    try:
        code, run_path = start_run(request, say=lambda line: out.print(line, markup=False, highlight=False))
    except CrewError as error:
        fail(error)
    result = json.loads(run_path.result.read_text())
    score = result["score"]
    out.print(f"status: {result['status']}" + (f" ({result['note']})" if result.get("note") else ""), markup=False)
    out.print(f"score: {'n/a' if score is None else f'{score:.4f}'} ({result['metric']['name']}, "
              f"{result['metric']['direction']})", markup=False)
    out.print(f"run directory: {run_path.root}", markup=False)
    raise typer.Exit(code)


@challenges_app.command("list")
def challenges_list() -> None:
    """List the challenges found (built-in and on RESEARCH_CREW_CHALLENGE_PATH)."""
    table = Table("name", "title", "presets", "metric", "folder")
    for name, folder in sorted(challenge_folders().items()):
        try:
            c = load_challenge(folder)
            table.add_row(name, c.title, ", ".join(c.presets), f"{c.metric.name} ({c.metric.direction})", str(folder))
        except ChallengeError:
            table.add_row(name, "[red]invalid: run `challenges validate`[/]", "", "", str(folder))
    out.print(table)


@challenges_app.command("show")
def challenges_show(name: Annotated[str, typer.Argument(help="challenge name or folder")]) -> None:
    """Show a challenge's metric, presets, rules and task text."""
    try:
        c = load_challenge(name)
    except ChallengeError as error:
        fail(error)
    out.print(f"[bold]{escape(c.title)}[/] ({c.name}) — {escape(c.source)}\nfolder: {c.directory}")
    out.print(f"metric: {c.metric.name}, {c.metric.direction}; success = {c.metric.success_threshold:.0%} "
              "better than the baseline policy")
    out.print(f"submission: {c.submission}", markup=False)
    for p in c.presets.values():
        out.print(f"preset {p.name}: {p.hours:g} h, {p.gpus} GPU(s); {p.description}", markup=False, highlight=False)
    for rule in c.allowed:
        out.print(f"allowed: {rule}", markup=False)
    for rule in c.forbidden:
        out.print(f"forbidden: {rule}", markup=False)
    out.print("\n" + c.task_text, markup=False, highlight=False)


@challenges_app.command("validate")
def challenges_validate(name_or_path: Annotated[str, typer.Argument(help="challenge name or folder")]) -> None:
    """Check every file and field of a challenge; exit 2 naming each problem and its fix."""
    folder = Path(name_or_path)
    if not folder.is_dir():
        folders = challenge_folders()
        if name_or_path not in folders:
            fail(ChallengeError(f"unknown challenge '{name_or_path}'; known: {', '.join(sorted(folders))}",
                                "give a known name or the path of a challenge folder"))
        folder = folders[name_or_path]
    _, problems = validate(folder)
    if problems:
        for problem in problems:
            err.print(f"[red]✗[/] {escape(str(problem))}", highlight=False)
        raise typer.Exit(EXIT_BAD_INPUT)
    out.print(f"[green]✓[/] {folder} is a valid challenge")


def main() -> None:
    app()


if __name__ == "__main__":
    main()
