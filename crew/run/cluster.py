"""Where the engineer's jobs run (`run --jobs local|slurm [--partition P]`), and the cluster checks that
`run --jobs slurm`, `bench --executor slurm` and `doctor` make before anything is submitted."""

from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path

from crew.errors import CrewError
from toolkit import slurm

JOB_BACKENDS = ("local", "slurm")
DEFAULT_MAX_JOBS = 4  # --jobs slurm: the run's jobs on the cluster at once, unless --max-jobs says otherwise


def check_jobs(jobs: str, partition: str | None, max_jobs: int | None = None) -> int | None:
    """Stop (exit 2) on an unknown --jobs, a SLURM option without --jobs slurm, a --max-jobs below 1, or --jobs
    slurm where SLURM cannot take the jobs. Returns the run's --max-jobs (None for local jobs)."""
    if jobs not in JOB_BACKENDS:
        raise CrewError(f"unknown --jobs '{jobs}'", "use --jobs local (this machine) or --jobs slurm")
    for option, value in (("--partition", partition), ("--max-jobs", max_jobs)):
        if value is not None and jobs != "slurm":
            hint = " (local jobs are bounded by this machine's GPUs)" if option == "--max-jobs" else ""
            raise CrewError(f"{option} is for --jobs slurm{hint}", f"add --jobs slurm, or leave {option} out")
    if max_jobs is not None and max_jobs < 1:
        raise CrewError(f"--max-jobs {max_jobs}: a run needs at least one job at once", "use --max-jobs 1 or more")
    if jobs == "slurm":
        problems = [line for ok, line in cluster_checks(partition) if not ok]
        if problems:
            raise CrewError(f"--jobs slurm: {problems[0]}", "run on a SLURM login node with the partition "
                            "`sinfo -s` lists, or use --jobs local")
        return max_jobs or DEFAULT_MAX_JOBS
    return None


def cluster_checks(partition: str | None, shared: Path | None = None) -> list[tuple[bool, str]]:
    """(ok, line) for: the SLURM clients, sinfo answering, the partition, its GPUs per node, and (with `shared`)
    that a compute node sees that folder, as a job started there would."""
    if not slurm.available():
        return [(False, "SLURM's sbatch, squeue and scancel are not on PATH")]
    try:
        found = slurm.partitions()
    except slurm.SlurmError as err:
        return [(False, f"sinfo does not answer: {err.message}")]
    checks = [(True, f"sinfo answers: partitions {', '.join(sorted(found))}")]
    name = partition or next((p for p in found if p), None)
    if name not in found:
        return [*checks, (False, f"SLURM has no partition '{name}' (there are: {', '.join(sorted(found))})")]
    info = found[name]
    checks.append((info["state"] == "up", f"partition {name}: {info['nodes']} node(s), {info['state']}"))
    checks.append((True, f"partition {name}: {slurm.gpus_per_node(info['gres'])} GPU(s) per node ({info['gres']})"))
    if shared is not None:
        checks.append(_shared_visible(name, shared))
    return checks


def _shared_visible(partition: str, shared: Path) -> tuple[bool, str]:
    """Write a token into `shared` and read it back in a short job on a compute node of the partition."""
    shared.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile("w", dir=shared, prefix=".crew-doctor-", suffix=".txt") as token:
        token.write("seen\n")
        token.flush()
        try:
            proc = subprocess.run(["srun", f"--partition={partition}", "--ntasks=1", "--time=1", "--quiet",
                                   "cat", token.name], capture_output=True, text=True, timeout=300)
        except subprocess.TimeoutExpired:
            return False, f"a 1-minute job on {partition} did not run within 5 minutes (the queue is full?)"
    if proc.returncode == 0 and proc.stdout.strip() == "seen":
        return True, f"{shared} is visible from a compute node of {partition}"
    return False, (f"{shared} is not visible from a compute node of {partition}: "
                   f"{(proc.stderr or proc.stdout).strip()[:200]}; put the run directory on a shared file system")


def doctor_checks(partition: str | None, shared: Path) -> list:
    """cluster_checks as doctor's rows."""
    from crew.cli.doctor_checks import FAIL, OK, Check

    fix = "run on a SLURM login node (`sinfo -s` lists the partitions), or use --jobs local / --executor local"
    return [Check("slurm", OK if ok else FAIL, line, "" if ok else fix)
            for ok, line in cluster_checks(partition, shared)]
