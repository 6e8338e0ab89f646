"""`research-crew bench`: check everything, run the missing cells, write and print the table; and
`research-crew bench status BENCH_DIR`: each cell's state."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Annotated

import typer

from crew.cli.console import fail, out
from crew.errors import EXIT_DONE, EXIT_INTERRUPTED, CrewError

log = logging.getLogger(__name__)
# `bench --challenges ...` runs a bench; `bench status DIR` is a command of the same group.
bench_app = typer.Typer(help="Run a grid of runs (the options), or show a bench's cells (`bench status DIR`).")


@bench_app.command("status")
def status(bench_dir: Annotated[Path, typer.Argument(help="a bench folder (its --out)")]) -> None:
    """Each cell of the bench: finished, interrupted, not started, or SLURM's view of its job (pending in
    queue with the reason and position, running on a node)."""
    from crew.bench.status import bench_status

    if not (bench_dir / "bench.json").is_file():
        fail(CrewError(f"{bench_dir} is not a bench folder (it has no bench.json)",
                       "give the folder a bench wrote (its --out), or use `research-crew status RUN_DIR` for a run"))
    out.print(bench_status(bench_dir), markup=False)


@bench_app.callback(invoke_without_command=True)
def bench(
    ctx: typer.Context,
    challenges: Annotated[str | None, typer.Option(help="comma-separated challenge names or folders")] = None,
    model: Annotated[list[str] | None, typer.Option(help="a model spec to compare with the baseline policy; "
                                                         "repeatable")] = None,
    runs: Annotated[int, typer.Option(help="repeats per (challenge, model)")] = 3,
    preset: Annotated[str, typer.Option(help="the challenges' preset")] = "smoke",
    budget: Annotated[str | None, typer.Option(help="each run's budget; default: the preset's")] = None,
    out_dir: Annotated[Path | None, typer.Option("--out", help="the bench folder; default: runs/bench-<hash>; "
                                                 "running the same bench again finishes only what is missing")] = None,
    executor: Annotated[str, typer.Option(help="local or slurm")] = "local",
    parallel: Annotated[int, typer.Option(help="local: runs at once on CPU (with GPUs: one per GPU)")] = 1,
    partition: Annotated[str | None, typer.Option(help="slurm: the partition")] = None,
    gpus_per_run: Annotated[int, typer.Option(help="slurm: GPUs per run")] = 1,
    cpus_per_run: Annotated[int, typer.Option(help="slurm: CPUs per run")] = 8,
    mem_gb: Annotated[float | None, typer.Option(help="slurm: memory per run")] = None,
    time_margin: Annotated[float, typer.Option(help="slurm: minutes added to the budget for the job's time")] = 15.0,
    max_parallel: Annotated[int, typer.Option(help="slurm: jobs in the queue at once")] = 32,
) -> None:
    """Run each (challenge, model, repeat) in its own run directory, the baseline policy included as the
    reference, and write the table (bench.md, bench.csv, bench_results.json)."""
    from crew.bench.plan import BenchSpec
    from crew.bench.table import build_rows, write_tables
    from crew.run.rundir import default_runs_root

    if ctx.invoked_subcommand is not None:
        return
    for option, value in (("--challenges", challenges), ("--model", model)):
        if not value:
            fail(CrewError(f"bench: missing option {option}", "give --challenges A,B and --model SPEC (see "
                           "`research-crew bench --help`), or `research-crew bench status BENCH_DIR`"))
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s", datefmt="%H:%M:%S")
    try:
        spec = BenchSpec.make([c.strip() for c in challenges.split(",") if c.strip()], model, runs, preset, budget)
        budgets = _check(spec)
        root = (out_dir or default_runs_root() / f"bench-{spec.key()}").resolve()
        run = _executor(executor, parallel, root, budgets, partition, gpus_per_run, cpus_per_run, mem_gb,
                        time_margin, max_parallel)
    except CrewError as error:
        fail(error)
    spec.save(root)
    cells = spec.cells(root)
    todo = [cell for cell in cells if cell.state() != "finished"]
    runs = f"{len(cells)} run{'' if len(cells) == 1 else 's'}"
    out.print(f"bench {root}: {runs}, {len(cells) - len(todo)} already finished, {len(todo)} to run",
              markup=False)
    try:
        completed = run(todo)
    except CrewError as error:  # the scheduler refused a submission: what ran is kept, the rest waits
        fail(error)
    markdown = write_tables(root, build_rows(cells))
    out.print(markdown, markup=False)
    out.print(f"tables: {root / 'bench.md'}, {root / 'bench.csv'}, {root / 'bench_results.json'}", markup=False)
    if not completed:
        out.print("interrupted: run the same command again to finish the missing runs", markup=False)
    raise typer.Exit(EXIT_DONE if completed else EXIT_INTERRUPTED)


def _check(spec) -> dict[str, float]:
    """Every challenge, preset, model spec and budget is valid; returns each challenge's budget in seconds."""
    from challenges.framework.api import ChallengeError
    from challenges.framework.loader import load_challenge
    from crew.agent.specs import parse_spec
    from crew.run.durations import parse_duration

    if spec.runs < 1:
        raise CrewError(f"--runs must be at least 1, not {spec.runs}", "give e.g. --runs 3")
    if not spec.challenges:
        raise CrewError("no challenge given", "give --challenges A,B (see `research-crew challenges list`)")
    for text in spec.models:
        parse_spec(text)
    budgets = {}
    for name in spec.challenges:
        try:
            budgets[name] = parse_duration(spec.budget) if spec.budget else load_challenge(name).preset(
                spec.preset).budget_s
        except ChallengeError as err:
            raise CrewError(err.message, err.hint) from err
    return budgets


def _executor(kind: str, parallel: int, root: Path, budgets: dict[str, float], partition: str | None, gpus: int,
              cpus: int, mem_gb: float | None, margin: float, max_parallel: int):
    from crew.bench.executors import LocalExecutor
    from crew.bench.slurm import SlurmExecutor, SlurmOptions

    if kind == "local":
        if parallel < 1:
            raise CrewError(f"--parallel must be at least 1, not {parallel}", "give e.g. --parallel 2")
        return LocalExecutor(parallel, gpus=_visible_gpus()).run
    if kind == "slurm":
        options = SlurmOptions(partition, gpus, cpus, mem_gb, margin, max_parallel)
        options.validate()
        return SlurmExecutor(options, root / "slurm", budgets).run
    raise CrewError(f"unknown executor '{kind}'", "use --executor local or --executor slurm")


def _visible_gpus() -> list[str]:
    """The GPUs a run may be given, as CUDA_VISIBLE_DEVICES names them (respecting an existing restriction)."""
    import os

    from crew.run.devices import gpu_count

    count = gpu_count()
    visible = [g for g in os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",") if g.strip()]
    return visible[:count] if visible else [str(i) for i in range(count)]
