"""`research-crew bench`: two toy challenges, two repeats, the baseline policy and a replayed crew; interrupted
and run again, it finishes only what was missing; SLURM options checked before anything is submitted (the slurm
executor itself: test_bench_slurm.py, on a real cluster)."""

from __future__ import annotations

import csv
import json
import signal
import subprocess
import sys
import time

import pytest

from tests.ops.helpers import REPO, cli, crew_script, invoke, ops_env, toy_with_baseline


@pytest.fixture
def bench_env(tmp_path, monkeypatch):
    toy_with_baseline(tmp_path / "challenges", "toy", value="0.5")
    toy_with_baseline(tmp_path / "challenges", "toymin", direction="min", value="2.0")
    env = ops_env(tmp_path)
    for key in ("RESEARCH_CREW_CHALLENGE_PATH", "RESEARCH_CREW_MEMORY_DIR", "RESEARCH_CREW_CACHE"):
        monkeypatch.setenv(key, env[key])
    return env, crew_script(tmp_path / "crew.yaml")


def _finished(bench) -> dict[str, float]:
    """Cells whose run ended, with their result.json's mtime (a rerun would rewrite it). A run stopped by the
    bench may have submitted its best record already, but it is resumable: not finished."""
    results = {p: json.loads(p.read_text()) for p in (bench / "runs").glob("*/result.json")}
    return {p.parent.name: p.stat().st_mtime for p, r in results.items()
            if r["status"] == "submitted" and not r.get("resumable")}


def test_bench_interrupted_then_rerun_finishes_only_what_was_missing(tmp_path, bench_env):
    env, script = bench_env
    bench = tmp_path / "bench"
    # The budget is wall time (downtime counts, as in the competitions): a cell stopped by the first bench goes on
    # losing time until the second resumes it, so under load a 2-minute budget ran out before the resumed crew
    # could evaluate (CI: 7 of 8 finished). The runs end when the replayed crew submits, long before 10 minutes.
    args = ["bench", "--challenges", "toy,toymin", "--runs", "2", "--model", f"replay:{script}", "--budget", "10m",
            "--out", str(bench), "--parallel", "2"]
    first = subprocess.Popen([sys.executable, "-m", "crew.cli", *args], cwd=REPO, env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True)
    deadline = time.monotonic() + 90
    while len(_finished(bench)) < 3 and first.poll() is None and time.monotonic() < deadline:
        time.sleep(0.2)
    first.send_signal(signal.SIGTERM)
    output, _ = first.communicate(timeout=120)
    assert first.returncode == 3, output  # interrupted, resumable
    assert "interrupted: run the same command again" in output
    done_before = _finished(bench)
    assert 3 <= len(done_before) < 8

    second = cli(*args, env=env, timeout=180)
    assert f"{len(done_before)} already finished" in second.stdout
    assert {k: v for k, v in _finished(bench).items() if k in done_before} == done_before  # not run again
    statuses = {p.parent.name: json.loads(p.read_text()) for p in (bench / "runs").glob("*/result.json")}
    assert len(_finished(bench)) == 8, (second.stdout, {k: (r["status"], r.get("resumable"), r.get("note"))
                                                       for k, r in statuses.items()})

    rows = {(r["challenge"], r["model"]): r for r in json.loads((bench / "bench_results.json").read_text())}
    crew = f"replay:{script}"
    assert set(rows) == {(c, m) for c in ("toy", "toymin") for m in ("baseline", crew)}
    assert rows[("toy", "baseline")]["baseline_score"] == 0.5 and rows[("toymin", "baseline")]["baseline_score"] == 2.0
    for challenge in ("toy", "toymin"):
        assert rows[(challenge, crew)]["success_rate"] == 1.0  # 0.75 beats 0.5 (max) and 2.0 (min) by >10%
        assert rows[(challenge, crew)]["score_mean"] == 0.75 and rows[(challenge, crew)]["score_se"] == 0.0
        assert rows[(challenge, "baseline")]["success_rate"] == 0.0 and rows[(challenge, "baseline")]["runs"] == 2
    assert "| toymin | baseline | 2 | 2 | 0/2 (0%) | 2.0000 ± 0.0000 |" in (bench / "bench.md").read_text()
    assert len(list(csv.DictReader((bench / "bench.csv").open()))) == 4
    assert "| toy | baseline |" in second.stdout  # the table is printed too
    status = invoke("bench", "status", str(bench)).output
    assert "toymin--baseline--2: finished" in status and status.rstrip().endswith("8 finished")


@pytest.mark.parametrize("options, message", [
    (["--gpus-per-run", "-1"], "--gpus-per-run must be at least 0"),
    (["--partition", "gpu;rm -rf"], "is not a SLURM partition name"),
    (["--time-margin", "-5"], "--time-margin must not be negative"),
])
def test_slurm_options_are_checked_before_anything_is_submitted(tmp_path, bench_env, options, message):
    bench = tmp_path / "never"
    result = invoke("bench", "--challenges", "toy", "--runs", "1", "--model", "baseline", "--out", str(bench),
                    "--executor", "slurm", *options, code=2)
    assert message in result.output and "hint:" in result.output
    assert not bench.exists()


def test_bench_names_an_unknown_challenge_before_running_anything(tmp_path, bench_env):
    result = invoke("bench", "--challenges", "toy,nosuch", "--model", "baseline", "--out", str(tmp_path / "b"), code=2)
    assert "nosuch" in result.output and not (tmp_path / "b").exists()


def test_slurm_executor_names_a_missing_sbatch(tmp_path, bench_env, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))  # no SLURM client here
    result = invoke("bench", "--challenges", "toy", "--runs", "1", "--model", "baseline",
                    "--out", str(tmp_path / "never"), "--executor", "slurm", code=2)
    assert "needs SLURM's sbatch" in result.output and not (tmp_path / "never").exists()


def test_bench_status_needs_a_bench_folder_and_a_bench_needs_its_options(tmp_path, bench_env):
    result = invoke("bench", "status", str(tmp_path), code=2)
    assert f"{tmp_path} is not a bench folder (it has no bench.json)" in result.output and "hint:" in result.output
    assert "bench: missing option --challenges" in invoke("bench", code=2).output
    result = invoke("bench", "--challenges", "toy", "--out", str(tmp_path / "b"), code=2)
    assert "bench: missing option --model" in result.output and not (tmp_path / "b").exists()
