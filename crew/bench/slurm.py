"""The slurm executor: one sbatch job per cell, time = the run's budget plus a margin, requeued on preemption or
a node failure (the requeued job resumes the run). Every option is checked before anything is submitted."""

from __future__ import annotations

import fcntl
import json
import logging
import math
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from checkpoints import atomic_write_json
from crew.bench.executors import PACKAGE_ROOT, _signals_interrupt, child_path
from crew.bench.plan import FINISHED, Cell
from crew.errors import CrewError
from toolkit import slurm

log = logging.getLogger(__name__)
POLL_S = 2.0
# squeue's pending reasons that no wait resolves: the request exceeds what the partition's nodes or limits allow.
NEVER_RUNS = frozenset({"PartitionConfig", "PartitionNodeLimit", "PartitionTimeLimit", "BadConstraints"})

PARTITION = re.compile(r"^[A-Za-z0-9_.-]+$")


@dataclass(frozen=True)
class SlurmOptions:
    partition: str | None = None
    gpus: int = 1
    cpus: int = 8
    mem_gb: float | None = None
    margin_min: float = 15.0  # on top of the run's budget: startup, data preparation, the final report
    max_parallel: int = 32

    def validate(self) -> None:
        """Raise a CrewError naming the first bad option (nothing has been submitted yet)."""
        if self.partition is not None and not PARTITION.match(self.partition):
            raise CrewError(f"'{self.partition}' is not a SLURM partition name",
                            "give a name as `sinfo -s` lists it, e.g. --partition gpu")
        for name, value, least in (("--gpus-per-run", self.gpus, 0), ("--cpus-per-run", self.cpus, 1),
                                   ("--max-parallel", self.max_parallel, 1)):
            if value < least:
                raise CrewError(f"{name} must be at least {least}, not {value}", f"give {name} {max(least, 1)}")
        if self.mem_gb is not None and self.mem_gb <= 0:
            raise CrewError(f"--mem-gb must be positive, not {self.mem_gb:g}", "give e.g. --mem-gb 64, or leave it out")
        if self.margin_min < 0:
            raise CrewError(f"--time-margin must not be negative ({self.margin_min:g} min)",
                            "give the minutes to add to each run's budget, e.g. --time-margin 15")
        self._check_scheduler()

    def _check_scheduler(self) -> None:
        if shutil.which("sbatch") is None:
            raise CrewError("--executor slurm needs SLURM's sbatch, and it is not on PATH",
                            "run the bench on a SLURM login node, or use --executor local")
        if self.partition and shutil.which("sinfo"):
            listed = subprocess.run(["sinfo", "-h", "-o", "%P"], capture_output=True, text=True, timeout=60).stdout
            known = {name.strip().rstrip("*") for name in listed.split()}
            if known and self.partition not in known:
                raise CrewError(f"SLURM has no partition '{self.partition}'",
                                f"choose one of: {', '.join(sorted(known))}")

    def timeout_min(self, budget_s: float) -> int:
        return math.ceil(budget_s / 60 + self.margin_min)


class SlurmExecutor:
    """One sbatch job per cell (`python -m crew.bench.slurm_cell`, which starts or resumes the cell's run when the
    job starts, so a requeued job resumes). Each cell's job id is kept in the bench's slurm/ folder, and cells are
    submitted under a lock: a second bench on the same folder waits on the first one's jobs, never submits its own."""

    def __init__(self, options: SlurmOptions, folder: Path, budget_s: dict[str, float]) -> None:
        self.options, self.folder, self.budget_s = options, Path(folder), budget_s

    def run(self, cells: list[Cell]) -> bool:
        """Submit the cells (at most --max-parallel in the queue at once) and wait until every job has left the
        queue; False when a cell did not finish (interrupted: run the bench again) or we were interrupted (the
        jobs go on; the next bench waits on them)."""
        todo = list(cells)
        mine: dict[str, Cell] = {}
        try:
            with _signals_interrupt():
                while todo or mine:
                    live = slurm.queue(mine)
                    _refuse_unrunnable(live, mine)
                    mine = {job: cell for job, cell in mine.items() if job in live}
                    while todo and len(mine) < self.options.max_parallel:
                        cell = todo.pop(0)
                        job = self.attach_or_submit(cell)
                        if job:
                            mine[job] = cell
                    if mine:
                        time.sleep(POLL_S)
        except KeyboardInterrupt:
            return False
        return all(cell.state() == FINISHED for cell in cells)

    def attach_or_submit(self, cell: Cell) -> str | None:
        """The SLURM job that runs the cell: the one a bench already submitted if it is still queued, else a new
        one; None when the cell has finished meanwhile."""
        self.folder.mkdir(parents=True, exist_ok=True)
        with open(self.folder / "submit.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            recorded = cell_job(self.folder, cell)
            if recorded and recorded in slurm.queue([recorded]):
                log.info("bench: %s is already SLURM job %s; waiting on it", cell.name, recorded)
                return recorded
            if cell.state() == FINISHED:
                return None
            try:
                job = slurm.submit(self._script(cell), self._sbatch_options(cell), env={**os.environ, **child_path()})
            except slurm.SlurmError as err:  # e.g. more CPUs or GPUs than a node of the partition has
                raise CrewError(f"SLURM refused {cell.name}: {err.message}", "change the --*-per-run options or "
                                "--partition to what `sinfo -o '%P %c %m %G'` lists; then run the bench again") from err
            atomic_write_json(self.folder / f"{cell.name}.json", {"job_id": job, "submitted": time.time()})
            log.info("bench: %s submitted as SLURM job %s", cell.name, job)
            return job

    def _script(self, cell: Cell) -> str:
        argv = [sys.executable, "-m", "crew.bench.slurm_cell", str(cell.root), cell.name]
        return slurm.batch_script(argv, Path(PACKAGE_ROOT))

    def _sbatch_options(self, cell: Cell) -> list[str]:
        o = self.options
        cell.log.parent.mkdir(parents=True, exist_ok=True)
        options = [f"--job-name=crew-bench-{cell.name}"[:120], f"--time={o.timeout_min(self.budget_s[cell.challenge])}",
                   "--nodes=1", "--ntasks=1", f"--cpus-per-task={o.cpus}", "--requeue",
                   f"--output={cell.log}", "--open-mode=append"]
        if o.gpus:
            options.append(f"--gres=gpu:{o.gpus}")
        if o.mem_gb:
            options.append(f"--mem={math.ceil(o.mem_gb * 1024)}M")
        if o.partition:
            options.append(f"--partition={o.partition}")
        return options


def _refuse_unrunnable(live: dict[str, slurm.QueueEntry], mine: dict[str, Cell]) -> None:
    """A job that waits for what the partition can never give (more CPUs, memory or time than its nodes or
    limits have) would wait forever: cancel the bench's jobs that wait so, and say why."""
    stuck = {job: entry for job, entry in live.items() if entry.pending and entry.reason in NEVER_RUNS}
    if stuck:
        for job in stuck:
            slurm.cancel(job)
        job, entry = next(iter(stuck.items()))
        raise CrewError(f"SLURM cannot run {mine[job].name} (job {job}: {entry.reason}); its jobs were cancelled",
                        "ask for what a node of the partition has (`sinfo -o '%P %c %m %G %l'`): --cpus-per-run, "
                        "--mem-gb, --gpus-per-run, or a shorter --budget/--time-margin; then run the bench again")


def cell_job(folder: Path, cell: Cell) -> str | None:
    """The SLURM job id last submitted for the cell, if any."""
    try:
        return str(json.loads((folder / f"{cell.name}.json").read_text())["job_id"])
    except (OSError, ValueError, KeyError):
        return None
