"""SLURM's command-line clients (sbatch, squeue, scancel, sinfo) for bench cells and the crew's jobs.

The scheduler's view comes from squeue alone (pending with its reason and queue position, running, completing);
a job squeue no longer lists has ended, and how it ended is in the job's own files. So nothing here needs
SLURM's accounting database (sacct), which many clusters lag on and a one-node test cluster does not run.
"""

from __future__ import annotations

import logging
import shutil
import subprocess
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from toolkit.errors import ToolkitError

log = logging.getLogger(__name__)
_TIMEOUT_S = 60.0
# Every state squeue can list while the job still holds or waits for resources.
PENDING_STATES = frozenset({"PENDING", "REQUEUED", "REQUEUE_HOLD", "REQUEUE_FED", "CONFIGURING", "RESIZING",
                            "SUSPENDED", "STOPPED"})


class SlurmError(ToolkitError):
    """A SLURM client failed (not installed, the controller unreachable, a rejected submission)."""


@dataclass(frozen=True)
class QueueEntry:
    job_id: str
    state: str  # squeue's: PENDING, RUNNING, COMPLETING, ...
    reason: str  # why it waits (Resources, Priority, JobHeldUser, BeginTime, ...), "None" when running
    position: int | None  # pending: 1 = next to start among the pending jobs of its partition
    node: str

    @property
    def pending(self) -> bool:
        return self.state in PENDING_STATES

    def describe(self) -> str:
        if self.pending:
            where = f", position {self.position}" if self.position else ""
            return f"pending in queue (SLURM job {self.job_id}: {self.reason}{where})"
        return f"{self.state.lower()} (SLURM job {self.job_id} on {self.node})"


def available() -> bool:
    return all(shutil.which(tool) for tool in ("sbatch", "squeue", "scancel"))


def _run(argv: list[str], stdin: str | None = None, env: dict[str, str] | None = None) -> str:
    if shutil.which(argv[0]) is None:
        raise SlurmError(f"SLURM's {argv[0]} is not on PATH", "run this on a SLURM login node, or use local jobs")
    try:
        proc = subprocess.run(argv, input=stdin, capture_output=True, text=True, timeout=_TIMEOUT_S, env=env)
    except subprocess.TimeoutExpired as err:
        raise SlurmError(f"{argv[0]} did not answer in {_TIMEOUT_S:.0f} s", "is slurmctld up? try `sinfo`") from err
    if proc.returncode != 0:
        raise SlurmError(f"{' '.join(argv[:2])} failed: {(proc.stderr or proc.stdout).strip()[:500]}",
                         "check the options and the cluster (`sinfo`, `squeue`)")
    return proc.stdout


def submit(script: str, options: list[str], env: dict[str, str] | None = None) -> str:
    """Submit a batch script (its text, on stdin) with sbatch options; the job gets `env` (default: ours).
    Returns the job id."""
    out = _run(["sbatch", "--parsable", "--export=ALL", *options], stdin=script, env=env)
    job_id = out.strip().split(";")[0]
    if not job_id.isdigit():
        raise SlurmError(f"sbatch printed no job id: {out.strip()[:200]!r}", "check the cluster's sbatch")
    log.info("slurm: submitted job %s", job_id)
    return job_id


def queue(job_ids: Iterable[str] | None = None) -> dict[str, QueueEntry]:
    """The jobs squeue lists (all of them, or those of `job_ids`), by id; an ended job is absent."""
    wanted = None if job_ids is None else set(job_ids)
    if wanted is not None and not wanted:
        return {}
    lines = _run(["squeue", "-h", "--sort=P,-p,i", "-o", "%i|%T|%r|%P|%N"]).splitlines()
    entries: dict[str, QueueEntry] = {}
    waiting: dict[str, int] = {}  # partition -> pending jobs seen so far (squeue sorts by priority)
    for line in lines:
        parts = line.split("|")
        if len(parts) != 5:
            continue
        job_id, state, reason, partition, node = parts
        position = None
        if state in PENDING_STATES:
            waiting[partition] = position = waiting.get(partition, 0) + 1
        if wanted is None or job_id in wanted:
            entries[job_id] = QueueEntry(job_id, state, reason, position, node)
    return entries


def cancel(job_id: str, signal: str | None = None, batch_only: bool = False) -> None:
    """scancel the job; with `signal`, only signal it (its batch shell alone with `batch_only`, else every step)."""
    flags = [f"--signal={signal}", "--batch" if batch_only else "--full"] if signal else []
    _run(["scancel", *flags, job_id])


def partitions() -> dict[str, dict[str, str]]:
    """Partition -> {"nodes", "gres", "state"} from sinfo."""
    found: dict[str, dict[str, str]] = {}
    for line in _run(["sinfo", "-h", "-o", "%P|%D|%G|%a"]).splitlines():
        name, nodes, gres, state = (line.split("|") + ["", "", "", ""])[:4]
        found[name.rstrip("*")] = {"nodes": nodes, "gres": gres, "state": state}
    return found


def gpus_per_node(gres: str) -> int:
    """The GPUs in sinfo's GRES column ("gpu:2", "gpu:a100:4(S:0-1)", "(null)")."""
    total = 0
    for item in gres.split(","):
        fields = item.split("(")[0].split(":")
        if fields[0] == "gpu" and fields[-1].isdigit():
            total = max(total, int(fields[-1]))
    return total


def batch_script(argv: list[str], cwd: Path, step: bool = True) -> str:
    """A batch script that runs `argv` in `cwd`, as a job step (srun) so that `scancel --signal` and the time
    limit's signal reach it, exiting with its exit code."""
    import shlex

    command = " ".join(shlex.quote(a) for a in argv)
    run = f"exec srun --ntasks=1 --kill-on-bad-exit=1 {command}" if step else f"exec {command}"
    return f"#!/bin/bash\ncd {shlex.quote(str(cwd))} || exit 1\n{run}\n"
