"""Bounded commands with real processes: timeouts kill whole groups, output stays capped, no secrets."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from toolkit import CommandResult, Toolkit, is_secret_name, kill_process_group, scrubbed_env

# The grandchild is found by a token on its command line: inside a sandbox its own pid is the pid
# namespace's, not the one this test sees.
IGNORES_TERM = (
    f"{sys.executable} -c 'import signal,time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
    'open("grandchild.started","w").write("yes"); time.sleep(1000)\' {token}'
)


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def _wait_for(path: Path, timeout: float = 10.0) -> str:
    until = time.monotonic() + timeout
    while time.monotonic() < until:
        if path.exists() and path.read_text().strip():
            return path.read_text().strip()
        time.sleep(0.02)
    raise AssertionError(f"{path} never appeared")


def _with_token(token: str) -> list[int]:
    """Live pids whose command line holds `token`."""
    found = []
    for proc in psutil.process_iter(["pid", "cmdline"]):
        if token in (proc.info["cmdline"] or []) and _alive(proc.info["pid"]):
            found.append(proc.info["pid"])
    return found


@pytest.fixture
def tk(tmp_path: Path, sandbox) -> Toolkit:
    return Toolkit(tmp_path / "run", command_grace_s=1.0, max_output_chars=2_000, sandbox=sandbox)


def test_result_reports_exit_code_duration_and_log(tk: Toolkit) -> None:
    result = tk.run_bash("echo out; echo err >&2; exit 3", timeout_s=30)
    assert isinstance(result, CommandResult)
    assert result.exit_code == 3 and not result.timed_out
    assert result.log_path.is_file() and result.log_path.parent == tk.run_dir / "logs"
    assert "out" in result.output and "err" in result.output
    text = str(result)
    shown = f"/sandbox/logs/{result.log_path.name}" if tk.sandbox is not None else str(result.log_path)
    assert "exit code 3" in text and f"log: {shown}]" in text and "s ·" in text  # the path the command sees


def test_commands_run_in_the_workspace(tk: Toolkit) -> None:
    result = tk.run_bash("pwd", timeout_s=30)  # inside the sandbox at a path that names no host folder
    assert result.output.strip() == (str(tk.workspace) if tk.sandbox is None else "/sandbox/workspace")


def test_sleep_with_a_short_timeout_returns_quickly(tk: Toolkit) -> None:
    started = time.monotonic()
    result = tk.run_bash("sleep 1000", timeout_s=2)
    elapsed = time.monotonic() - started
    assert result.timed_out and elapsed < 60.0, elapsed  # not the 1000 s; generous for a busy machine
    assert "TIMED OUT" in str(result)


def test_timeout_kills_grandchild_that_ignores_sigterm(tk: Toolkit) -> None:
    token = f"grandchild-{os.getpid()}-timeout"
    result = tk.run_bash(f"{IGNORES_TERM.format(token=token)} & sleep 1000", timeout_s=1.5)
    assert result.timed_out
    _wait_for(tk.workspace / "grandchild.started")
    assert _with_token(token) == [], "the SIGTERM-ignoring grandchild outlived the timeout"


def test_background_leftovers_are_stopped_after_a_normal_exit(tk: Toolkit, sandbox) -> None:
    token = f"grandchild-{os.getpid()}-leftover"
    result = tk.run_bash(f"{IGNORES_TERM.format(token=token)} & sleep 0.5; echo done", timeout_s=30)
    assert result.exit_code == 0 and not result.timed_out
    _wait_for(tk.workspace / "grandchild.started")
    assert _with_token(token) == []
    if sandbox is None:  # in the sandbox they die with its pid namespace, often before they can be counted
        assert result.leftovers_killed >= 1 and "start_job" in str(result)


def test_timeout_is_capped_by_the_budget(tmp_path: Path, fixed_budget, sandbox) -> None:
    tk = Toolkit(tmp_path / "run", clock=fixed_budget(1.0), command_grace_s=0.5, sandbox=sandbox)
    started = time.monotonic()
    result = tk.run_bash("sleep 30", timeout_s=600)
    assert result.timed_out and time.monotonic() - started < 3.5
    assert "budget" in str(result)


def test_spent_budget_runs_nothing(tmp_path: Path, fixed_budget) -> None:
    tk = Toolkit(tmp_path / "run", clock=fixed_budget(0.0))
    answer = tk.run_bash("touch ran", timeout_s=10)
    assert "budget is spent" in str(answer) and not (tk.workspace / "ran").exists()


def test_huge_output_keeps_memory_flat_and_observation_capped(tk: Toolkit) -> None:
    me = psutil.Process()
    before = me.memory_info().rss
    result = tk.run_bash("yes 0123456789abcdefghijklmnopqrstuvwxyz | head -c 500000000", timeout_s=120)
    grown = me.memory_info().rss - before
    try:
        assert result.exit_code == 0
        assert result.output_bytes == 500_000_000
        assert grown < 50 * 1024 * 1024, f"resident memory grew by {grown / 2**20:.1f} MiB"
        assert len(str(result)) < tk.max_output_chars + 600
        assert "bytes cut" in str(result) and str(result.log_path) in str(result)
    finally:
        result.log_path.unlink()


def test_run_python_passes_arguments_and_refuses_outside_paths(tk: Toolkit) -> None:
    tk.write_file("echo_args.py", "import sys\nprint(sys.argv[1:])\n")
    result = tk.run_python("echo_args.py", ["a b", "--flag"], timeout_s=30)
    assert "['a b', '--flag']" in result.output
    assert str(tk.run_python("/etc/hostname")).startswith("Refused")
    assert "not a file" in str(tk.run_python("missing.py"))


def test_secrets_are_absent_from_a_commands_environment(tk: Toolkit, monkeypatch: pytest.MonkeyPatch) -> None:
    secrets = {
        "ANTHROPIC_API_KEY": "sk-ant-x1",
        "OPENAI_API_KEY": "sk-x2",
        "GITHUB_TOKEN": "ghp_x3",
        "HF_TOKEN": "hf_x4",
        "AWS_SECRET_ACCESS_KEY": "x5",
        "DB_PASSWORD": "x6",
        "MY_SERVICE_APIKEY": "x7",
        "SLACK_BOT_TOKEN": "x8",
        "CLIENT_SECRET": "x9",
    }
    for name, value in secrets.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("TOKENIZERS_PARALLELISM", "false")
    result = tk.run_bash("env", timeout_s=30)
    for name, value in secrets.items():
        assert name not in result.output and value not in result.output
    assert "TOKENIZERS_PARALLELISM=false" in result.output
    assert "PYTHONUNBUFFERED=1" in result.output


@pytest.mark.parametrize(
    "name, secret",
    [
        ("ANTHROPIC_API_KEY", True),
        ("hf_token", True),
        ("GH_TOKEN", True),
        ("PGPASSWORD", True),
        ("SSH_PASSPHRASE", True),
        ("GOOGLE_APPLICATION_CREDENTIALS", True),
        ("WANDB_API_KEY", True),
        ("PATH", False),
        ("HOME", False),
        ("PWD", False),
        ("TOKENIZERS_PARALLELISM", False),
        ("CUDA_VISIBLE_DEVICES", False),
        ("KEYBOARD_LAYOUT", False),
    ],
)
def test_secret_name_heuristic(name: str, secret: bool) -> None:
    assert is_secret_name(name) is secret


def test_scrubbed_env_is_reusable() -> None:
    env = scrubbed_env({"A": "1", "OPENAI_API_KEY": "x", "B_TOKEN": "y"}, extra={"C": "3"})
    assert env == {"A": "1", "C": "3"}


def test_kill_process_group_escalates_to_sigkill() -> None:
    proc = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import signal,time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
            "print('ready', flush=True); time.sleep(1000)",
        ],
        start_new_session=True,
        stdout=subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == b"ready"
    started = time.monotonic()
    assert kill_process_group(proc.pid, grace_s=0.5) is False  # SIGTERM was not enough
    assert proc.wait(timeout=5) == -signal.SIGKILL
    assert time.monotonic() - started < 4


def test_kill_process_group_is_quick_when_sigterm_works() -> None:
    proc = subprocess.Popen(["sleep", "1000"], start_new_session=True)
    assert kill_process_group(proc.pid, grace_s=10) is True
    assert proc.wait(timeout=5) == -signal.SIGTERM


def test_bad_timeout_is_a_message(tk: Toolkit) -> None:
    assert "positive" in str(tk.run_bash("true", timeout_s=0))
