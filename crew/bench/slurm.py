"""The slurm executor: one submitit job per cell, time = the run's budget plus a margin, requeued on preemption
(the requeued job resumes the run). Every option is checked before anything is submitted."""

from __future__ import annotations

import math
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from crew.bench.executors import CellRunner, child_path
from crew.bench.plan import Cell, can_resume
from crew.errors import CrewError

PARTITION = re.compile(r"^[A-Za-z0-9_.-]+$")
CLUSTERS = ("slurm", "local", "debug")  # submitit's; local and debug run the same path without a scheduler


@dataclass(frozen=True)
class SlurmOptions:
    partition: str | None = None
    gpus: int = 1
    cpus: int = 8
    mem_gb: float | None = None
    margin_min: float = 15.0  # on top of the run's budget: startup, data preparation, the final report
    max_parallel: int = 32
    cluster: str = "slurm"

    def validate(self) -> None:
        """Raise a CrewError naming the first bad option (nothing has been submitted yet)."""
        if self.cluster not in CLUSTERS:
            raise CrewError(f"unknown submitit cluster '{self.cluster}'", f"use one of: {', '.join(CLUSTERS)}")
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
        if self.cluster == "slurm":
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
    def __init__(self, options: SlurmOptions, folder: Path, budget_s: dict[str, float]) -> None:
        self.options, self.folder, self.budget_s = options, Path(folder), budget_s

    def run(self, cells: list[Cell]) -> bool:
        """Submit every cell, wait for them all; False when a job did not end cleanly (see its submitit log)."""
        import submitit

        if not cells:
            return True
        executor = submitit.AutoExecutor(folder=self.folder / "%j", cluster=self.options.cluster)
        extra: dict = {"mem_gb": self.options.mem_gb} if self.options.mem_gb else {}
        if self.options.partition:
            extra["slurm_partition"] = self.options.partition
        executor.update_parameters(
            name="research-crew-bench", timeout_min=max(self.options.timeout_min(b) for b in self.budget_s.values()),
            gpus_per_node=self.options.gpus, cpus_per_task=self.options.cpus, nodes=1, tasks_per_node=1,
            slurm_array_parallelism=self.options.max_parallel,
            slurm_additional_parameters={"requeue": True}, **extra)
        resume = can_resume()
        runners = [CellRunner(cell, resume, child_path()) for cell in cells]
        with executor.batch():
            jobs = [executor.submit(runner) for runner in runners]
        ok = True
        for job in jobs:
            try:
                job.result()
            except Exception as err:  # submitit raises the job's failure here; the cell's result says more
                ok = False
                (self.folder / "failures.log").open("a").write(f"{job.job_id}: {err}\n")
        return ok
