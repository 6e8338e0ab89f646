"""Process-group helpers: identify a process by (pid, start time) and end a whole group gracefully."""

from __future__ import annotations

import logging
import os
import signal
import time

import psutil

log = logging.getLogger(__name__)

# psutil derives create_time from boot time and clock ticks; two reads of one process agree far
# better than this, while a reused pid started at least one tick later.
_START_TIME_TOLERANCE_S = 0.005


def process_start_time(pid: int, *, allow_zombie: bool = False) -> float | None:
    """The process's start time (epoch seconds), or None when there is no such live process.

    `allow_zombie` is for a parent reading its own child, which may already have exited unreaped.
    """
    try:
        proc = psutil.Process(pid)
        if not allow_zombie and proc.status() == psutil.STATUS_ZOMBIE:
            return None
        return proc.create_time()
    except (psutil.NoSuchProcess, psutil.AccessDenied, ValueError):
        return None


def is_same_process(pid: int, start_time: float) -> bool:
    """True when `pid` is alive and is the process that started at `start_time` (not a reused pid)."""
    now = process_start_time(pid)
    return now is not None and abs(now - start_time) <= _START_TIME_TOLERANCE_S


def group_members(pgid: int) -> list[int]:
    """Live (non-zombie) pids in process group `pgid`."""
    try:
        os.killpg(pgid, 0)  # cheap check first: no process at all, not even a zombie
    except ProcessLookupError:
        return []
    except PermissionError:
        pass
    members = []
    for proc in psutil.process_iter(["pid", "status"]):
        try:
            if proc.info["status"] == psutil.STATUS_ZOMBIE:
                continue
            if os.getpgid(proc.info["pid"]) == pgid:
                members.append(proc.info["pid"])
        except (ProcessLookupError, psutil.Error):
            continue
    return members


def _signal_group(pgid: int, sig: signal.Signals) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def kill_process_group(pgid: int, grace_s: float = 2.0, *, poll_s: float = 0.05) -> bool:
    """End every process in group `pgid`: SIGTERM, wait up to `grace_s`, then SIGKILL the rest.

    Returns True when SIGTERM was enough. Zombies count as gone: a child of ours must still be
    reaped by its Popen, and orphans are reaped (or not) by whatever runs as pid 1.
    """
    if not group_members(pgid):
        return True
    _signal_group(pgid, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    wait = min(0.002, poll_s)  # most groups are gone within milliseconds; a slow one is polled less often
    while time.monotonic() < deadline:
        if not group_members(pgid):
            return True
        time.sleep(wait)
        wait = min(wait * 2, poll_s)
    log.info("process group %d outlived SIGTERM by %.1fs; sending SIGKILL", pgid, grace_s)
    _signal_group(pgid, signal.SIGKILL)
    # SIGKILL cannot be ignored, but the kernel needs a moment to tear processes down.
    until = time.monotonic() + 2.0
    while group_members(pgid) and time.monotonic() < until:
        time.sleep(poll_s)
    return False
