"""The challenge loader and validator, on the built-in MiniPile and on broken copies of it."""

from __future__ import annotations

import pytest

from challenges.framework.api import ChallengeError
from challenges.framework.loader import challenge_folders, load_challenge
from challenges.framework.validator import validate
from tests.foundation.helpers import TOML, copy_minipile, write_challenge


def test_minipile_is_valid_and_complete():
    challenge = load_challenge("minipile")
    assert challenge.builtin
    assert set(challenge.presets) == {"full", "mini", "smoke"}
    assert challenge.presets["full"].gpus == 1 and challenge.presets["full"].hours == 24
    assert challenge.presets["smoke"].gpus == 0
    assert challenge.metric.direction == "max"
    assert "SuperGLUE" in challenge.task_text


def test_challenge_path_adds_folders_and_can_override(tmp_path, monkeypatch):
    write_challenge(tmp_path / "extra", "toy")
    single = write_challenge(tmp_path / "single", "solo")
    monkeypatch.setenv("RESEARCH_CREW_CHALLENGE_PATH", f"{tmp_path / 'extra'}:{single}")
    folders = challenge_folders()
    assert {"minipile", "toy", "solo"} <= folders.keys()
    assert load_challenge("toy").directory == (tmp_path / "extra" / "toy").resolve()
    assert not load_challenge("toy").builtin


def test_unknown_challenge_lists_the_known_ones():
    with pytest.raises(ChallengeError) as info:
        load_challenge("no_such_thing")
    assert "no_such_thing" in info.value.message and "minipile" in info.value.message


def problems_of(folder):
    challenge, problems = validate(folder)
    assert challenge is None
    return [str(p) for p in problems]


def test_missing_scorer_is_named(tmp_path):
    folder = copy_minipile(tmp_path)
    (folder / "scorer.py").unlink()
    assert any(p.startswith("scorer.py") and "missing" in p for p in problems_of(folder))


def test_bad_metric_direction_is_named(tmp_path):
    folder = copy_minipile(tmp_path)
    toml = folder / "challenge.toml"
    toml.write_text(toml.read_text().replace('direction = "max"', 'direction = "up"'))
    [problem] = problems_of(folder)
    assert "[metric].direction" in problem and "'up'" in problem and "fix" in problem


def test_malformed_toml_is_named_with_its_line(tmp_path):
    folder = copy_minipile(tmp_path)
    (folder / "challenge.toml").write_text('name = "minipile"\n[metric\n')
    [problem] = problems_of(folder)
    assert problem.startswith("challenge.toml") and "not valid TOML" in problem and "line 2" in problem


@pytest.mark.parametrize(
    ("old", "new", "field"),
    [
        ("hours = 24", 'hours = "a day"', "[presets.full].hours"),
        ("hours = 24", "hours = 0", "[presets.full].hours"),
        ("gpus = 0", "gpus = 0.5", "[presets.smoke].gpus"),
        ('name = "superglue_mean"', "", "[metric].name"),
        ("success_threshold = 0.10", "success_treshold = 0.10", "[metric].success_treshold"),
        ("{budget_s}", "{budget}", "[baseline].command"),
        ("baseline/train.py", "baseline/missing.py", "[baseline].command"),
        ('name = "minipile"', 'name = "other"', "name"),
    ],
)
def test_each_bad_field_is_named(tmp_path, old, new, field):
    folder = copy_minipile(tmp_path)
    toml = folder / "challenge.toml"
    assert old in toml.read_text()
    toml.write_text(toml.read_text().replace(old, new, 1))
    problems = problems_of(folder)
    assert any(p.startswith(f"challenge.toml {field}:") for p in problems), problems


def test_scorer_signature_and_syntax_are_checked(tmp_path):
    folder = write_challenge(tmp_path, scorer="def score(submission):\n    return 1\n")
    assert any("scorer.py score: takes 1 parameters, expected 2" in p for p in problems_of(folder))
    (folder / "scorer.py").write_text("def score(submission, ctx)\n")
    assert any("scorer.py line 1: has a syntax error" in p for p in problems_of(folder))


def test_empty_task_and_missing_prepare_function(tmp_path):
    folder = write_challenge(tmp_path, prepare="def other(ctx):\n    pass\n")
    (folder / "task.md").write_text("  \n")
    problems = problems_of(folder)
    assert any(p.startswith("task.md") and "empty" in p for p in problems)
    assert any(p.startswith("prepare.py prepare: is not defined") for p in problems)


def test_invalid_folder_cannot_be_loaded(tmp_path):
    folder = copy_minipile(tmp_path)
    (folder / "scorer.py").unlink()
    with pytest.raises(ChallengeError) as info:
        load_challenge(folder)
    assert "scorer.py" in info.value.message and "validate" in info.value.hint


@pytest.mark.parametrize("name", ["house-price", "spaceship-titanic", "my_task", "MNIST2", "9lives"])
def test_names_with_letters_digits_hyphens_and_underscores_are_valid(tmp_path, name):
    folder = write_challenge(tmp_path, name=name)
    assert validate(folder)[1] == []
    assert load_challenge(folder).name == name


@pytest.mark.parametrize("name", ["house price", "-leading", "a/b", "naïve"])
def test_names_that_are_not_folder_and_url_safe_are_refused(tmp_path, name):
    folder = tmp_path / "x"
    folder.mkdir()
    write_challenge(tmp_path / "y", name="ok")
    for file in (tmp_path / "y" / "ok").iterdir():
        (folder / file.name).write_text(file.read_text().replace('name = "ok"', f'name = "{name}"'))
    assert any("challenge.toml name: '" in p and "is not a valid challenge name" in p for p in problems_of(folder))


def test_a_preset_without_score_minutes_reserves_a_share_of_its_own_length(tmp_path):
    toml = TOML.format(name="short").replace("score_minutes = 0.5\n", "")  # hours = 0.05: three minutes
    challenge = load_challenge(write_challenge(tmp_path, name="short", toml=toml))
    smoke = challenge.presets["smoke"]
    assert smoke.score_minutes == pytest.approx(0.75)  # a quarter of 3 minutes, not the 10-minute default
    assert smoke.budget_s >= smoke.min_budget_s


def test_a_preset_too_short_for_its_own_scoring_reserve_is_flagged(tmp_path):
    toml = TOML.format(name="tight").replace("score_minutes = 0.5", "score_minutes = 2")  # 3 minutes, 2 for scoring
    problems = problems_of(write_challenge(tmp_path, name="tight", toml=toml))
    assert any(p.startswith("challenge.toml [presets.smoke].hours:") and "too short for its own scoring reserve"
               in p and "raise hours to at least 0.0667" in p for p in problems), problems


def test_a_preset_declares_variables_for_the_agents_but_no_secret_and_no_managed_name(tmp_path):
    good = TOML.format(name="envs") + 'env = { CUBLAS_WORKSPACE_CONFIG = ":4096:8", WANDB_MODE = "offline" }\n'
    smoke = load_challenge(write_challenge(tmp_path, name="envs", toml=good)).presets["smoke"]
    assert dict(smoke.env) == {"CUBLAS_WORKSPACE_CONFIG": ":4096:8", "WANDB_MODE": "offline"}
    bad = TOML.format(name="bad") + ('env = { WANDB_API_KEY = "x", HTTPS_PROXY = "x", PYTHONPATH = "x", '
                                     'LD_PRELOAD = "x", RESEARCH_CREW_CACHE = "x", "2X" = "x", N = 3 }\n')
    problems = problems_of(write_challenge(tmp_path, name="bad", toml=bad))
    expected = {"WANDB_API_KEY": "looks like the name of a secret", "HTTPS_PROXY": "machine's own environment",
                "PYTHONPATH": "set by research-crew itself", "LD_PRELOAD": "set by research-crew itself",
                "RESEARCH_CREW_CACHE": "set by research-crew itself", "2X": "is not a variable name",
                "N": "must be text"}
    for name, reason in expected.items():
        assert any(p.startswith(f"challenge.toml [presets.smoke].env.{name}:") and reason in p and "fix:" in p
                   for p in problems), (name, problems)
    assert len(problems) == len(expected)
