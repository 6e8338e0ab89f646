"""A scripted crew through the protocol-exact API server (our Anthropic client and the official SDK over HTTP),
its jobs on the real one-node SLURM cluster with `run --jobs slurm`, end to end: two jobs run at once as SLURM
jobs, a third is refused at --max-jobs, the engineer waits on one; the run process is killed with SIGKILL and
`resume` (against the same server) re-attaches to the job still running without starting it twice; that job is
stopped by wrap-up (its time ends where wrap-up starts; TERM the grace before, so it saves its checkpoint), not
by the run's end; the run submits."""

from __future__ import annotations

import json
import signal
import subprocess
import time

import pytest

from crew.run.clock import Clock
from tests.crew.helpers import API_MODEL, call, kinds
from tests.crew.test_resume_and_budget import CLI, cli_env

# On one worker, one at a time: the tests share the one-node cluster, and none may queue behind another's jobs.
pytestmark = [pytest.mark.slurm, pytest.mark.xdist_group("slurm")]

# Wrap-up starts 52.5 s before the end (the toy's 30 s scoring estimate x 1.25, and the 15 s final phase): at 82.5 s.
# The train job gets TERM its grace (about 20 s) before that: the engineer, done at about 20 s on a quiet machine,
# has three times that to report while the job still runs.
BUDGET_S = 135
# Trains until stopped (no progress lines, so no tenth of progress wakes the supervisor's wait); on SIGTERM it saves
# a checkpoint and exits, as the crew's training recipes do.
TRAIN = "trap 'echo saving; echo step > ckpt.txt; exit 0' TERM; echo started; while true; do sleep 0.2; done"
SHORT = "for i in $(seq 15); do echo progress: $i/15; sleep 1; done; echo 0.75 > answer.txt"
WAIT_SHORT = call("wait_for_job", job_id="002-short", until="exit", max_minutes=5)
ENGINEER = [call("start_job", command=TRAIN, name="train"),
            call("start_job", command=SHORT, name="short"),
            call("start_job", command="sleep 60", name="third"),  # refused: --max-jobs 2
            WAIT_SHORT,  # killed in this wait
            WAIT_SHORT,  # the resumed run asks the model again for the turn the kill cut: it waits again
            call("evaluate", artifact_path="answer.txt"),
            call("report", changed="answer.txt", commands="train and short jobs", evaluations=["eval-0001"],
                 learned="0.75 scores", proposes="submit eval-0001")]
SUPERVISOR = [call("delegate", role="engineer", subtask="Start train and short, wait on short, evaluate.", minutes=2),
              call("wait", minutes=5),  # returns when train ends (its time ends at wrap-up) or wrap-up starts
              call("submit", evaluation_id="eval-0001", rationale="verified")]


def _queue() -> dict[str, tuple[str, str]]:
    """SLURM job name -> (job id, state), from squeue."""
    lines = subprocess.run(["squeue", "-h", "-o", "%j|%i|%T"], capture_output=True, text=True).stdout.splitlines()
    return {name: (job, state) for name, job, state in (line.split("|") for line in lines)}


def _slurm_ids(jobs_dir) -> dict[str, str]:
    return {p.parent.name: json.loads(p.read_text())["slurm_job_id"] for p in jobs_dir.glob("*/runner.json")}


@pytest.fixture
def cancel_leftovers(tmp_path):
    """Whatever happens, no job of this test stays on the cluster."""
    yield
    for job in _slurm_ids(tmp_path / "run" / "jobs").values():
        subprocess.run(["scancel", job], capture_output=True)


def test_a_crews_jobs_run_on_slurm_survive_a_kill_and_end_at_wrap_up(tmp_path, api_server, slurm_cluster,
                                                                       cancel_leftovers):
    server = api_server({"supervisor": SUPERVISOR, "engineer": ENGINEER})  # the CLI inherits its URL and key
    env, run_dir, log = cli_env(tmp_path), tmp_path / "run", tmp_path / "run.log"
    with log.open("wb") as output:  # a file, not a pipe nobody reads while the run goes on
        proc = subprocess.Popen([CLI, "run", "toy", "--preset", "smoke", "--model", API_MODEL, "--budget",
                                 f"{BUDGET_S}s", "--run-dir", str(run_dir), "--jobs", "slurm", "--partition",
                                 slurm_cluster, "--max-jobs", "2"], env=env, stdout=output, stderr=subprocess.STDOUT)

    # Both jobs RUNNING on the cluster at once, while the engineer waits on the short one: then SIGKILL.
    names = ("crew-001-train", "crew-002-short")
    deadline = time.monotonic() + 300
    while proc.poll() is None and time.monotonic() < deadline:
        queue = _queue()
        if len(server.requests("engineer")) >= 4 and all(queue.get(n, ("", ""))[1] == "RUNNING" for n in names):
            break
        time.sleep(0.1)
    else:
        proc.kill()
        raise AssertionError(f"the two jobs never ran at once: {log.read_text()[-3000:]}")
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    before = _slurm_ids(run_dir / "jobs")
    assert set(before) == {"001-train", "002-short"}  # the third was refused, never submitted
    assert _queue()["crew-001-train"] == (before["001-train"], "RUNNING")  # the job outlives the run process

    resumed = subprocess.run([CLI, "resume", str(run_dir)], env=env, capture_output=True, text=True, timeout=400)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    result = json.loads((run_dir / "result.json").read_text())
    assert result["status"] == "submitted" and result["score"] == 0.75 and result["resumes"] == 1
    config = (run_dir / "run.toml").read_text()
    assert 'jobs = "slurm"' in config and "jobs_max = 2" in config and f'model = "{API_MODEL}"' in config
    # The resumed run went on against the server: every scripted answer was asked for, none twice.
    assert len(server.requests("engineer")) == len(ENGINEER) and len(server.requests("supervisor")) == len(SUPERVISOR)

    # Re-attached: the same SLURM job per job across the kill, none started twice.
    assert _slurm_ids(run_dir / "jobs") == before
    events = [json.loads(line) for line in (run_dir / "trace.jsonl").read_text().splitlines()]
    [refused] = [r for e in kinds(events, "tool_results") for r in e["results"] if r["name"] == "start_job"
                 and r["content"].startswith("Not started")]
    assert "this run already holds 2 SLURM jobs (001-train, 002-short)" in refused["content"]
    assert "(--max-jobs 2)" in refused["content"]
    waits = [r["content"] for e in kinds(events, "tool_results") for r in e["results"] if r["name"] == "wait_for_job"]
    assert len(waits) == 1 and "15/15" in waits[0] and "EXITED" in waits[0]  # the resumed wait, to the exit
    after_resume = server.requests("supervisor")[1].last_user_text()  # its first turn after the resume
    assert "001-train · running" in after_resume  # the supervisor sees the job still running on the cluster

    # The train job was stopped where wrap-up starts (its deadline), after saving its checkpoint: not at the end.
    train = json.loads((run_dir / "jobs" / "001-train" / "job.json").read_text())
    started_at = float(next(line.split("=")[1] for line in config.splitlines() if line.startswith("started_at")))
    wrapup_at = started_at + BUDGET_S - Clock.start(BUDGET_S, scoring_s=30.0).wrapup_s
    assert abs(train["deadline"] - wrapup_at) < 1.0
    assert train["state"] == "stopped" and train["end_reason"] == "deadline reached"
    assert train["ended"] <= wrapup_at and (run_dir / "workspace" / "ckpt.txt").read_text() == "step\n"
    [usage] = kinds(events, "crew_usage")
    assert usage["jobs_stopped"] == []  # nothing was left running for the run's end to stop
    short = json.loads((run_dir / "jobs" / "002-short" / "job.json").read_text())
    assert short["state"] == "exited" and short["exit_code"] == 0
    assert any(a.endswith("bwrap") for a in train["argv"])  # the same sandbox, on the node
    assert not {before["001-train"], before["002-short"]} & {job for job, _ in _queue().values()}
