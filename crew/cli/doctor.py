"""`research-crew doctor CHALLENGE [--preset P]`: can this machine run it? A table of verdicts and fixes."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from challenges.framework.api import ChallengeError
from challenges.framework.loader import load_challenge
from crew.cli.console import fail, out
from crew.cli.doctor_checks import FAIL, failures, run_checks

STYLE = {"ok": "green", "warn": "yellow", "fail": "bold red", "skip": "dim"}


def register(app: typer.Typer) -> None:
    app.command()(doctor)


def doctor(
    challenge: Annotated[str, typer.Argument(help="challenge name (see `challenges list`) or folder")],
    preset: Annotated[str, typer.Option(help="full, mini or smoke")] = "full",
    model: Annotated[str | None, typer.Option(help="the model spec a run would use (default: as `run` picks)")] = None,
    jobs: Annotated[str, typer.Option(help="slurm: also check the cluster the crew's jobs would go to")] = "local",
    executor: Annotated[str, typer.Option(help="slurm: also check the cluster a bench would use")] = "local",
    partition: Annotated[str | None, typer.Option(help="the SLURM partition (default: the cluster's)")] = None,
    shared: Annotated[Path | None, typer.Option(help="the folder compute nodes must see (default: the runs "
                                                     "folder)")] = None,
) -> None:
    """Check GPU, disk, hub access (datasets, models, lm-eval tasks), tools, sandbox and model API for a preset;
    with --jobs slurm or --executor slurm, the cluster too (sinfo, the partition, its GPUs, the shared folder)."""
    try:
        found = load_challenge(challenge)
        chosen = found.preset(preset)
    except ChallengeError as error:
        fail(error)
    checks = run_checks(found, chosen, model_spec=model)
    if "slurm" in (jobs, executor):
        from crew.run.cluster import doctor_checks
        from crew.run.rundir import default_runs_root

        checks += doctor_checks(partition, (shared or default_runs_root()).resolve())
    title = (f"{found.name}, {chosen.name} preset: {chosen.hours:g} h, {chosen.gpus} GPU(s) of "
             f"{chosen.gpu_memory_gb:g} GB, disk {chosen.disk_gb:g} GB, download {chosen.download_gb:g} GB")
    table = Table("check", "verdict", "found", "fix", title=title, title_justify="left")
    for check in checks:
        table.add_row(escape(check.name), f"[{STYLE[check.verdict]}]{check.verdict}[/]", escape(check.detail),
                      escape(check.fix))
    out.print(table)
    failed = failures(checks)
    if failed:
        out.print(f"[{STYLE[FAIL]}]{len(failed)} check(s) failed[/]: "
                  f"{escape(', '.join(c.name for c in failed))}", highlight=False)
        raise typer.Exit(1)
    warnings = [c.name for c in checks if c.verdict == "warn"]
    out.print("[green]no check failed[/]" + (f"; warnings: {escape(', '.join(warnings))}" if warnings else ""))
