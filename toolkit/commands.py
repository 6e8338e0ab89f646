"""Bounded commands: own process group, output to a log file, killed whole at the timeout."""

from __future__ import annotations

import itertools
import logging
import os
import subprocess
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from toolkit.excerpt import head_tail
from toolkit.procs import group_members, kill_process_group

log = logging.getLogger(__name__)

_counter = itertools.count(1)


@dataclass
class CommandResult:
    """What a command did: exit code, duration, timeout, where its full log is, and an excerpt."""

    command: str
    exit_code: int | None
    duration_s: float
    timed_out: bool
    timeout_s: float
    log_path: Path
    output: str
    output_bytes: int
    cut_bytes: int
    leftovers_killed: int = 0
    log_shown: str = ""  # the log's path as the command saw it (inside the sandbox); default: log_path

    def __str__(self) -> str:
        if self.timed_out:
            status = f"TIMED OUT after {self.timeout_s:g}s; the whole process group was killed"
        elif self.exit_code is not None and self.exit_code < 0:
            status = f"killed by signal {-self.exit_code}"
        else:
            status = f"exit code {self.exit_code}"
        lines = [f"[{status} · {self.duration_s:.1f}s · log: {self.log_shown or self.log_path}]"]
        if self.leftovers_killed:
            lines.append(
                f"[{self.leftovers_killed} background process(es) it left behind were stopped; "
                "use start_job for work that must keep running]"
            )
        if self.cut_bytes:
            lines.append(
                f"[output {self.output_bytes:,} bytes; showing head and tail, "
                f"{self.cut_bytes:,} bytes cut — read the log for the rest]"
            )
        lines.append(self.output if self.output.strip() else "(no output)")
        return "\n".join(lines)


def new_log_path(log_dir: Path, kind: str) -> Path:
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S")
    # pid + counter keep names unique across Toolkits in several processes sharing a run dir.
    return log_dir / f"{stamp}-{os.getpid()}-{next(_counter):04d}-{kind}.log"


def run_command(
    argv: Sequence[str],
    *,
    cwd: Path,
    env: Mapping[str, str],
    timeout_s: float,
    log_path: Path,
    max_chars: int,
    grace_s: float = 2.0,
    display: str | None = None,
    contained: bool = False,
) -> CommandResult:
    """Run `argv` in a new session with stdout+stderr going straight to `log_path`.

    The child writes to the file itself, so this process never buffers the output. At the timeout the
    whole group is ended; processes the command left running in its group are ended too. A `contained`
    command runs in a pid namespace that the kernel tears down when it ends (the sandbox), so nothing it
    started can be left behind and the group is not searched (that costs milliseconds per command).
    """
    log_path.parent.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    timed_out = False
    with open(log_path, "wb") as out:
        proc = subprocess.Popen(
            list(argv),
            cwd=cwd,
            env=dict(env),
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        # A timer ends the group while this thread blocks in wait(): Popen.wait(timeout) polls with
        # growing sleeps, which would add milliseconds to every short command.
        fired = threading.Event()

        def on_timeout() -> None:
            if proc.returncode is None:
                fired.set()
                log.info("command timed out after %.1fs, ending group %d", timeout_s, proc.pid)
                kill_process_group(proc.pid, grace_s)

        timer = threading.Timer(max(timeout_s, 0.0), on_timeout)
        timer.daemon = True
        timer.start()
        try:
            proc.wait()
        finally:
            timer.cancel()
        if fired.is_set():
            timer.join()  # the group kill (grace included) finishes before we report
            timed_out = True
    duration = time.monotonic() - started
    leftovers = 0
    if not timed_out and not contained:
        leftovers = len(group_members(proc.pid))
        if leftovers:
            kill_process_group(proc.pid, grace_s)
    excerpt = head_tail(log_path, max_chars)
    return CommandResult(
        command=display or " ".join(argv),
        exit_code=proc.returncode,
        duration_s=duration,
        timed_out=timed_out,
        timeout_s=timeout_s,
        log_path=log_path,
        output=excerpt.text,
        output_bytes=excerpt.total_bytes,
        cut_bytes=excerpt.cut_bytes,
        leftovers_killed=leftovers,
    )
