"""Experiment 0 on the real MiniPile smoke preset, through the command line: a crew whose model never makes a
valid tool call still submits the baseline recipe's score; and, opt-in, the crew against a real
OpenAI-compatible local server (llama.cpp, vLLM, Ollama) named in RESEARCH_CREW_LOCAL_MODEL."""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess

import pytest

from crew.policy.floor import FLOOR_ID

LOCAL_MODEL = os.environ.get("RESEARCH_CREW_LOCAL_MODEL", "")  # e.g. openai:qwen2.5-coder@http://127.0.0.1:8080/v1


def run_minipile(tmp_path, model: str, budget: str) -> tuple[subprocess.CompletedProcess, dict, list[dict]]:
    run_dir = tmp_path / "run"
    proc = subprocess.run([shutil.which("research-crew"), "run", "minipile", "--preset", "smoke", "--model", model,
                           "--budget", budget, "--run-dir", str(run_dir), "--quiet"],
                          capture_output=True, text=True, timeout=1200)
    result = json.loads((run_dir / "result.json").read_text())
    events = [json.loads(line) for line in (run_dir / "trace.jsonl").read_text().splitlines()]
    return proc, result, events


@pytest.mark.long
def test_a_model_that_never_makes_a_valid_call_submits_experiment_0_on_minipile(tmp_path, monkeypatch, api_server):
    monkeypatch.setenv("RESEARCH_CREW_MEMORY_DIR", str(tmp_path / "memory"))
    prose = {"text": "```json\n{\"name\": \"delegate\", \"arguments\": {\"role\": \"engineer\", \"subtask\": "
                     "\"train\", \"minutes\": 2}}\n```"}
    api_server({"supervisor": [prose] * 5})
    proc, result, _ = run_minipile(tmp_path, "anthropic:claude-sonnet-4-6", "5m")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert result["status"] == "submitted" and result["submission"]["evaluation"] == FLOOR_ID
    assert math.isfinite(result["score"]) and "no valid tool call in 5 turns" in result["note"]


@pytest.mark.skipif(not LOCAL_MODEL, reason="set RESEARCH_CREW_LOCAL_MODEL=openai:MODEL@URL to a local server")
def test_the_crew_against_a_real_local_server(tmp_path, monkeypatch):
    """Whatever the model manages, the run ends with a scored submission: at least experiment 0."""
    monkeypatch.setenv("RESEARCH_CREW_MEMORY_DIR", str(tmp_path / "memory"))
    proc, result, events = run_minipile(tmp_path, LOCAL_MODEL, "8m")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert result["status"] == "submitted" and math.isfinite(result["score"])
    assert result["cost_usd"] == 0 or "@" not in LOCAL_MODEL
    assert any(e["kind"] == "model_response" for e in events)
