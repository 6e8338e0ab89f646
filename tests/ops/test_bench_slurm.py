"""`research-crew bench --executor slurm` on the real one-node SLURM cluster (tests/cluster/slurm_up.sh): the same
table as the local executor, cells pending behind a busy node shown as such by `status`, a second bench that
waits on the first one's jobs instead of submitting its own, and cells that SLURM signals, requeues or times out
ending with their run resumed or finished."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.ops.helpers import REPO, cli, invoke, toy_with_baseline
from tests.ops.test_ops_bench import bench_env  # noqa: F401

# On one worker, one at a time: the tests share the one-node cluster, and none may queue behind another's jobs.
pytestmark = [pytest.mark.slurm, pytest.mark.xdist_group("slurm")]


def _until(predicate, what: str, timeout: float = 300.0, every: float = 0.5):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if value := predicate():
            return value
        time.sleep(every)
    raise AssertionError(f"timed out waiting for {what}")


def _squeue(job: str) -> str:
    return subprocess.run(["squeue", "-h", "-j", job, "-o", "%T"], capture_output=True, text=True).stdout.strip()


def _bench(args: list[str], env: dict, log: Path) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "crew.cli", "bench", *args], cwd=REPO, env=env,
                            stdout=log.open("w"), stderr=subprocess.STDOUT)


def _jobs(bench: Path) -> dict[str, str]:
    return {p.stem: json.loads(p.read_text())["job_id"] for p in (bench / "slurm").glob("*.json")}


def _rows(bench: Path) -> list[dict]:
    """The bench's table rows without the wall time, which differs from one run to the next."""
    return [{k: v for k, v in row.items() if k != "time_mean_s"}
            for row in json.loads((bench / "bench_results.json").read_text())]


def test_bench_on_slurm_gives_the_local_table_and_shows_cells_pending(tmp_path, bench_env, slurm_cluster):  # noqa: F811
    env, script = bench_env
    grid = ["--challenges", "toy,toymin", "--runs", "1", "--model", f"replay:{script}", "--budget", "10m"]
    cli("bench", *grid, "--out", str(tmp_path / "local"), env=env, timeout=300)

    # A job holding every CPU of the node: the bench's cells wait behind it.
    cpus = subprocess.run(["sinfo", "-h", "-o", "%c"], capture_output=True, text=True).stdout.split()[0]
    blocker = subprocess.run(["sbatch", "--parsable", f"--partition={slurm_cluster}", f"-c{cpus}", "-o", "/dev/null",
                              "--job-name=crew-test-blocker", "--wrap", "sleep 600"],
                             capture_output=True, text=True, check=True).stdout.strip()
    bench = tmp_path / "slurm"
    args = [*grid, "--out", str(bench), "--executor", "slurm", "--partition", slurm_cluster, "--gpus-per-run", "1",
            "--cpus-per-run", "1", "--time-margin", "5"]
    try:
        _until(lambda: _squeue(blocker) == "RUNNING", "the blocking job to run")
        first = _bench(args, env, tmp_path / "first.log")
        _until(lambda: len(_jobs(bench)) == 4, "the four cells to be submitted")
        status = cli("bench", "status", str(bench), env=env).stdout
        assert len(re.findall(r"pending in queue \(SLURM job \d+: \w+, position \d+\)", status)) == 4, status
        assert "4 pending" in status
        second = _bench(args, env, tmp_path / "second.log")  # the same bench again while the first waits
        _until(lambda: (tmp_path / "second.log").read_text().count("waiting on it") == 4, "the second bench to attach")
    finally:
        subprocess.run(["scancel", blocker], check=True)
    assert first.wait(timeout=300) == 0, (tmp_path / "first.log").read_text()
    assert second.wait(timeout=300) == 0, (tmp_path / "second.log").read_text()
    logs = (tmp_path / "first.log").read_text() + (tmp_path / "second.log").read_text()
    assert logs.count("submitted as SLURM job") == 4  # each cell submitted once, by the first bench

    assert _rows(bench) == _rows(tmp_path / "local")
    assert "| toy | baseline | 1 | 1 | 0/1 (0%) | 0.5000 | 0.5000 |" in (bench / "bench.md").read_text()
    assert "4 finished" in cli("bench", "status", str(bench), env=env).stdout
    assert "4 finished" in cli("status", str(bench), env=env).stdout  # the same, as `status BENCH_DIR`


def test_bench_cell_resumes_after_scancel_term_and_after_a_requeue(tmp_path, bench_env, slurm_cluster):  # noqa: F811
    env, _ = bench_env
    toy_with_baseline(tmp_path / "challenges", "slow", value="0.5", seconds=12)
    bench = tmp_path / "bench"
    args = ["--challenges", "slow", "--runs", "1", "--model", "baseline", "--budget", "10m", "--out", str(bench),
            "--executor", "slurm", "--gpus-per-run", "0", "--cpus-per-run", "1", "--time-margin", "5"]
    cell_log = bench / "logs" / "slow--baseline--1.log"
    run_dir = bench / "runs" / "slow--baseline--1"

    def started(times: int):
        """The run has started its baseline recipe's job `times` times, and the last one is running."""
        def check() -> bool:
            records = sorted((run_dir / "jobs").glob("*/job.json"))
            return len(records) >= times and json.loads(records[-1].read_text())["state"] == "running"
        return check

    first = _bench(args, env, tmp_path / "first.log")
    _until(started(1), "the cell's run to start")
    job = _jobs(bench)["slow--baseline--1"]
    subprocess.run(["scancel", "--signal=TERM", job], check=True)
    assert first.wait(timeout=300) == 3, (tmp_path / "first.log").read_text()  # interrupted, resumable
    assert "interrupted: run the same command again" in (tmp_path / "first.log").read_text()
    assert "slow--baseline--1: interrupted" in cli("bench", "status", str(bench), env=env).stdout

    second = _bench(args, env, tmp_path / "second.log")
    _until(lambda: "(restart 0): crew.cli resume" in cell_log.read_text(), "the cell to be resumed")
    _until(started(2), "the resumed run's job to start")
    job = _jobs(bench)["slow--baseline--1"]
    subprocess.run(["scontrol", "requeue", job], check=True)

    def restarted() -> bool:  # SLURM holds a requeued job for a while (BeginTime); let it start again now
        if "(restart 1)" in cell_log.read_text():
            return True
        subprocess.run(["scontrol", "update", f"jobid={job}", "StartTime=now"], capture_output=True)
        return False

    _until(restarted, "the requeued job to start again", every=2.0)
    assert second.wait(timeout=300) == 0, (tmp_path / "second.log").read_text() + cell_log.read_text()

    text = cell_log.read_text()
    assert "(restart 1): crew.cli resume" in text  # the requeued job resumed the run, not started it over
    events = [json.loads(line)["kind"] for line in (run_dir / "trace.jsonl").read_text().splitlines()]
    assert events.count("run_started") == 1 and events.count("resumed") == 2
    assert not list(run_dir.parent.glob("*.aborted-*"))
    result = json.loads((run_dir / "result.json").read_text())
    assert result["status"] == "submitted" and not result.get("resumable")


def test_doctor_and_run_check_the_cluster(tmp_path, bench_env, slurm_cluster):  # noqa: F811
    shared = tmp_path / "shared"
    table = invoke("doctor", "toy", "--preset", "smoke", "--jobs", "slurm", "--partition", slurm_cluster,
                   "--shared", str(shared)).output
    for line in ("sinfo answers", f"partition {slurm_cluster}: 1 node(s), up", "GPU(s) per node",
                 "visible from a compute"):
        assert line in table, table
    bad = invoke("doctor", "toy", "--preset", "smoke", "--executor", "slurm", "--partition", "nosuch", code=1).output
    assert "1 check(s) failed: slurm" in bad and "'nosuch'" in bad
    refused = invoke("run", "toy", "--preset", "smoke", "--jobs", "slurm", "--partition", "nosuch",
                     "--run-dir", str(tmp_path / "never"), code=2).output
    assert "no partition 'nosuch'" in refused and not (tmp_path / "never").exists()


def test_a_cell_longer_than_its_budget_ends_with_a_result_before_its_slurm_time_limit(tmp_path, bench_env,  # noqa: F811
                                                                                     slurm_cluster):
    env, _ = bench_env
    toy_with_baseline(tmp_path / "challenges", "endless", value="0.5", seconds=3000)  # never done in time
    bench = tmp_path / "bench"
    result = cli("bench", "--challenges", "endless", "--runs", "1", "--model", "baseline", "--budget", "1m",
                 "--out", str(bench), "--executor", "slurm", "--gpus-per-run", "0", "--cpus-per-run", "1",
                 "--time-margin", "0.5", env=env, timeout=400)  # SLURM's limit: 1 min + 0.5, in whole minutes
    assert "| endless | baseline | 1 | 1 |" in result.stdout  # finished: the run ended with its result
    run_dir = bench / "runs" / "endless--baseline--1"
    outcome = json.loads((run_dir / "result.json").read_text())
    assert not outcome.get("resumable"), outcome
    log = (bench / "logs" / "endless--baseline--1.log").read_text()
    assert "--time=" not in log and "DUE TO TIME LIMIT" not in log, log  # the run's clock ended it first
    assert "1 finished" in cli("status", str(bench), env=env).stdout


def test_a_submission_slurm_refuses_is_a_clear_error(tmp_path, bench_env, slurm_cluster):  # noqa: F811
    env, _ = bench_env
    result = cli("bench", "--challenges", "toy", "--runs", "1", "--model", "baseline", "--out", str(tmp_path / "b"),
                 "--executor", "slurm", "--gpus-per-run", "99", "--cpus-per-run", "1", env=env, check=False)
    output = result.stdout + result.stderr
    assert result.returncode == 2, output
    assert "SLURM refused toy--baseline--1" in output and "hint:" in output


def test_a_cell_the_partition_can_never_run_is_cancelled_with_a_clear_error(tmp_path, bench_env,  # noqa: F811
                                                                            slurm_cluster):
    env, _ = bench_env
    result = cli("bench", "--challenges", "toy", "--runs", "1", "--model", "baseline", "--out", str(tmp_path / "b"),
                 "--executor", "slurm", "--gpus-per-run", "0", "--cpus-per-run", "4096", env=env, check=False)
    output = result.stdout + result.stderr
    assert result.returncode == 2, output
    assert "SLURM cannot run toy--baseline--1" in output and "PartitionConfig" in output and "hint:" in output
    job = json.loads((tmp_path / "b" / "slurm" / "toy--baseline--1.json").read_text())["job_id"]
    assert _squeue(job) == ""  # cancelled, not left waiting forever
