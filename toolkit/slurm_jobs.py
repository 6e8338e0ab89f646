"""The crew's jobs as SLURM batch jobs (`research-crew run --jobs slurm`).

Each job is the same runner as a local job (toolkit.jobrunner: the sandboxed command, its deadline, its exit
status in job.json), started on a compute node by sbatch instead of as a local process. So the job directory
must be on a path the compute nodes see (the run directory, on a shared file system). SLURM adds:
- GPUs as `--gres=gpu:N`: the scheduler allocates them, so a job waits in the queue instead of failing when they
  are busy: the slot is a SLURM allocation, not a GPU of this machine. `max_jobs` (`run --max-jobs`) bounds how
  many the run holds at once, queued or running, whichever engineer started them;
- `--time` a few minutes past the job's deadline (the start of wrap-up) and `--signal=B:TERM@…` after the
  deadline: the runner stops the command at the deadline as for a local job (TERM the grace before it, so that
  training saves its checkpoint); SLURM's signal, which the runner passes on, and its limit are backstops;
- the queue: a pending job is `pending` (it counts as running: its time counts), with SLURM's reason and position;
- `stop` is scancel (TERM to the runner, which stops the command within its grace);
- re-attaching is reading the SLURM job id saved in runner.json: a resumed run finds the jobs still queued.
"""

from __future__ import annotations

import json
import logging
import math
import sys
import time
from pathlib import Path

from checkpoints import atomic_write_json
from toolkit import jobrecord as jr
from toolkit import slurm
from toolkit.jobs import _RUNNER, _RUNNER_BOOT, JobManager, JobRefused, JobStatus

log = logging.getLogger(__name__)
_STOP_WAIT_S = 30.0  # beyond the grace: SLURM's own bookkeeping


class ClusterJobsFull(JobRefused):
    """The run already holds as many SLURM jobs as it may (`run --max-jobs`)."""


class SlurmJobManager(JobManager):
    start_wait_s = 5.0  # a queued job is reported as pending rather than waited for

    def __init__(self, jobs_dir: Path, *, partition: str | None = None, cpus: int = 1, max_jobs: int = 4,
                 **kwargs) -> None:
        super().__init__(jobs_dir, **kwargs)
        self.partition, self.cpus = partition, cpus
        self.max_jobs = max_jobs  # SLURM jobs of this run at once, queued or running
        self._gpus = 0

    def start(self, command: str, name: str, deadline: float | None, gpus: int | None = None) -> JobStatus:
        """Submit the job; raises ClusterJobsFull when the run already holds `max_jobs` jobs on the cluster."""
        with self._allocating:
            held = self.held_jobs()
            if len(held) >= self.max_jobs:
                raise ClusterJobsFull(f"this run already holds {len(held)} SLURM jobs ({', '.join(held)}), the most "
                                      f"at once (--max-jobs {self.max_jobs})",
                                      "wait for one to end (wait_for_job) or stop one (stop_job)")
            self._gpus = gpus or 0
            return self._start(command, name, deadline, None)

    def held_jobs(self) -> list[str]:
        """This run's jobs that are queued or running on the cluster."""
        return [job_id for job_id in self.ids() if _slurm_id(self.job_dir(job_id)) is not None
                and self._refresh(self.job_dir(job_id)).state in (jr.RUNNING, jr.STARTING)]

    def _launch(self, job_dir: Path, devices: list[str] | None) -> None:
        record = jr.JobRecord.load(job_dir)
        options = [f"--job-name=crew-{record.id}"[:120], f"--output={job_dir / 'runner.log'}", "--open-mode=append",
                   f"--chdir={job_dir}", "--nodes=1", "--ntasks=1", f"--cpus-per-task={self.cpus}"]
        options += [f"--partition={self.partition}"] if self.partition else []
        options += [f"--gres=gpu:{self._gpus}"] if self._gpus else []
        options += _time_options(record.deadline, record.grace_s)
        script = slurm.batch_script([sys.executable, "-I", "-c", _RUNNER_BOOT, str(job_dir)], job_dir, step=False)
        job = slurm.submit(script, options, env=self.env)
        atomic_write_json(job_dir / _RUNNER, {"slurm_job_id": job, "gpus": self._gpus, "partition": self.partition})

    def slurm_job_id(self, job_id: str) -> str | None:
        return _slurm_id(self.job_dir(job_id))

    def _runner_alive(self, job_dir: Path) -> bool:
        job = _slurm_id(job_dir)
        return job is not None and job in slurm.queue([job])

    def _refresh(self, job_dir: Path) -> jr.JobRecord:
        """A job SLURM no longer lists whose runner never recorded its end was lost (node failure, hard kill)."""
        record = jr.JobRecord.load(job_dir)
        if record.state in (jr.RUNNING, jr.STARTING) and not self._runner_alive(job_dir):
            record = jr.JobRecord.load(job_dir)  # the runner may have written its end just now
            if record.state in (jr.RUNNING, jr.STARTING):
                record.state, record.ended = jr.LOST, time.time()
                record.end_reason = f"SLURM job {_slurm_id(job_dir)} ended without recording an exit status"
                record.save(job_dir)
        return record

    def status(self, job_id: str) -> JobStatus:
        status = super().status(job_id)
        job = _slurm_id(self.job_dir(job_id))
        if status.state == jr.STARTING and job:
            entry = slurm.queue([job]).get(job)
            if entry is not None and entry.pending:
                status.state, status.last_line = jr.PENDING, entry.describe()
        return status

    def _stoppable(self, job_dir: Path) -> bool:
        return _slurm_id(job_dir) is not None

    def _end_runner(self, job_dir: Path, record: jr.JobRecord, grace_s: float) -> None:
        """scancel: a queued job outright; a running one TERM to its runner, which stops the command within its
        grace and records how it ended (then scancel outright, should the runner not have ended)."""
        job = _slurm_id(job_dir)
        if record.state == jr.STARTING:  # still queued (or just starting): nothing to save
            slurm.cancel(job)
        else:
            slurm.cancel(job, signal="TERM", batch_only=True)
        self._await_runner(job_dir, grace_s + _STOP_WAIT_S, poll_s=0.2)
        if self._runner_alive(job_dir):
            slurm.cancel(job)

    def running_pids(self) -> dict[int, str]:
        return {}  # the jobs' processes live on compute nodes

    def devices_line(self) -> str:
        where = f"partition {self.partition}" if self.partition else "the default partition"
        return (f"Jobs run on SLURM ({where}): ask start_job for gpus and SLURM allocates them; a job waits in the "
                f"queue (pending, its time counting) until they are free. This run may hold {self.max_jobs} jobs on "
                f"the cluster at once ({len(self.held_jobs())} now).")


def _slurm_id(job_dir: Path) -> str | None:
    try:
        return str(json.loads((job_dir / _RUNNER).read_text())["slurm_job_id"])
    except (OSError, ValueError, KeyError):
        return None


def _time_options(deadline: float | None, grace_s: float) -> list[str]:
    """SLURM's limit two to three minutes past the deadline, and its TERM to the runner a minute before the
    limit. SLURM may send that signal up to 60 s early (its documented resolution), so it never comes before the
    deadline: the runner's own timer stops the job at the deadline (TERM the grace before it, for the checkpoint)
    and SLURM's signal and limit are the backstops should the runner fail."""
    if deadline is None:
        return []
    left = max(deadline - time.time(), 1.0)
    limit_min = math.ceil((left + 120) / 60)
    before_limit = int(limit_min * 60 - left - 60)
    return [f"--time={limit_min}", f"--signal=B:TERM@{min(before_limit, 65535)}"]
