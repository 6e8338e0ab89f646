"""A scripted crew (through the protocol-exact API server) whose jobs run on the real one-node SLURM cluster with
`--jobs slurm`: two jobs at once as SLURM batch jobs inside the same sandbox, one waited on, the other stopped
when the run wraps up after saving its checkpoint, and the run submits; killed with SIGKILL, a run resumes and
re-attaches to its SLURM jobs."""

from __future__ import annotations

import json
import signal
import subprocess
import time

import pytest
import yaml

from crew.errors import EXIT_DONE
from tests.crew.helpers import SUPERVISOR_OK, call, kinds, run_crew
from tests.crew.test_resume_and_budget import CLI, SUPERVISOR, cli_env

# On one worker, one at a time: the tests share the one-node cluster, and none may queue behind another's jobs.
pytestmark = [pytest.mark.slurm, pytest.mark.xdist_group("slurm")]

TRAIN = ("trap 'echo saving; echo step > ckpt.txt; exit 0' TERM; "
         "for i in $(seq 3000); do echo progress: $i/3000; sleep 0.2; done")
SHORT = "for i in $(seq 5); do echo progress: $i/5; sleep 1; done; echo 0.75 > answer.txt"


def test_a_crews_jobs_run_on_slurm(tmp_path, monkeypatch, api_server, slurm_cluster):
    engineer = [call("start_job", command=TRAIN, name="train"),
                call("start_job", command=SHORT, name="short"),
                call("wait_for_job", job_id="002-short", until="exit", max_minutes=5),
                call("evaluate", artifact_path="answer.txt"),
                call("report", changed="answer.txt", commands="two jobs", evaluations=["eval-0001"],
                     learned="0.75 scores", proposes="submit eval-0001")]
    server = api_server({"supervisor": SUPERVISOR_OK, "engineer": engineer})
    code, run, result, events = run_crew(tmp_path, monkeypatch, None, server=server, budget="10m", jobs="slurm",
                                         partition=slurm_cluster)
    assert code == EXIT_DONE and result["status"] == "submitted" and result["score"] == 0.75
    assert 'jobs = "slurm"' in run.run_toml.read_text()

    jobs = {p.name: p for p in (run.root / "jobs").iterdir()}
    records = {name: json.loads((p / "job.json").read_text()) for name, p in jobs.items()}
    slurm_ids = {name: json.loads((p / "runner.json").read_text())["slurm_job_id"] for name, p in jobs.items()}
    assert set(records) == {"001-train", "002-short"} and len(set(slurm_ids.values())) == 2
    train, short = records["001-train"], records["002-short"]
    assert train["started"] < short["ended"]  # both ran at once, each as its own SLURM job
    assert short["state"] == "exited" and short["exit_code"] == 0
    assert train["state"] == "stopped" and (run.workspace / "ckpt.txt").read_text() == "step\n"  # stopped at the end
    assert any(a.endswith("bwrap") for a in train["argv"])  # the same sandbox, on the node
    [waited] = [r for e in kinds(events, "tool_results") for r in e["results"] if r["name"] == "wait_for_job"]
    assert "5/5" in waited["content"]


def test_a_crew_killed_with_sigkill_reattaches_to_its_slurm_jobs_on_resume(tmp_path, slurm_cluster):
    """The run process dies (SIGKILL) while its two SLURM jobs run; `resume` finds them by their saved SLURM job
    ids, waits on the one still running without starting it again, and submits."""
    env = cli_env(tmp_path)
    engineer = [call("start_job", command=TRAIN, name="train"),
                call("start_job", command=SHORT.replace("sleep 1", "sleep 3"), name="short"),
                call("wait_for_job", job_id="002-short", until="exit", max_minutes=5),
                call("evaluate", artifact_path="answer.txt"),
                call("report", changed="answer.txt", commands="two jobs", evaluations=["eval-0001"],
                     learned="0.75 scores", proposes="submit eval-0001")]
    script = tmp_path / "script.yaml"
    script.write_text(yaml.safe_dump({"supervisor": SUPERVISOR, "engineer": engineer}))
    run_dir = tmp_path / "run"
    proc = subprocess.Popen([CLI, "run", "toy", "--preset", "smoke", "--model", f"replay:{script}", "--budget", "10m",
                             "--run-dir", str(run_dir), "--jobs", "slurm", "--partition", slurm_cluster],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    runners = run_dir / "jobs"
    deadline = time.monotonic() + 300
    while not (runners / "002-short" / "runner.json").exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.1)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    before = {p.parent.name: json.loads(p.read_text())["slurm_job_id"] for p in runners.glob("*/runner.json")}
    assert set(before) == {"001-train", "002-short"}
    queued = subprocess.run(["squeue", "-h", "-o", "%i"], capture_output=True, text=True).stdout.split()
    assert before["001-train"] in queued  # the jobs outlive the run process: they belong to the cluster

    resumed = subprocess.run([CLI, "resume", str(run_dir)], env=env, capture_output=True, text=True, timeout=400)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    result = json.loads((run_dir / "result.json").read_text())
    assert result["status"] == "submitted" and result["score"] == 0.75 and result["resumes"] == 1
    after = {p.parent.name: json.loads(p.read_text())["slurm_job_id"] for p in runners.glob("*/runner.json")}
    assert after == before  # re-attached: no job started twice
    train = json.loads((runners / "001-train" / "job.json").read_text())
    assert train["state"] == "stopped" and (run_dir / "workspace" / "ckpt.txt").read_text() == "step\n"
    assert before["001-train"] not in subprocess.run(["squeue", "-h", "-o", "%i"], capture_output=True,
                                                      text=True).stdout.split()
