"""Every bad input ends with exit code 2 and a message that names the problem and the fix."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from crew.cli.main import app
from tests.foundation.helpers import copy_minipile


def run(*args: str):
    return CliRunner().invoke(app, list(args))


def test_unknown_challenge_lists_known_ones(tmp_path):
    result = run("run", "minipyle", "--preset", "smoke", "--run-dir", str(tmp_path / "r"))
    assert result.exit_code == 2
    assert "unknown challenge 'minipyle'" in result.output and "minipile" in result.output
    assert not (tmp_path / "r").exists()


def test_unknown_preset_lists_the_presets(tmp_path):
    result = run("run", "minipile", "--preset", "tiny", "--run-dir", str(tmp_path / "r"))
    assert result.exit_code == 2
    assert "no preset 'tiny'" in result.output and "full, mini, smoke" in result.output


def test_budget_too_small_for_the_preset(tmp_path):
    result = run("run", "minipile", "--preset", "smoke", "--budget", "20s", "--run-dir", str(tmp_path / "r"))
    assert result.exit_code == 2
    assert "too small" in result.output and "--budget 2m00s" in result.output


def test_unreadable_budget(tmp_path):
    result = run("run", "minipile", "--preset", "smoke", "--budget", "soon", "--run-dir", str(tmp_path / "r"))
    assert result.exit_code == 2 and "cannot read the duration 'soon'" in result.output


def test_full_preset_without_gpu_points_to_smoke(tmp_path, monkeypatch):
    monkeypatch.setattr("crew.policy.runner.gpu_count", lambda: 0)
    result = run("run", "minipile", "--run-dir", str(tmp_path / "r"))
    assert result.exit_code == 2
    assert "needs 1 GPU" in result.output and "--preset smoke" in result.output


def test_preflight_refuses_a_preset_that_cannot_prepare(tmp_path, monkeypatch):
    monkeypatch.setattr("crew.policy.runner.gpu_count", lambda: 1)  # past the GPU count, to the doctor's quick checks
    result = run("run", "minipile", "--preset", "full", "--run-dir", str(tmp_path / "r"))
    assert result.exit_code == 2 and "cannot prepare the preset" in result.output
    assert "GPU: the preset needs 1 GPU(s) with 40 GB" in result.output  # torch itself sees no GPU here
    assert "AlgorithmicResearchGroup/minipile" in result.output and "HF_HUB_OFFLINE" in result.output
    assert "--skip-checks" in result.output and not (tmp_path / "r").exists()


def test_dataset_that_cannot_be_downloaded(tmp_path, monkeypatch):
    monkeypatch.setattr("crew.policy.runner.gpu_count", lambda: 1)  # pretend a GPU, to reach the download
    result = run("run", "minipile", "--preset", "full", "--skip-checks", "--run-dir", str(tmp_path / "r"))
    assert result.exit_code == 2
    assert "AlgorithmicResearchGroup/minipile" in result.output and "offline" in result.output
    assert "cannot prepare the preset" not in result.output  # the checks were skipped; preparing said why
    assert not (tmp_path / "r").exists()


def test_invalid_challenge_folder_names_file_and_field(tmp_path, monkeypatch):
    folder = copy_minipile(tmp_path / "mine")
    toml = folder / "challenge.toml"
    toml.write_text(toml.read_text().replace('direction = "max"', 'direction = "bigger"'))
    monkeypatch.setenv("RESEARCH_CREW_CHALLENGE_PATH", str(tmp_path / "mine"))
    result = run("run", "minipile", "--preset", "smoke", "--run-dir", str(tmp_path / "r"))
    assert result.exit_code == 2
    assert "challenge.toml [metric].direction" in result.output and "'bigger'" in result.output
    validate = run("challenges", "validate", str(folder))
    assert validate.exit_code == 2 and "[metric].direction" in validate.output


def test_existing_run_directory_is_refused_and_left_intact(tmp_path):
    existing = tmp_path / "r"
    existing.mkdir()
    (existing / "result.json").write_text('{"status": "submitted"}')
    result = run("run", "minipile", "--preset", "smoke", "--run-dir", str(existing))
    assert result.exit_code == 2
    assert "already exists" in result.output and "resume" in result.output
    assert (existing / "result.json").read_text() == '{"status": "submitted"}'
    assert [p.name for p in existing.iterdir()] == ["result.json"]


@pytest.mark.parametrize("spec", ["gpt5", "anthropic:", "openai:m@ftp://x"])
def test_malformed_model_spec(tmp_path, spec):
    result = run("run", "minipile", "--preset", "smoke", "--model", spec, "--run-dir", str(tmp_path / "r"))
    assert result.exit_code == 2 and "model spec" in result.output


def test_challenges_commands():
    listing = run("challenges", "list")
    assert listing.exit_code == 0 and "minipile" in listing.output
    show = run("challenges", "show", "minipile")
    assert show.exit_code == 0 and "superglue_mean" in show.output and "preset smoke" in show.output
    assert run("challenges", "validate", "minipile").exit_code == 0
    assert run("challenges", "show", "nope").exit_code == 2


def test_max_jobs_is_for_slurm_jobs_and_at_least_one(tmp_path):
    result = run("run", "minipile", "--preset", "smoke", "--max-jobs", "3", "--run-dir", str(tmp_path / "r"))
    assert result.exit_code == 2 and "--max-jobs is for --jobs slurm" in result.output
    assert "add --jobs slurm, or leave --max-jobs out" in result.output and not (tmp_path / "r").exists()
    result = run("run", "minipile", "--preset", "smoke", "--jobs", "slurm", "--max-jobs", "0",
                 "--run-dir", str(tmp_path / "r"))
    assert result.exit_code == 2 and "--max-jobs 0: a run needs at least one job at once" in result.output
