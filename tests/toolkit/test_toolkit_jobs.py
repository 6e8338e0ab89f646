"""Background jobs with real processes: detached, re-attachable, stoppable, bounded by deadlines."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from toolkit import JobStatus, Toolkit
from toolkit.jobrecord import JobRecord
from toolkit.progress import parse_progress

# A training stand-in: prints progress, saves a "checkpoint" when asked to stop.
TRAINER = (
    "python3 -c '\n"
    "import signal, sys, time\n"
    "def stop(*_):\n"
    '    print("saving checkpoint", flush=True); sys.exit(0)\n'
    "signal.signal(signal.SIGTERM, stop)\n"
    "for i in range(1, 100001):\n"
    '    print(f"progress: {i}/100000", flush=True); time.sleep(0.05)\n'
    "'"
)


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def _until(predicate, timeout: float = 10.0, every: float = 0.05) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(every)
    return predicate()


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    return tmp_path / "run"


def test_job_survives_its_starter_and_a_fresh_toolkit_reattaches(run_dir: Path, sandbox) -> None:
    starter = (
        "import sys, time\n"
        "from pathlib import Path\n"
        f"sys.path.insert(0, {str(Path(__file__).resolve().parents[2])!r})\n"
        "from toolkit import Toolkit\n"
        "from toolkit.sandbox import SandboxPolicy\n"
        f"tk = Toolkit(Path({str(run_dir)!r}), sandbox={'SandboxPolicy()' if sandbox else 'None'})\n"
        f"status = tk.start_job({TRAINER!r}, 'train')\n"
        "print(status.record.id, flush=True)\n"
        "time.sleep(1000)\n"
    )
    parent = subprocess.Popen([sys.executable, "-c", starter], stdout=subprocess.PIPE, text=True)
    assert parent.stdout is not None
    job_id = parent.stdout.readline().strip()
    assert job_id, "the starter printed no job id"
    parent.send_signal(signal.SIGKILL)
    parent.wait(timeout=5)

    tk = Toolkit(run_dir, job_grace_s=5, sandbox=sandbox)
    status = tk.job_status(job_id)
    assert isinstance(status, JobStatus) and status.running, str(status)
    pid = status.record.pid
    assert pid is not None and _alive(pid)
    assert _until(lambda: "progress: 3/" in tk.tail_job(job_id, 5))
    status = tk.job_status(job_id)
    assert status.progress is not None and status.progress.total == 100000
    assert status.progress.eta_s is not None and "ETA" in str(status)
    assert job_id in tk.list_jobs() and "running" in tk.list_jobs()

    stopped = tk.stop_job(job_id)
    assert isinstance(stopped, JobStatus)
    assert stopped.state == "stopped" and "request" in (stopped.record.end_reason or ""), str(stopped)
    assert not _alive(pid)
    assert "saving checkpoint" in tk.tail_job(job_id, 5)  # SIGTERM first: it could save


def test_fresh_toolkit_learns_the_exit_status(run_dir: Path, sandbox) -> None:
    status = Toolkit(run_dir, sandbox=sandbox).start_job("echo hello; exit 7", "fails")
    assert isinstance(status, JobStatus)
    fresh = Toolkit(run_dir, sandbox=sandbox)
    assert _until(lambda: not fresh.job_status(status.record.id).running)
    final = fresh.job_status(status.record.id)
    assert final.state == "exited" and final.record.exit_code == 7
    assert "exit code 7" in str(final) and "hello" in fresh.tail_job(status.record.id)
    saved = json.loads((run_dir / "jobs" / status.record.id / "job.json").read_text())
    assert saved["exit_code"] == 7 and saved["pid"] and saved["start_time"] and saved["command"]


def test_job_past_its_deadline_is_stopped_without_being_asked(run_dir: Path, sandbox, fixed_budget) -> None:
    tk = Toolkit(run_dir, clock=fixed_budget(1.0), job_grace_s=1, sandbox=sandbox)
    status = tk.start_job("sleep 1000", "too-long")
    assert isinstance(status, JobStatus) and status.record.deadline is not None
    pid = status.record.pid
    assert _until(lambda: not tk.job_status(status.record.id).running, timeout=8)
    final = tk.job_status(status.record.id)
    assert final.state == "stopped" and final.record.end_reason == "deadline reached"
    assert pid is not None and not _alive(pid)


def test_deadline_holds_even_when_the_runner_died(run_dir: Path, sandbox) -> None:
    tk = Toolkit(run_dir, job_grace_s=0.5, sandbox=sandbox)
    status = tk.start_job("sleep 1000", "orphan", timeout_s=2.0)  # SIGTERM due 0.5 s before the deadline
    runner = json.loads((run_dir / "jobs" / status.record.id / "runner.json").read_text())
    os.kill(runner["pid"], signal.SIGKILL)
    assert _until(lambda: not _alive(runner["pid"]))
    assert _alive(status.record.pid) and tk.job_status(status.record.id).running
    time.sleep(max(0.0, status.record.deadline - 0.5 - time.time()) + 0.1)
    final = tk.job_status(status.record.id)
    assert final.state == "stopped" and final.record.end_reason == "deadline reached"
    assert not _alive(status.record.pid) and time.time() < status.record.deadline + 1.0


def test_a_job_is_gone_by_its_deadline_even_if_it_ignores_sigterm(run_dir: Path, sandbox) -> None:
    tk = Toolkit(run_dir, job_grace_s=1.0, sandbox=sandbox)
    status = tk.start_job("trap '' TERM; while true; do sleep 0.1; done", "stubborn", timeout_s=1.5)
    assert _until(lambda: not tk.job_status(status.record.id).running, timeout=6)
    assert not _alive(status.record.pid)
    assert tk.job_status(status.record.id).record.ended <= status.record.deadline + 0.5


def test_a_reused_pid_is_not_mistaken_for_the_job(run_dir: Path) -> None:
    # A record whose pid now belongs to another live process (this test) with a different start time.
    job_dir = run_dir / "jobs" / "001-ghost"
    job_dir.mkdir(parents=True)
    (job_dir / "log").write_text("")
    JobRecord(
        id="001-ghost",
        name="ghost",
        command="sleep 1",
        cwd=str(run_dir),
        created=time.time() - 100,
        state="running",
        pid=os.getpid(),
        start_time=psutil.Process().create_time() - 50,
        started=time.time() - 100,
    ).save(job_dir)
    tk = Toolkit(run_dir)
    status = tk.job_status("001-ghost")
    assert status.state == "lost" and not status.running
    assert tk.stop_job("001-ghost").state == "lost"  # and, evidently, we were not killed


def test_stop_escalates_to_sigkill_for_a_job_ignoring_sigterm(run_dir: Path, sandbox) -> None:
    tk = Toolkit(run_dir, job_grace_s=0.5, sandbox=sandbox)
    status = tk.start_job("trap '' TERM; echo ready; while true; do sleep 0.1; done", "stubborn")
    assert _until(lambda: "ready" in tk.tail_job(status.record.id, 1))
    started = time.monotonic()
    final = tk.stop_job(status.record.id)
    assert final.state == "stopped" and time.monotonic() - started < 60  # not forever; generous on a busy machine
    assert not _alive(status.record.pid)


def test_unknown_and_invalid_job_ids_are_messages(run_dir: Path) -> None:
    tk = Toolkit(run_dir)
    assert "No background jobs" in tk.list_jobs()
    for bad in ("nope", "../etc", ""):
        assert "No job" in str(tk.job_status(bad))
        assert "No job" in tk.tail_job(bad)
        assert "No job" in str(tk.stop_job(bad))


def test_jobs_see_no_secrets(run_dir: Path, sandbox, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-job-secret")
    tk = Toolkit(run_dir, sandbox=sandbox)
    status = tk.start_job("env", "env")
    assert _until(lambda: not tk.job_status(status.record.id).running)
    assert "sk-job-secret" not in tk.tail_job(status.record.id, 500)
    assert "PATH=" in tk.tail_job(status.record.id, 500)


def test_parse_tqdm_bar_with_carriage_returns() -> None:
    log = (
        "Epoch 1\n"
        "  9%|▉         | 90/1000 [00:09<01:31,  9.95it/s]\r"
        " 45%|████▌     | 450/1000 [00:45<00:55,  9.98it/s]\r"
    )
    progress = parse_progress(log, elapsed_s=60)
    assert progress is not None and progress.source == "tqdm"
    assert (progress.done, progress.total, progress.eta_s) == (450, 1000, 55)
    assert "450/1000 (45%)" in str(progress) and "ETA 55s" in str(progress)


def test_parse_plain_progress_line_extrapolates_eta() -> None:
    progress = parse_progress("loss 3.1\nprogress: 25/100\nloss 2.9\n", elapsed_s=100)
    assert progress is not None and progress.source == "progress line"
    assert progress.eta_s == pytest.approx(300)


def test_the_jobs_own_progress_lines_win_over_a_later_tqdm_bar_and_none_without_one() -> None:
    """A recipe's `progress: 60/60` stays its progress when a model-saving bar (1/1) follows it."""
    text = "progress: 60/60\nSaving: 100%|██████████| 1/1 [00:00<00:00,  3.1it/s]\n"
    assert (parse_progress(text).done, parse_progress(text).total) == (60, 60)
    assert parse_progress(text).source == "progress line"
    assert parse_progress(text + "progress: 9/10\n").done == 9
    assert parse_progress("no progress here") is None
    assert parse_progress("10%| | 1.2k/12.0k [01:00<09:00, 20it/s]").total == 12000


def test_each_job_gets_free_gpus_of_its_own_and_a_busy_gpu_is_refused_with_its_holder(run_dir: Path) -> None:
    # The run was handed GPUs 3 and 5 (a bench cell's CUDA_VISIBLE_DEVICES): jobs get those ids, never 0.
    # No GPU is needed to check the assignment: each job prints what it was given.
    tk = Toolkit(run_dir, devices=["3", "5"])
    show = 'echo "gpus=$CUDA_VISIBLE_DEVICES"; sleep 30'
    first = tk.start_job(show, "first")
    second = tk.start_job(show, "second", gpus=1)
    assert _until(lambda: "gpus=3" in tk.tail_job(first.record.id) and "gpus=5" in tk.tail_job(second.record.id))
    assert first.record.devices == ["3"] and "GPU 3" in first.summary_line()
    refused = tk.start_job(show, "third")
    assert refused == (f"Not started: the job asks for 1 GPU(s) and 0 are free (GPU 3: {first.record.id}, GPU 5: "
                       f"{second.record.id}); wait for a job to end (wait_for_job), stop one, or ask for fewer GPUs.")
    assert tk.start_job(show, "too-big", gpus=3).startswith("Not started: the job asks for 3 GPU(s) and this run has 2")
    assert "3 (" in tk.jobs.devices_line() and "5 (" in tk.jobs.devices_line()
    tk.stop_job(first.record.id)
    both = tk.start_job(show.replace("sleep 30", "true"), "after", gpus=1)
    assert both.record.devices == ["3"]  # freed by the stopped job
    tk.stop_job(second.record.id)


def test_without_gpus_jobs_run_on_the_cpu_and_asking_for_one_says_so(run_dir: Path) -> None:
    tk = Toolkit(run_dir)
    plain = tk.start_job("true", "plain")
    assert plain.record.devices is None
    assert tk.start_job("true", "gpu", gpus=1) == ("Not started: the job asks for 1 GPU(s) and this run has none; "
                                                   "start it without gpus: it runs on the CPU.")
    assert tk.jobs.devices_line() == "This run has no GPU: jobs run on the CPU."
