"""The crew's jobs as SLURM batch jobs (toolkit.slurm_jobs) on the real one-node cluster: two at once, a third
pending in the queue with its position, one stopped at its deadline after saving a checkpoint, another manager
(a resumed run) re-attaching to the job still running without starting it again, and stop as scancel."""

from __future__ import annotations

import json
import os
import re
import subprocess
import time

import pytest

from toolkit import jobrecord as jr
from toolkit import slurm
from toolkit.slurm_jobs import SlurmJobManager

# On one worker, one at a time: the tests share the one-node cluster, and none may queue behind another's jobs.
pytestmark = [pytest.mark.slurm, pytest.mark.xdist_group("slurm")]

# Trains "forever"; on SIGTERM it saves a checkpoint and exits, as the crew's training recipes do.
TRAIN = ("trap 'echo saving; echo step > ckpt-$JOB.txt; exit 0' TERM; echo started; "
         "for i in $(seq 3000); do echo progress: $i/3000; sleep 0.2; done")


def _until(predicate, what: str, timeout: float = 300.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if value := predicate():
            return value
        time.sleep(0.3)
    raise AssertionError(f"timed out waiting for {what}")


@pytest.fixture
def cancel_leftovers(tmp_path):
    """Whatever happens, no job of this test stays on the cluster."""
    yield
    for runner in (tmp_path / "jobs").glob("*/runner.json"):
        subprocess.run(["scancel", json.loads(runner.read_text())["slurm_job_id"]], capture_output=True)


def _manager(tmp_path, partition: str) -> SlurmJobManager:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_")}
    # No --max-jobs bound here: the test fills every CPU of the node, however many it has.
    return SlurmJobManager(tmp_path / "jobs", cwd=tmp_path, env=env, grace_s=5.0, partition=partition,
                           max_jobs=10_000)


def test_jobs_run_on_slurm_pend_stop_at_deadline_and_reattach(tmp_path, slurm_cluster, cancel_leftovers):
    cpus = int(subprocess.run(["sinfo", "-h", "-o", "%c"], capture_output=True, text=True).stdout.split()[0])
    jobs = _manager(tmp_path, slurm_cluster)
    a = jobs.start(TRAIN.replace("$JOB", "a"), "train-a", deadline=time.time() + 40, gpus=1)
    b = jobs.start(TRAIN.replace("$JOB", "b"), "train-b", deadline=None, gpus=1)
    ids = {jobs.slurm_job_id(a.record.id), jobs.slurm_job_id(b.record.id)}
    _until(lambda: [e.state for e in slurm.queue(ids).values()] == ["RUNNING", "RUNNING"]
           and all(jobs.status(s.record.id).state == jr.RUNNING for s in (a, b)), "both jobs to run at once")

    # The node's other CPUs taken, one more job waits in the queue: pending (its time counting), with its position.
    extra = [jobs.start("sleep 300", f"fill-{i}", deadline=None) for i in range(cpus - 2)]
    queued = jobs.start("echo never", "queued", deadline=None, gpus=1)
    status = _until(lambda: (s := jobs.status(queued.record.id)).state == jr.PENDING and s, "the job to pend")
    assert status.running and re.search(r"pending in queue \(SLURM job \d+: \w+, position \d+\)", status.last_line)
    assert "pending · pending in queue (SLURM job" in status.summary_line()  # the line of the supervisor's job table
    assert jobs.stop(queued.record.id).state == jr.STOPPED  # scancel of a queued job
    for job in extra:
        jobs.stop(job.record.id)

    # Job a reaches its deadline (SLURM's limit a minute later): TERM, its checkpoint saved, stopped.
    ended = _until(lambda: (s := jobs.status(a.record.id)).state in jr.FINISHED and s, "job a's deadline", 200)
    assert ended.state == jr.STOPPED and ended.record.end_reason == "deadline reached", str(ended)
    assert (tmp_path / "ckpt-a.txt").read_text() == "step\n"

    # A resumed run builds a new manager on the same folder: it finds b still running, as the same SLURM job.
    again = _manager(tmp_path, slurm_cluster)
    assert again.ids() == jobs.ids() and again.status(b.record.id).state == jr.RUNNING
    assert again.slurm_job_id(b.record.id) == jobs.slurm_job_id(b.record.id)
    names = subprocess.run(["squeue", "-h", "-o", "%j"], capture_output=True, text=True).stdout.split()
    assert names.count(f"crew-{b.record.id}") == 1  # not started twice
    stopped = again.stop(b.record.id)
    assert stopped.state == jr.STOPPED and stopped.record.end_reason == "stopped on request"
    assert (tmp_path / "ckpt-b.txt").read_text() == "step\n"
    assert jobs.slurm_job_id(b.record.id) not in slurm.queue()
