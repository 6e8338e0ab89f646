"""The README's main command, for real: `research-crew run minipile --preset smoke` with the baseline policy."""

from __future__ import annotations

import json
import math
import os
import shutil
import signal
import subprocess
import time

import psutil
import pytest

from challenges.framework.harness import artifact_sha256

SECRET = "sk-ant-test-secret-do-not-leak"


@pytest.mark.slow
def test_smoke_run_submits_a_scored_model(tmp_path):
    run_dir = tmp_path / "run"
    env = {**os.environ, "ANTHROPIC_API_KEY": SECRET}  # must never reach the run directory
    command = [shutil.which("research-crew"), "run", "minipile", "--preset", "smoke", "--model", "baseline",
               "--budget", "2m", "--run-dir", str(run_dir)]
    proc = subprocess.run(command, capture_output=True, text=True, env=env, timeout=400)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "status: submitted" in proc.stdout

    result = json.loads((run_dir / "result.json").read_text())
    assert result["status"] == "submitted" and result["challenge"] == "minipile" and result["preset"] == "smoke"
    # The smoke preset's stated proxy: held-out bits per byte (SuperGLUE cannot move at this size).
    assert math.isfinite(result["score"]) and 0.0 < result["score"] < 16.0
    assert result["metric"] == {"name": "heldout_bits_per_byte", "direction": "min"}
    assert result["baseline_score"] == result["score"] and result["improvement"] == 0.0
    assert result["elapsed_s"] <= result["budget_s"]
    for key in ("run_id", "models", "submission", "budget_s", "steps", "resumes", "tokens", "cost_usd"):
        assert key in result

    # The submitted score is a harness record, and the record matches the artifact on disk.
    evaluation = json.loads((run_dir / "evaluations" / f"{result['submission']['evaluation']}.json").read_text())
    assert evaluation["ok"] and evaluation["full_score"] == result["score"] == result["scores"]["full"]
    submitted = run_dir / "workspace" / "submission"
    assert evaluation["sha256"] == result["submission"]["sha256"] == artifact_sha256(submitted)
    # Per-document results (every held-out document) split into dev and held-out parts.
    split = evaluation["split"]
    documents = split["scorer_details"]["documents"]
    assert split["dev_items"] + split["heldout_items"] == documents > 100 and evaluation["heldout_score"] is not None
    assert evaluation["score"] == result["scores"]["dev"] and set(evaluation["details"]["dev_per_group"]) == {
        "heldout_text"}
    # The real metric's path still runs on the smoke items: lm-eval over the generated BoolQ/CB/COPA sets.
    from challenges.framework.api import ScoreContext
    from challenges.framework.data import prepare_data
    from challenges.framework.loader import load_challenge
    from challenges.lib.superglue import score_superglue

    data = prepare_data(load_challenge("minipile"), "smoke")
    (tmp_path / "scratch").mkdir()
    ctx = ScoreContext(challenge="minipile", preset="smoke", data_dir=data.data_dir, private_dir=data.private_dir,
                       scratch_dir=tmp_path / "scratch")
    superglue = score_superglue(submitted, ctx)
    assert 0.0 <= superglue.value <= 1.0 and set(superglue.details["per_task"]) == {"smoke_boolq", "smoke_cb",
                                                                                    "smoke_copa"}

    events = [json.loads(line) for line in (run_dir / "trace.jsonl").read_text().splitlines()]
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    assert [e["kind"] for e in events] == ["run_started", "job_started", "job_finished", "evaluation", "run_finished"]
    assert json.loads((run_dir / "jobs" / "001-baseline" / "job.json").read_text())["exit_code"] == 0
    assert (run_dir / "workspace" / "data").is_symlink()
    assert (run_dir / "workspace" / "data" / "train.bin").is_file()
    assert "heldout_bits_per_byte" in (run_dir / "report.md").read_text()
    assert 'preset = "smoke"' in (run_dir / "run.toml").read_text()

    leaked = [p for p in run_dir.rglob("*") if p.is_file() and SECRET.encode() in p.read_bytes()]
    assert leaked == []


def test_sigterm_stops_the_recipe_writes_result_and_exits_3(tmp_path):
    run_dir = tmp_path / "run"
    command = [shutil.which("research-crew"), "run", "minipile", "--preset", "smoke", "--model", "baseline",
               "--run-dir", str(run_dir)]
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    job_file = run_dir / "jobs" / "001-baseline" / "job.json"
    deadline = time.monotonic() + 120
    while not (job_file.is_file() and json.loads(job_file.read_text()).get("pid")) and time.monotonic() < deadline:
        time.sleep(0.2)
    recipe_pid = json.loads(job_file.read_text())["pid"]
    time.sleep(3)  # let the recipe start training
    proc.send_signal(signal.SIGTERM)
    output, _ = proc.communicate(timeout=90)
    assert proc.returncode == 3, output
    result = json.loads((run_dir / "result.json").read_text())
    assert result["status"] == "no_submission" and "interrupted" in result["note"]
    assert not psutil.pid_exists(recipe_pid) or psutil.Process(recipe_pid).status() == psutil.STATUS_ZOMBIE
    assert json.loads(job_file.read_text())["exit_code"] is not None
    assert (run_dir / "report.md").is_file()
