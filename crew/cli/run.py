"""`research-crew run` (and, with the checkpoint work, `resume`): start a run and say how it ended."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Annotated

import typer

from crew.cli.console import fail, out
from crew.errors import CrewError


def register(app: typer.Typer) -> None:
    app.command()(run)
    app.command()(resume)


def run(
    challenge: Annotated[str, typer.Argument(help="challenge name (see `challenges list`) or folder")],
    preset: Annotated[str, typer.Option(help="full, mini or smoke (offline, CPU, minutes)")] = "full",
    model: Annotated[str | None, typer.Option(help="baseline, anthropic:MODEL, openai:MODEL, "
                                                   "openai:MODEL@BASE_URL (vLLM, Ollama, llama.cpp), "
                                                   "replay:PATH")] = None,
    supervisor_model: Annotated[str | None, typer.Option(help="model spec for the supervisor")] = None,
    worker_model: Annotated[str | None, typer.Option(help="model spec for the workers")] = None,
    budget: Annotated[str | None, typer.Option(help="wall clock, e.g. 24h or 90m; default: the preset's")] = None,
    max_cost: Annotated[float | None, typer.Option(help="stop spending on model calls past this many USD")] = None,
    run_dir: Annotated[Path | None, typer.Option(help="default: runs/<challenge>-<UTC time>-<hex>")] = None,
    budget_clock: Annotated[str, typer.Option(help="wall (downtime counts) or active (only time alive)")] = "wall",
    sandbox: Annotated[str, typer.Option(help="bwrap (agents' commands in bubblewrap) or none (an integrity "
                                              "warning)")] = "bwrap",
    agent_network: Annotated[str, typer.Option(help="egress (the internet but not this machine's own services), "
                                                    "off, or host (an integrity warning)")] = "egress",
    jobs: Annotated[str, typer.Option(help="local (this machine) or slurm (each job a SLURM batch job; the run "
                                           "directory must be on a path the compute nodes see)")] = "local",
    partition: Annotated[str | None, typer.Option(help="--jobs slurm: the partition")] = None,
    max_jobs: Annotated[int | None, typer.Option(help="--jobs slurm: how many jobs the run may hold on the cluster "
                                                      "at once, queued or running, shared by its engineers "
                                                      "(default 4)")] = None,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="debug logging")] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="plain log lines instead of the live panel")] = False,
    skip_checks: Annotated[bool, typer.Option("--skip-checks", help="start even if doctor's checks fail "
                                                                    "(the GPU check included)")] = False,
    install_requirements: Annotated[bool, typer.Option(
        "--install-requirements", help="install the challenge's unmet [environment] requirements into a folder of "
                                       "the run's own (never into your environment)")] = False,
    retry_window: Annotated[str | None, typer.Option(help="how long model calls are retried in an outage, e.g. "
                                                           "30m (default 10m, 30m for openai:M@URL)")] = None,
    floor: Annotated[bool, typer.Option("--floor/--no-floor", help="start a crew run with the baseline recipe as "
                                        "experiment 0 (a short job), submitted if nothing beats it")] = True,
) -> None:
    """Run a challenge end to end and write result.json, report.md and trace.jsonl."""
    from crew.policy.runner import RunRequest, start_run

    # The user reads the run's own lines; library chatter only with --verbose.
    logging.basicConfig(level=logging.DEBUG if verbose else logging.WARNING,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s", datefmt="%H:%M:%S")
    request = RunRequest(challenge, preset, model, supervisor_model, worker_model, budget, max_cost, run_dir,
                         budget_clock=budget_clock, sandbox=sandbox, agent_network=agent_network,
                         skip_checks=skip_checks, install_requirements=install_requirements, floor=floor,
                         retry_window=retry_window, jobs=jobs, partition=partition, max_jobs=max_jobs)
    try:
        from crew.reporting.live import run_with_panel

        code, run_path = run_with_panel(start_run, request, lambda line: out.print(line, markup=False,
                                                                                  highlight=False), out, quiet)
    except CrewError as error:
        fail(error)
    _print_end(run_path.result, run_path.root)
    raise typer.Exit(code)


def resume(
    run_dir: Annotated[Path, typer.Argument(help="the run directory to continue")],
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="debug logging")] = False,
) -> None:
    """Continue an interrupted or crashed run from its last completed step."""
    from crew.policy.runner import resume_run

    logging.basicConfig(level=logging.DEBUG if verbose else logging.WARNING,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s", datefmt="%H:%M:%S")
    try:
        code, run_path = resume_run(run_dir, say=lambda line: out.print(line, markup=False, highlight=False))
    except CrewError as error:
        fail(error)
    _print_end(run_path.result, run_path.root)
    raise typer.Exit(code)


def _print_end(result_path: Path, root: Path) -> None:
    """The lines `run` and `resume` end with: the status, the submitted score and its set, the run directory."""
    from crew.run.score_sets import FULL

    result = json.loads(result_path.read_text())
    out.print(f"status: {result['status']}" + (f" ({result['note']})" if result.get("note") else ""), markup=False)
    score, metric = result["score"], result["metric"]
    out.print("score: n/a" if score is None else f"score: {score:.4f} ({result.get('score_set', FULL)} set; "
              f"{metric['name']}, {metric['direction']})", markup=False)
    out.print(f"run directory: {root}", markup=False)
