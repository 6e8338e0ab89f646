"""`research-crew challenges ...`: list, show, validate and create challenges."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from challenges.framework.api import ChallengeError
from challenges.framework.loader import PATH_VARIABLE, challenge_folders, load_challenge
from challenges.framework.scaffold import write_challenge
from challenges.framework.validator import validate
from crew.cli.console import err, fail, out
from crew.errors import EXIT_BAD_INPUT

challenges_app = typer.Typer(help="List, show, validate and create challenges.", no_args_is_help=True)


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
    against = "the baseline policy" if c.reference_score is None else f"the reference score {c.reference_score:g}"
    out.print(f"metric: {c.metric.name}, {c.metric.direction}; success = {c.metric.success_threshold:.0%} "
              f"better than {against}" + ("; blind: agents see no score" if c.blind else ""))
    if c.requirements:
        out.print(f"requirements: {', '.join(c.requirements)}", markup=False)
    out.print(f"submission: {c.submission}", markup=False)
    for p in c.presets.values():
        needs = (f"{p.gpus} GPU(s) of {p.gpu_memory_gb:g} GB" if p.gpus else "CPU") + (
            f", disk {p.disk_gb:g} GB, download {p.download_gb:g} GB, scoring {p.score_minutes:g} min")
        out.print(f"preset {p.name}: {p.hours:g} h, {needs}; {p.description}", markup=False, highlight=False)
        if p.metric:
            out.print(f"  scored by a proxy: {p.metric.name}, {p.metric.direction}, instead of {c.metric.name}"
                      + (f" ({p.metric_note})" if p.metric_note else ""), markup=False, highlight=False)
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


@challenges_app.command("new")
def challenges_new(
    name: Annotated[str, typer.Argument(help="the new challenge's name: letters, digits, - and _")],
    directory: Annotated[Path, typer.Option("--dir", help="where to create the folder")] = Path("."),
) -> None:
    """Write a small, valid, runnable challenge folder (smoke preset and baseline included) to edit."""
    taken = challenge_folders().get(name)
    if taken is not None:  # on the challenge path, the new folder would silently replace this one
        fail(ChallengeError(f"a challenge named '{name}' exists already ({taken})",
                            "choose another name; to change that challenge, copy its folder and edit the copy "
                            "(a folder on RESEARCH_CREW_CHALLENGE_PATH overrides a built-in of the same name)"))
    try:
        folder = write_challenge(directory, name)
    except ChallengeError as error:
        fail(error)
    _, problems = validate(folder)
    for problem in problems:  # the template is valid; this guards against a broken install
        err.print(f"[red]✗[/] {escape(str(problem))}", highlight=False)
    out.print(f"[green]✓[/] wrote {escape(str(folder))}: challenge.toml, task.md, prepare.py, scorer.py, "
              "baseline/train.py", highlight=False)
    parent = folder.resolve().parent
    out.print(f"next: export {PATH_VARIABLE}={escape(str(parent))}, then `research-crew run {name} --preset smoke "
              "--model baseline`; see docs/CHALLENGES.md", highlight=False)
    if problems:
        raise typer.Exit(EXIT_BAD_INPUT)


import_app = typer.Typer(help="Write research-crew challenges from a peer benchmark suite's own files.",
                         no_args_is_help=True)
challenges_app.add_typer(import_app, name="import")


@import_app.command("mlagentbench")
def import_mlagentbench(
    path: Annotated[Path, typer.Argument(help="an MLAgentBench checkout, or one benchmarks/<task> folder")],
    task: Annotated[str | None, typer.Option("--task", help="import this task only")] = None,
    all_tasks: Annotated[bool, typer.Option("--all", help="import every task of the checkout")] = False,
    into: Annotated[Path, typer.Option("--into", help="where the challenge folders go")] = Path("mlagentbench"),
) -> None:
    """One challenge folder per MLAgentBench task (upstream's files verbatim), and a report of which run here."""
    from challenges.framework.importers.mlagentbench import import_tasks

    if task and all_tasks:
        fail(ChallengeError("--task and --all exclude each other", "give one of them"))
    try:
        reports = import_tasks(path, into, task, all_tasks)
    except ChallengeError as error:
        fail(error)
    table = Table("task", "metric", "upstream reference", "runs here offline", "why not / notes", "missing packages")
    for r in reports:
        verdict = "[green]yes[/]" if r.runnable_offline else "[red]no[/]"
        reference = "-" if r.reference_score is None else f"{r.reference_score:g}"
        why = "; ".join(r.reasons + r.notes)
        table.add_row(r.task, f"{r.metric} ({r.direction})", reference, verdict, escape(why),
                      ", ".join(r.missing_packages) or "-")
    out.print(table)
    written = [r for r in reports if r.folder is not None]
    out.print(f"wrote {len(written)} of {len(reports)} challenge folder(s) under {escape(str(into))}; "
              f"use them with: export {PATH_VARIABLE}={escape(str(Path(into).resolve()))}", highlight=False)
    if len(written) < len(reports):
        raise typer.Exit(EXIT_BAD_INPUT)
