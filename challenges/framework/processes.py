"""Process groups for the challenges package: the scorer subprocess and tools a scorer runs (e.g. Lean).

A process started here leads its own group, so stopping it stops its children too. The crew and the
toolkit use toolkit.procs; challenges/ imports nothing of ours (DESIGN.md), so this is its one copy.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

KILL_GRACE_S = 5.0


def start_group(argv: list[str], cwd: Path | None = None, **popen: object) -> subprocess.Popen:
    """Start `argv` as the leader of a new process group (its own session)."""
    return subprocess.Popen(argv, cwd=cwd, start_new_session=True, stdin=subprocess.DEVNULL, **popen)


def stop_group(proc: subprocess.Popen, grace_s: float = KILL_GRACE_S) -> None:
    """SIGTERM the process's whole group, then SIGKILL whatever is left after `grace_s`; reap the leader."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            break
        deadline = time.monotonic() + grace_s
        while time.monotonic() < deadline and group_alive(proc.pid):
            proc.poll()
            time.sleep(0.05)
    proc.wait()


def kill_group(pgid: int) -> None:
    """SIGKILL a group at once (a leftover of a crashed run, not our child)."""
    try:
        os.killpg(pgid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
        return True
    except ProcessLookupError:
        return False


def run_group(argv: list[str], cwd: Path | None, timeout_s: float) -> tuple[int | None, str]:
    """Run to completion or `timeout_s`; return (exit code, or None when stopped at the timeout; the output)."""
    proc = start_group(argv, cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        output, _ = proc.communicate(timeout=max(0.0, timeout_s))
        code: int | None = proc.returncode
    except subprocess.TimeoutExpired:
        stop_group(proc, grace_s=1.0)
        output, code = proc.stdout.read() if proc.stdout else "", None
    return code, output
