"""`status` on a running and on a finished run, `runs`, and the plain log lines of `run` without a terminal."""

from __future__ import annotations

import json
import subprocess
import sys
import time

from tests.ops.helpers import REPO, invoke, ops_env, toy_with_baseline


def _wait_for(predicate, timeout_s: float = 60.0, what: str = "") -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.2)


def _job_started(run_dir) -> bool:
    trace = run_dir / "trace.jsonl"
    return trace.is_file() and any(json.loads(line)["kind"] == "job_started"
                                   for line in trace.read_text().splitlines() if line.strip())


def test_status_of_a_running_then_finished_run_and_the_runs_list(tmp_path):
    toy_with_baseline(tmp_path / "challenges", "slowtoy", seconds=3.0)
    env = ops_env(tmp_path)
    run_dir = tmp_path / "runs" / "slow-1"
    # Not a terminal: the run prints plain lines (and --quiet asks for them anyway).
    proc = subprocess.Popen([sys.executable, "-m", "crew.cli", "run", "slowtoy", "--preset", "smoke", "--model",
                             "baseline", "--budget", "2m", "--run-dir", str(run_dir)], cwd=REPO, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        _wait_for(lambda: _job_started(run_dir) and (run_dir / "jobs").is_dir()
                  and any((run_dir / "jobs").glob("*/log")), what="the baseline job to start")
        _wait_for(lambda: "progress: 2/5" in next((run_dir / "jobs").glob("*/log")).read_text(),
                  what="the recipe's progress")
        running = invoke("status", str(run_dir)).output
        assert "running" in running and "phase       work" in running
        assert "of 2m00s" in running and "reserve 30s" in running
        assert "none yet" in running  # no evaluation yet
        assert "(40%)" in running or "(60%)" in running or "(80%)" in running  # the job's progress
    finally:
        output, _ = proc.communicate(timeout=90)
    assert proc.returncode == 0, output
    assert "job " in output and "evaluation eval-0001: score 0.5000" in output  # plain lines from the watcher

    finished = invoke("status", str(run_dir)).output
    assert "finished · submitted" in finished and "phase       done" in finished
    assert "value = 0.5000 (full set) from eval-0001" in finished and "of 2m00s" in finished

    listing = invoke("runs", str(tmp_path / "runs")).output
    assert "slow-1" in listing and "slowtoy" in listing and "submitted" in listing and "0.5000" in listing


def test_status_and_runs_name_what_is_wrong(tmp_path):
    missing = invoke("status", str(tmp_path), code=2).output
    assert "not a run directory" in missing and "hint:" in missing
    assert "is not a folder" in invoke("runs", str(tmp_path / "nope"), code=2).output


def test_the_panel_reads_elapsed_time_and_reserve_from_the_run_s_clock(tmp_path):
    """On the active clock a run that was down for an hour has used what its clock saved, not the wall time
    since its start; the reserve shown is the one the run keeps (it used to be recomputed from the preset)."""
    from crew.reporting.snapshot import read_snapshot
    from crew.run.clock import Clock

    run = tmp_path / "run"
    (run / "state").mkdir(parents=True)
    started = time.time() - 3600  # an hour ago; the run was down for most of it
    (run / "run.toml").write_text(f'run_id = "r"\nbudget_s = 7200.0\nstarted_at = {started}\n'
                                  'budget_clock = "active"\n')
    clock = Clock(budget_s=7200.0, started_at=time.time() - 600, mode="active", scoring_s=300.0)
    clock.save(run / "state")
    snap = read_snapshot(run)
    assert 600 <= snap.elapsed_s < 660, snap.elapsed_s
    assert snap.reserve_s == clock.wrapup_s == 1.25 * 300 + 72  # the scoring margin and the final 1%
