"""A scripted crew on the real MiniPile smoke preset, through the command line, our Anthropic client and the
official SDK against the protocol-exact API server: the scout searches, the engineer writes a training
script, runs it as a job, polls it, evaluates the model; the supervisor submits."""

from __future__ import annotations

import json
import math
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.crew.helpers import API_MODEL

SCRIPT = Path(__file__).parents[1] / "fixtures" / "crew" / "minipile_smoke.yaml"


@pytest.mark.slow
def test_scripted_crew_trains_evaluates_and_submits_minipile(tmp_path, monkeypatch, api_server):
    monkeypatch.setenv("RESEARCH_CREW_MEMORY_DIR", str(tmp_path / "memory"))
    api_server(SCRIPT)  # ANTHROPIC_BASE_URL and the key now lead to it; the CLI inherits them
    run_dir = tmp_path / "run"
    proc = subprocess.run([shutil.which("research-crew"), "run", "minipile", "--preset", "smoke", "--model",
                           API_MODEL, "--budget", "5m", "--run-dir", str(run_dir)],
                          capture_output=True, text=True, timeout=400)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    result = json.loads((run_dir / "result.json").read_text())
    assert result["status"] == "submitted" and math.isfinite(result["score"])
    assert result["submission"]["evaluation"] == "eval-0001"
    record = json.loads((run_dir / "evaluations" / "eval-0001.json").read_text())
    assert record["full_score"] == result["score"] and record["artifact"].endswith("workspace/model")
    # per-document results (the smoke proxy: held-out bits per byte) give a dev and a held-out score
    assert record["heldout_score"] is not None and record["split"]["heldout_items"] > 0

    events = [json.loads(line) for line in (run_dir / "trace.jsonl").read_text().splitlines()]
    calls = [(e["agent"], c["name"]) for e in events if e["kind"] == "model_response"
             for c in e["response"].get("tool_calls", [])]
    assert ("scout", "search_arxiv") in calls and ("engineer", "write_file") in calls
    assert ("engineer", "start_job") in calls and ("engineer", "job_status") in calls
    assert ("engineer", "evaluate") in calls and calls[-1] == ("supervisor", "submit")
    job = json.loads((run_dir / "jobs" / "001-train" / "job.json").read_text())
    assert job["exit_code"] == 0
    assert (run_dir / "workspace" / "train.py").is_file() and (run_dir / "workspace" / "ckpt").is_dir()
