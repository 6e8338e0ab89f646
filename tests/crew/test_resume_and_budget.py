"""Resume after SIGKILL (also mid-checkpoint), and the run clock's wrap-up of a job that cannot finish."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest
import yaml

from tests.crew.helpers import ENGINEER_OK, call, kinds, run_crew
from tests.foundation.helpers import TOML, write_challenge

CLI = shutil.which("research-crew")
SLOW_ENGINEER = [call("write_file", path="notes.txt", content="start"),
                 *[call("run_bash", command=f"sleep 0.5; echo look {i} >> notes.txt", timeout_s=30) for i in range(8)],
                 call("start_job", command="sleep 1; echo 0.75 > answer.txt", name="writer"),
                 call("run_bash", command="for i in $(seq 40); do [ -s answer.txt ] && break; sleep 0.25; done",
                      timeout_s=30),
                 *ENGINEER_OK[1:]]
SUPERVISOR = [call("delegate", role="engineer", subtask="Look, run the writer job, evaluate.", minutes=2),
              call("submit", evaluation_id="eval-0001", rationale="verified")]


def cli_env(tmp_path) -> dict:
    write_challenge(tmp_path / "challenges", "toy")
    return {**os.environ, "RESEARCH_CREW_CHALLENGE_PATH": str(tmp_path / "challenges"),
            "RESEARCH_CREW_MEMORY_DIR": str(tmp_path / "memory")}


def start(tmp_path, env, script: dict, run_dir, budget="3m") -> subprocess.Popen:
    path = tmp_path / "script.yaml"
    path.write_text(yaml.safe_dump(script))
    return subprocess.Popen([CLI, "run", "toy", "--preset", "smoke", "--model", f"replay:{path}", "--budget", budget,
                             "--run-dir", str(run_dir)], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)


def kill_after_events(proc, run_dir, count: int) -> None:
    """SIGKILL the run process once its trace holds `count` events."""
    while proc.poll() is None:
        trace = run_dir / "trace.jsonl"
        if trace.exists() and trace.read_bytes().count(b"\n") >= count:
            proc.send_signal(signal.SIGKILL)
            break
        time.sleep(0.02)
    proc.wait()


def ledger(run_dir):
    return [(r["id"], r["score"], r["sha256"]) for r in
            (json.loads(p.read_text()) for p in sorted((run_dir / "evaluations").glob("eval-*.json")))]


def test_killed_runs_resume_to_the_same_ledger_and_start_no_job_twice(tmp_path):
    env = cli_env(tmp_path)
    script = {"supervisor": SUPERVISOR, "engineer": SLOW_ENGINEER}
    # What the same run gives uninterrupted (test_crew_replay runs it): one evaluation of the job's answer.
    uninterrupted = [("eval-0001", 0.75, hashlib.sha256(b"0.75\n").hexdigest())]
    run_dir = tmp_path / "killed"
    # A budget far from wrap-up even on a loaded machine: wrap-up would stop the worker and change the script order.
    proc = start(tmp_path, env, script, run_dir, budget="8m")
    for count in (6, 14, 22, 27):  # inside the looks, at the job start, while waiting, near the evaluation
        kill_after_events(proc, run_dir, count)
        proc = subprocess.Popen([CLI, "resume", str(run_dir)], env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT)
    output = proc.communicate(timeout=300)[0].decode()
    assert proc.returncode == 0, output
    result = json.loads((run_dir / "result.json").read_text())
    assert result["status"] == "submitted" and result["resumes"] >= 1
    assert ledger(run_dir) == uninterrupted
    assert [p.name for p in (run_dir / "jobs").iterdir()] == ["001-writer"]
    events = [json.loads(line) for line in (run_dir / "trace.jsonl").read_text().splitlines()]
    assert len(kinds(events, "resumed")) >= 1


def test_a_kill_during_a_checkpoint_write_still_resumes(tmp_path):
    env = cli_env(tmp_path)
    run_dir = tmp_path / "torn"
    proc = start(tmp_path, env, {"supervisor": SUPERVISOR, "engineer": SLOW_ENGINEER}, run_dir)
    kill_after_events(proc, run_dir, 10)
    state = run_dir / "state"
    # What a kill inside save_snapshot or the journal append leaves: the new snapshot's temp file, no
    # latest.json (only previous.json), and a half-written journal line.
    if (state / "latest.json").exists():  # the kill may itself have landed there (between the two renames)
        os.replace(state / "latest.json", state / "previous.json")
    (state / ".latest.json.123.tmp").write_text('{"step": 99, "lo')
    with open(state / "messages.jsonl", "a") as journal:
        journal.write('{"id": "abc", "message": {"content": "half')
    proc = subprocess.run([CLI, "resume", str(run_dir)], env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert json.loads((run_dir / "result.json").read_text())["status"] == "submitted"


def wrapup_script(wait_s: int, job_s: int) -> dict:
    job = (f"trap 'echo 0.5 > answer.txt; exit 0' TERM; for i in $(seq {job_s}); do echo progress: $i/{job_s}; "
           "sleep 1; done; echo 0.9 > answer.txt")
    return {
        "supervisor": [call("delegate", role="engineer", subtask="Start the long training job.", minutes=1),
                       call("delegate", role="engineer", subtask="Wait for the job.", minutes=wait_s / 60),
                       call("delegate", role="engineer", subtask="Evaluate answer.txt.", minutes=1),
                       call("submit", evaluation_id="eval-0001", rationale="the checkpoint saved at wrap-up")],
        "engineer": [call("start_job", command=job, name="train"),
                     call("run_bash", command="sleep 4", timeout_s=10),  # a few progress lines for the ETA
                     call("report", changed="", commands="job 001-train", evaluations=[], learned="", proposes="wait"),
                     call("run_bash", command=f"sleep {wait_s}", timeout_s=wait_s),  # cut off by wrap-up
                     call("report", changed="", commands="sleep", evaluations=[], learned="cut off", proposes="eval"),
                     call("evaluate", artifact_path="answer.txt"),
                     call("report", changed="", commands="", evaluations=["eval-0001"], learned="", proposes="submit")],
    }


@pytest.mark.parametrize("budget_s, job_s", [
    pytest.param(80, 480, id="80s-budget-8m-job"),
    pytest.param(300, 1200, id="5m-budget-20m-job", marks=pytest.mark.long),
])
def test_a_job_that_cannot_finish_is_warned_wrapped_up_and_the_run_submits(tmp_path, monkeypatch, api_server,
                                                                           budget_s, job_s):
    """Through the protocol-exact API server: the worker is cut off mid-command by wrap-up, the conversation
    stays valid (no request the real API would refuse), the supervisor reads WRAP-UP and the stopped worker's
    report in its next message, and what is submitted is what was scored."""
    started = time.time()
    server = api_server(wrapup_script(budget_s, job_s))
    code, run, result, events = run_crew(tmp_path, monkeypatch, None, budget=f"{budget_s}s", server=server)
    assert code == 0 and result["status"] == "submitted" and result["score"] == 0.5
    assert time.time() - started < budget_s
    briefings = [e.last_user_text() for e in server.requests("supervisor")]
    assert "WILL NOT FINISH" in briefings[1] and "ETA" in briefings[1]
    assert "WRAP-UP" in briefings[2] and "stopped: the run entered its wrap-up phase" in briefings[2]
    cut = [r for e in kinds(events, "tool_results") for r in e["results"] if r["name"] == "run_bash"][-1]
    assert "TIMED OUT" in cut["content"] and "budget" in cut["content"]  # cut off mid-command by wrap-up
    record = json.loads((run.evaluations / "eval-0001.json").read_text())
    assert result["submission"]["sha256"] == record["sha256"] == hashlib.sha256(b"0.5\n").hexdigest()
    assert Path(result["submission"]["path"]).read_text() == "0.5\n"
    [wrapup] = [e for e in kinds(events, "phase") if e["phase"] == "wrap-up"]
    # Wrap-up began when the reserve was left, not earlier: 1.25 x 30 s of scoring plus the final 15 s
    # (5% of the budget is less, at both sizes).
    assert 52.5 - 3 <= wrapup["time_left_s"] <= 52.5 + 0.5
    job = json.loads((run.jobs / "001-train" / "job.json").read_text())
    assert job["exit_code"] == 0 and job["ended"] - job["started"] < job_s / 2  # stopped, saved, not finished


def test_sigterm_stops_jobs_gracefully_and_exits_3_then_resume_finishes(tmp_path):
    env = cli_env(tmp_path)
    run_dir = tmp_path / "stopped"
    job = "trap 'echo saved > saved.txt; exit 0' TERM; for i in $(seq 600); do sleep 0.2; done"
    script = {"supervisor": SUPERVISOR,
              "engineer": [call("start_job", command=job, name="train"),
                           call("run_bash", command="sleep 4", timeout_s=60), *ENGINEER_OK]}
    proc = start(tmp_path, env, script, run_dir)
    job_file = run_dir / "jobs" / "001-train" / "job.json"
    while not (job_file.exists() and json.loads(job_file.read_text()).get("pid")):
        time.sleep(0.1)
    time.sleep(1)
    proc.send_signal(signal.SIGTERM)
    output = proc.communicate(timeout=120)[0].decode()
    assert proc.returncode == 3, output
    result = json.loads((run_dir / "result.json").read_text())
    assert result["status"] == "no_submission" and "interrupted" in result["note"]
    assert (run_dir / "workspace" / "saved.txt").read_text().strip() == "saved"  # SIGTERM reached the job
    assert json.loads(job_file.read_text()).get("ended") is not None
    resumed = subprocess.run([CLI, "resume", str(run_dir)], env=env, capture_output=True, text=True, timeout=300)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert json.loads((run_dir / "result.json").read_text())["status"] == "submitted"


def test_active_budget_clock_does_not_count_downtime(tmp_path):
    env = cli_env(tmp_path)
    path = tmp_path / "script.yaml"
    path.write_text(yaml.safe_dump({"supervisor": SUPERVISOR, "engineer": SLOW_ENGINEER}))
    run_dir = tmp_path / "active"
    began = time.time()
    proc = subprocess.Popen([CLI, "run", "toy", "--preset", "smoke", "--model", f"replay:{path}", "--budget", "3m",
                             "--budget-clock", "active", "--run-dir", str(run_dir)], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    kill_after_events(proc, run_dir, 8)
    time.sleep(6)  # the run is down: with the active clock this does not count
    resumed = subprocess.run([CLI, "resume", str(run_dir)], env=env, capture_output=True, text=True, timeout=300)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    result = json.loads((run_dir / "result.json").read_text())
    assert result["status"] == "submitted"
    assert result["elapsed_s"] <= time.time() - began - 6


def test_active_budget_clock_resumes_a_baseline_run_without_its_downtime(tmp_path):
    """The baseline policy saves the time it used too: killed while its recipe runs and resumed after a pause,
    its clock goes on from the time used, not from the first start (it used to resume on wall time)."""
    toml = TOML.format(name="toy") + '\n[baseline]\ncommand = "python recipe.py {submission_dir}"\n'
    folder = write_challenge(tmp_path / "challenges", "toy", toml=toml)
    # The recipe: a few seconds of "training", then the artifact (a number the scorer reads).
    (folder / "recipe.py").write_text("import sys, time\ntime.sleep(4)\nopen(sys.argv[1], 'w').write('0.5')\n")
    env = {**os.environ, "RESEARCH_CREW_CHALLENGE_PATH": str(tmp_path / "challenges"),
           "RESEARCH_CREW_MEMORY_DIR": str(tmp_path / "memory")}
    run_dir = tmp_path / "baseline-active"
    proc = subprocess.Popen([CLI, "run", "toy", "--preset", "smoke", "--model", "baseline", "--budget", "3m",
                             "--budget-clock", "active", "--run-dir", str(run_dir)], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    used = run_dir / "state" / "clock.json"
    while proc.poll() is None and not used.exists():  # killed once the policy has saved the time it used
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert used.exists(), "the baseline run ended before it saved the time it used"
    used_s = json.loads(used.read_text())["used_s"]
    down_from = time.time()
    time.sleep(8)  # the run is down: with the active clock this does not count
    resumed = subprocess.run([CLI, "resume", str(run_dir)], env=env, capture_output=True, text=True, timeout=300)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    result = json.loads((run_dir / "result.json").read_text())
    assert result["status"] == "submitted"
    # elapsed = the time used before the kill + the resumed part; the 8 s down are not in it
    assert result["elapsed_s"] <= used_s + (time.time() - down_from - 8) + 1.0
