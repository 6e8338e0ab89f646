"""A scripted crew (through the protocol-exact API server) whose jobs run on the real one-node SLURM cluster with
`--jobs slurm`: two jobs at once as SLURM batch jobs inside the same sandbox, one waited on, the other stopped
when the run wraps up after saving its checkpoint, and the run submits."""

from __future__ import annotations

import json

import pytest

from crew.errors import EXIT_DONE
from tests.crew.helpers import SUPERVISOR_OK, call, kinds, run_crew

pytestmark = pytest.mark.slurm

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
