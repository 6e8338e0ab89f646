"""Every built-in challenge validates; `challenges new` writes one that validates and runs; one real smoke run."""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess

import pytest

from challenges.framework.loader import challenge_folders
from challenges.framework.validator import validate

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


def test_a_hyphenated_challenge_is_made_validated_and_run_within_its_own_preset(tmp_path):
    # As MLAgentBench's `house-price`, and without score_minutes, as someone else's challenge may be written:
    # the scoring reserve follows the preset's own length, so its two-minute budget is enough.
    env = {**os.environ, "RESEARCH_CREW_CHALLENGE_PATH": str(tmp_path / "mine")}
    made = subprocess.run([CLI, "challenges", "new", "house-price", "--dir", str(tmp_path / "mine")], env=env,
                          capture_output=True, text=True, timeout=60)
    assert made.returncode == 0 and "wrote" in made.stdout, made.stderr
    toml = tmp_path / "mine" / "house-price" / "challenge.toml"
    toml.write_text(toml.read_text().replace("score_minutes = 0.5\n", ""))
    checked = subprocess.run([CLI, "challenges", "validate", "house-price"], env=env, capture_output=True, text=True,
                             timeout=60)
    assert checked.returncode == 0 and "is a valid challenge" in checked.stdout
    run = subprocess.run([CLI, "run", "house-price", "--preset", "smoke", "--model", "baseline", "--run-dir",
                          str(tmp_path / "run")], env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "budget 1m48s" in run.stdout  # the preset's own 0.03 hours, not a budget raised to fit a reserve
    result = json.loads((tmp_path / "run" / "result.json").read_text())
    assert result["status"] == "submitted" and math.isfinite(result["score"]) and result["score"] < 1.0


@pytest.mark.parametrize(("name", "message"), [("bad name", "is not a valid challenge name"),
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
    # The smoke preset's stated proxy: held-out bits per byte of the compressed model (MMLU stays at chance).
    assert result["status"] == "submitted" and 0.0 < result["score"] < 8.0
    assert result["metric"] == {"name": "heldout_bits_per_byte", "direction": "min"}
    evaluation = json.loads((run_dir / "evaluations" / f"{result['submission']['evaluation']}.json").read_text())
    assert evaluation["violations"] == [] and evaluation["details"]["parameters_kept"] == 1.0  # fits in float16
    assert set(evaluation["details"]["dev_per_group"]) == {"heldout_text"}
