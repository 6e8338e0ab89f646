"""The detached process that owns one background job: starts it, enforces its deadline, records its end.

Started by toolkit.jobs as `python -I -c <boot> JOB_DIR`, in a session of its own so it outlives the
process that started it. The command gets a session (process group) of its own too, so stopping the
command's group never hits the runner, which stays to write the exit status.
"""

from __future__ import annotations

import logging
import signal
import subprocess
import sys
import time
from pathlib import Path

from toolkit import jobrecord as jr
from toolkit.procs import group_members, kill_process_group, process_start_time

log = logging.getLogger("toolkit.jobrunner")

# Wake up now and then even without a deadline, so a long wait never depends on one timer.
_MAX_WAIT_S = 60.0


def grace_before(deadline: float | None, floor_s: float = 0.1) -> float:
    """The grace left until `deadline` (at least `floor_s`, so SIGTERM always gets a moment)."""
    return floor_s if deadline is None else max(deadline - time.time(), floor_s)


def run(job_dir: Path) -> int:
    record = jr.JobRecord.load(job_dir)
    with open(job_dir / jr.LOG, "ab") as out:
        try:
            proc = subprocess.Popen(
                record.argv or ["bash", "-c", record.command],
                cwd=record.cwd,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        except OSError as err:
            record.state, record.end_reason, record.ended = jr.FAILED, f"could not start: {err}", time.time()
            record.save(job_dir)
            return 1
    record.pid = proc.pid
    record.start_time = process_start_time(proc.pid, allow_zombie=True)
    record.started = time.time()
    record.state = jr.RUNNING
    record.save(job_dir)
    log.info("job %s started as pid %d", record.id, proc.pid)

    hit_deadline = False
    signalled = []

    def _on_term(signum, frame) -> None:  # SLURM: its --signal=B:TERM before the time limit, or stop_job's scancel
        if not signalled:
            signalled.append(signum)
            kill_process_group(proc.pid, record.grace_s)

    signal.signal(signal.SIGTERM, _on_term)
    # SIGTERM goes out a grace period early, so that even a job that needs its whole grace to save a
    # checkpoint is gone by the deadline itself.
    term_at = None if record.deadline is None else record.deadline - record.grace_s
    while True:
        wait = _MAX_WAIT_S if term_at is None else min(_MAX_WAIT_S, term_at - time.time())
        try:
            proc.wait(timeout=max(wait, 0.0))
            break
        except subprocess.TimeoutExpired:
            if term_at is not None and time.time() >= term_at:
                hit_deadline = True
                log.info("job %s reached its deadline; stopping it", record.id)
                kill_process_group(proc.pid, grace_before(record.deadline))
                proc.wait()
                break
    if group_members(proc.pid):  # processes the command left behind in its group
        kill_process_group(proc.pid, record.grace_s)

    record.ended = time.time()
    record.exit_code = proc.returncode
    if hit_deadline:
        record.state, record.end_reason = jr.STOPPED, "deadline reached"
    elif (job_dir / jr.STOP_MARKER).exists():
        record.state, record.end_reason = jr.STOPPED, "stopped on request"
    elif signalled:
        record.state, record.end_reason = jr.STOPPED, "deadline reached (SLURM's signal before its time limit)"
    elif proc.returncode < 0:
        record.state, record.end_reason = jr.EXITED, f"killed by signal {-proc.returncode}"
    else:
        record.state, record.end_reason = jr.EXITED, f"exit code {proc.returncode}"
    record.save(job_dir)
    return 0


def main() -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    return run(Path(sys.argv[1]))


if __name__ == "__main__":
    sys.exit(main())
