"""Every built-in challenge validates; `challenges new` writes one that validates and runs; one real smoke run."""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess

import pytest

from challenges.loader import challenge_folders
from challenges.validator import validate

MLRB = ["babylm", "edge_llm_compression", "edge_llm_training", "llm_efficiency", "llm_merging",
        "math_autoformalization", "minipile"]
CLI = shutil.which("research-crew")


def test_every_builtin_challenge_is_valid_with_full_mini_and_smoke_presets():
    folders = challenge_folders()
    assert set(MLRB) <= set(folders)
    for name in MLRB:
        challenge, problems = validate(folders[name])
        assert problems == [], (name, problems)
        assert set(challenge.presets) == {"full", "mini", "smoke"} and challenge.presets["smoke"].gpus == 0
        assert challenge.presets["smoke"].budget_s >= challenge.presets["smoke"].min_budget_s
        assert challenge.baseline_command and challenge.task_text.strip()


def test_challenges_new_writes_a_challenge_that_validates_and_runs(tmp_path):
    env = {**os.environ, "RESEARCH_CREW_CHALLENGE_PATH": str(tmp_path / "mine")}
    made = subprocess.run([CLI, "challenges", "new", "toy_task", "--dir", str(tmp_path / "mine")], env=env,
                          capture_output=True, text=True, timeout=60)
    assert made.returncode == 0 and "wrote" in made.stdout, made.stderr
    checked = subprocess.run([CLI, "challenges", "validate", "toy_task"], env=env, capture_output=True, text=True,
                             timeout=60)
    assert checked.returncode == 0 and "is a valid challenge" in checked.stdout
    run = subprocess.run([CLI, "run", "toy_task", "--preset", "smoke", "--model", "baseline", "--run-dir",
                          str(tmp_path / "run")], env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    result = json.loads((tmp_path / "run" / "result.json").read_text())
    assert result["status"] == "submitted" and math.isfinite(result["score"]) and result["score"] < 1.0


@pytest.mark.parametrize(("name", "message"), [("Bad-Name", "is not a valid challenge name"),
                                               ("taken", "already exists")])
def test_challenges_new_refuses_a_bad_name_or_an_existing_folder(tmp_path, name, message):
    (tmp_path / "taken").mkdir()
    made = subprocess.run([CLI, "challenges", "new", name, "--dir", str(tmp_path)], capture_output=True, text=True,
                          timeout=60)
    assert made.returncode == 2 and message in made.stderr and "hint:" in made.stderr


@pytest.mark.slow
def test_edge_llm_compression_smoke_run_submits_a_scored_model(tmp_path):
    run_dir = tmp_path / "run"
    proc = subprocess.run([CLI, "run", "edge_llm_compression", "--preset", "smoke", "--model", "baseline",
                           "--run-dir", str(run_dir)], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    result = json.loads((run_dir / "result.json").read_text())
    assert result["status"] == "submitted" and 0.0 <= result["score"] <= 1.0
    assert result["metric"] == {"name": "mmlu_acc", "direction": "max"}
    evaluation = json.loads((run_dir / "evaluations" / f"{result['submission']['evaluation']}.json").read_text())
    assert evaluation["violations"] == [] and evaluation["details"]["parameters_kept"] == 1.0  # fits in float16
    assert set(evaluation["details"]["per_task"]) == {"smoke_mmlu_arithmetic", "smoke_mmlu_counting"}
