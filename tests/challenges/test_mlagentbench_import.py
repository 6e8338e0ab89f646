"""`challenges import mlagentbench` on MLAgentBench-shaped trees of our own (tests/fixtures/mlagentbench): the
folders it writes, their prepare (a Kaggle zip served locally), the baseline policy to `submitted` beside the
upstream reference, the timing scorer that ignores a self-reported runtime, and a blind crew that sees no score."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import tomllib

import pytest

from challenges.framework.api import DatasetUnavailable, ScoreContext
from challenges.framework.data import fingerprint, prepare_data
from challenges.framework.harness import evaluate
from challenges.framework.loader import load_challenge
from crew.errors import EXIT_DONE
from crew.policy.runner import RunRequest, start_run
from tests.crew.helpers import API_MODEL, call
from tests.fixtures.mlagentbench.trees import checkout, competition_zip

CLI = [sys.executable, "-c", "from crew.cli.main import main; main()"]


@pytest.fixture
def imported(tmp_path, monkeypatch):
    """The tree imported with the real command line; (challenges folder, its stdout)."""
    root = checkout(tmp_path / "checkout")
    into = tmp_path / "challenges"
    env = {**os.environ, "COLUMNS": "250"}
    env.pop("MLAGENTBENCH_DATA", None)
    done = subprocess.run([*CLI, "challenges", "import", "mlagentbench", str(root), "--all", "--into", str(into)],
                          capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    monkeypatch.setenv("RESEARCH_CREW_CHALLENGE_PATH", str(into))
    monkeypatch.setenv("RESEARCH_CREW_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("RESEARCH_CREW_MEMORY_DIR", str(tmp_path / "memory"))
    return into, done.stdout


def test_import_keeps_upstream_verbatim_and_reports_what_runs_here(imported, tmp_path):
    into, report = imported
    source = tmp_path / "checkout" / "MLAgentBench" / "benchmarks"
    commit = subprocess.run(["git", "-C", str(source), "rev-parse", "HEAD"], capture_output=True, text=True).stdout
    for task in ("house-price", "loop-speed"):
        record = json.loads((into / task / "upstream" / "UPSTREAM.json").read_text())
        assert record["commit"] == commit.strip()
        for name, digest in record["files"].items():
            original = (source / task / name).read_bytes()
            assert (into / task / "upstream" / name).read_bytes() == original
            assert hashlib.sha256(original).hexdigest() == digest
        load_challenge(into / task)  # valid
    house = tomllib.loads((into / "house-price" / "challenge.toml").read_text())
    assert house["baseline"]["reference_score"] == 1e10 and house["metric"]["direction"] == "min"
    assert house["presets"]["full"] == {"description": "upstream's time limit (runner.py --max-time) and device",
                                        "hours": 2.0, "gpus": 0}
    assert house["feedback"]["agents"] == "none" and house["prepare"]["env"] == ["MLAGENTBENCH_DATA"]
    assert {"pandas", "scikit-learn"} <= set(house["environment"]["requirements"])
    assert (into / "house-price" / "task.md").read_text().startswith("Fill in the provided train.py script")
    timing = tomllib.loads((into / "loop-speed" / "challenge.toml").read_text())
    assert timing["metric"] == {"name": "runtime_s", "direction": "min", "success_threshold": 0.1,
                                "sentinels": [1e10]}
    lines = {line.split("│")[1].strip(): line for line in report.splitlines() if line.count("│") > 3}
    assert "no" in lines["house-price"] and "Kaggle competition" in report and "MLAGENTBENCH_DATA" in report
    assert "yes" in lines["loop-speed"] and "runtime the submission wrote itself" in report


def test_prepare_serves_the_zip_locally_fails_early_without_it_and_keys_the_cache_on_it(imported, tmp_path,
                                                                                         monkeypatch):
    into, _ = imported
    challenge = load_challenge(into / "house-price")
    with pytest.raises(DatasetUnavailable) as refused:
        prepare_data(challenge, "full")
    assert "MLAGENTBENCH_DATA" in refused.value.hint and "home-data-for-ml-course.zip" in refused.value.hint
    downloads = tmp_path / "downloads"
    competition_zip(downloads, rows=200)
    monkeypatch.setenv("MLAGENTBENCH_DATA", str(downloads))
    key = fingerprint(challenge)
    data = prepare_data(challenge, "full")
    assert (data.data_dir / "train.csv").read_text().count("\n") == 161  # upstream's 80% split, and a header
    assert (data.data_dir / "test.csv").stat().st_mode & 0o222 == 0  # read-only data
    assert (data.private_dir / "scripts" / "answer.csv").is_file()
    assert not (data.data_dir / "home-data-for-ml-course.zip").exists()
    competition_zip(downloads, rows=200, seed=1)  # a new zip from outside: prepared afresh
    assert fingerprint(challenge) != key and not prepare_data(challenge, "full").cached


def test_baseline_policy_submits_beside_the_upstream_reference_and_times_the_runtime_itself(imported, tmp_path,
                                                                                            monkeypatch):
    competition_zip(tmp_path / "downloads", rows=300)
    monkeypatch.setenv("MLAGENTBENCH_DATA", str(tmp_path / "downloads"))
    code, run = start_run(RunRequest("house-price", model="baseline", budget="30m", run_dir=tmp_path / "hp"))
    result = json.loads(run.result.read_text())
    assert code == EXIT_DONE and result["status"] == "submitted"  # the blank was filled by the recipe
    assert result["reference_score"] == 1e10 and result["baseline_score"] == result["score"] > 0
    assert result["success_against"] == "reference_score" and result["success"]

    code, run = start_run(RunRequest("loop-speed", model="baseline", budget="30m", run_dir=tmp_path / "ls"))
    result = json.loads(run.result.read_text())
    record = json.loads((run.evaluations / "eval-0001.json").read_text())
    assert code == EXIT_DONE and result["status"] == "submitted" and result["reference_score"] == 2.5
    assert len(record["details"]["runs_s"]) == 3 and record["score"] == sorted(record["details"]["runs_s"])[1]


def test_a_self_reported_runtime_no_longer_scores(imported, tmp_path):
    into, _ = imported
    challenge = load_challenge(into / "loop-speed")
    data = prepare_data(challenge, "full")
    ctx = ScoreContext(challenge="loop-speed", preset="full", data_dir=data.data_dir, private_dir=data.private_dir,
                       scratch_dir=tmp_path / "scratch", time_limit_s=300)
    claimed_only = tmp_path / "claimed"
    claimed_only.mkdir()
    (claimed_only / "submission.csv").write_text("0.001")
    record = evaluate(challenge, claimed_only, ctx, tmp_path / "evaluations")
    assert not record.ok and record.violations == ["the submission folder has no train.py"]
    slow = tmp_path / "slow"
    slow.mkdir()
    (slow / "submission.csv").write_text("0.001")
    (slow / "train.py").write_text("import time\ntime.sleep(0.3)\n")
    record = evaluate(challenge, slow, ctx, tmp_path / "evaluations")
    assert record.ok and record.score >= 0.3 and record.details["self_reported"] == "0.001"


SENTINEL_TOML = """name = "{name}"
title = "t"
[metric]
name = "seconds"
direction = "min"
sentinels = [1e10]
[submission]
description = "a file"
[presets.smoke]
hours = 0.05
score_minutes = 0.5
"""


@pytest.mark.parametrize("returned", ["1e10", "float('nan')"])
def test_sentinel_and_non_finite_scores_are_violations_not_records(tmp_path, returned):
    from tests.foundation.helpers import write_challenge

    folder = write_challenge(tmp_path, "sentinel", toml=SENTINEL_TOML.format(name="sentinel"), scorer=f"""\
        from challenges import Score

        def score(submission, ctx):
            return Score({returned})
        """)
    (tmp_path / "artifact.txt").write_text("x")
    ctx = ScoreContext(challenge="sentinel", preset="smoke", data_dir=tmp_path, private_dir=tmp_path,
                       scratch_dir=tmp_path / "scratch", time_limit_s=60)
    record = evaluate(load_challenge(folder), tmp_path / "artifact.txt", ctx, tmp_path / "evaluations")
    assert not record.ok and record.score is None and len(record.violations) == 1


def test_a_blind_crew_sees_no_score_in_any_model_request(imported, tmp_path, monkeypatch, api_server):
    into, _ = imported
    competition_zip(tmp_path / "downloads", rows=200)
    monkeypatch.setenv("MLAGENTBENCH_DATA", str(tmp_path / "downloads"))
    data = prepare_data(load_challenge(into / "house-price"), "full")
    ids = [line.split(",")[0] for line in (data.data_dir / "test.csv").read_text().splitlines()[1:]]
    predictions = "Id,SalePrice\n" + "".join(f"{i},123456\n" for i in ids)
    engineer = [call("write_file", path="sub/submission.csv", content=predictions),
                call("evaluate", artifact_path="sub", hypothesis="a constant price"),
                call("report", changed="sub/", commands="none", evaluations=["eval-0001"], learned="scored",
                     proposes="submit eval-0001")]
    supervisor = [call("delegate", role="engineer", subtask="Write a constant prediction and evaluate it.",
                       minutes=2),
                  call("submit", evaluation_id="eval-0001", rationale="the only record")]
    server = api_server({"supervisor": supervisor, "engineer": engineer})
    code, run = start_run(RunRequest("house-price", model=API_MODEL, budget="30m", run_dir=tmp_path / "blind"))
    result = json.loads(run.result.read_text())
    assert code == EXIT_DONE and result["status"] == "submitted" and result["score"] > 0
    score = result["score"]
    requests = [json.dumps(exchange.request) for exchange in server.requests()]
    assert len(requests) >= 4
    for shown in {f"{score:.4f}", f"{score:.2f}", f"{score:.0f}", repr(score), f"{score:,.0f}", "1e+10",
                  "10000000000"}:
        assert not any(shown in text for text in requests), shown
    assert any("blind" in text for text in requests)  # what it was told instead
    assert not any(e.get("score") is not None for e in map(json.loads, run.trace.read_text().splitlines())
                   if e["kind"] == "evaluation")


def test_new_fields_are_validated_and_unmet_requirements_stop_a_run_before_it_starts(imported, tmp_path):
    from challenges.framework.validator import validate
    from crew.errors import CrewError

    into, _ = imported
    toml = into / "loop-speed" / "challenge.toml"
    text = toml.read_text()
    toml.write_text(text.replace('agents = "none"', 'agents = "sometimes"').replace('"pandas"', '"pandas>>1"'))
    problems = [str(p) for p in validate(into / "loop-speed")[1]]
    assert any("[feedback].agents" in p for p in problems) and any("pandas>>1" in p for p in problems)
    toml.write_text(text.replace('"pandas"', '"pandas<0.1"'))
    with pytest.raises(CrewError) as refused:
        start_run(RunRequest("loop-speed", model="baseline", budget="30m", run_dir=tmp_path / "refused"))
    assert "pandas<0.1" in refused.value.message and "--install-requirements" in refused.value.message
    assert not (tmp_path / "refused").exists()
