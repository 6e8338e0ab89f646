"""Background jobs for long work (training): detached, re-attachable, stoppable, bounded by a deadline."""

from __future__ import annotations

import json
import logging
import re
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from checkpoints import atomic_write_json, atomic_write_text
from toolkit import jobrecord as jr
from toolkit.errors import ToolkitError
from toolkit.excerpt import read_tail_text, tail_lines
from toolkit.jobrunner import grace_before
from toolkit.procs import group_members, is_same_process, kill_process_group, process_start_time
from toolkit.progress import Progress, format_duration, parse_progress
from toolkit.sandbox import Sandbox

log = logging.getLogger(__name__)

_PROGRESS_WINDOW_BYTES = 64_000
_START_WAIT_S = 20.0
_RUNNER = "runner.json"
# The runner imports this very toolkit (not whatever an install or the workspace would put first):
# -I ignores the environment and the current folder, and the path is set explicitly.
_RUNNER_BOOT = (
    f"import sys; sys.path.insert(0, {str(Path(__file__).resolve().parents[1])!r}); "
    "from toolkit.jobrunner import main; sys.exit(main())"
)


@dataclass
class JobStatus:
    """A job's state as the tools report it."""

    record: jr.JobRecord
    state: str
    log_path: Path
    progress: Progress | None
    last_line: str
    log_shown: str = ""  # the log's path as the job saw it (inside the sandbox); default: log_path

    @property
    def running(self) -> bool:
        return self.state in (jr.RUNNING, jr.PENDING)  # pending: queued on SLURM, its time already counting

    def runtime_s(self) -> float | None:
        r = self.record
        if r.started is None:
            return None
        return (r.ended if r.ended is not None else time.time()) - r.started

    def summary_line(self) -> str:
        parts = [self.record.id, self.state]
        if self.record.end_reason and not self.running:
            parts.append(self.record.end_reason)
        if self.state == jr.PENDING:  # SLURM's reason and the queue position; the wait counts against its time
            parts.append(f"{self.last_line}, waiting {format_duration(time.time() - self.record.created)}")
        else:
            parts.append(f"ran {format_duration(self.runtime_s())}")
        if self.record.devices:
            parts.append(f"GPU {','.join(self.record.devices)}")
        if self.progress:
            parts.append(str(self.progress))
        parts.append(self.record.name)
        return " · ".join(parts)

    def __str__(self) -> str:
        r = self.record
        lines = [
            f"job {r.id} ({r.name}): {self.state.upper()}"
            + (f" — {r.end_reason}" if r.end_reason and not self.running else ""),
            f"command: {r.command}",
            f"pid: {r.pid} · started: {jr.utc_iso(r.started) if r.started else 'not yet'}"
            f" · runtime: {format_duration(self.runtime_s())}",
        ]
        if r.deadline is not None and self.running:
            lines.append(f"deadline: {jr.utc_iso(r.deadline)} (in {format_duration(r.deadline - time.time())})")
        if r.exit_code is not None:
            lines.append(f"exit code: {r.exit_code}")
        lines.append(f"progress: {self.progress}" if self.progress else "progress: none reported in the log")
        lines.append(f"log: {self.log_shown or self.log_path}")
        if self.last_line:
            lines.append(f"last line: {self.last_line[:300]}")
        return "\n".join(lines)


class JobRefused(ToolkitError):
    """A job was not started: what it needs is not free now."""


class DevicesBusy(JobRefused):
    """The GPUs a job asks for are not free (or not there)."""


def _slug(name: str) -> str:
    return re.sub(r"[^a-zA-Z0-9]+", "-", name).strip("-").lower()[:32] or "job"


class JobManager:
    """Starts and tracks jobs under `jobs_dir`; any number of managers (in any process) may share it."""

    start_wait_s = _START_WAIT_S  # start() returns once the job runs, or after this long
    max_jobs: int | None = None  # no bound of its own: local jobs are bounded by the GPUs (SLURM: the setting)

    def __init__(self, jobs_dir: Path, *, cwd: Path, env: Mapping[str, str], grace_s: float = 30.0,
                 sandbox: Sandbox | None = None, devices: Sequence[str] = ()) -> None:
        self.jobs_dir = jobs_dir
        self.devices = list(devices)  # GPU ids as the parent's CUDA_VISIBLE_DEVICES names them
        self._allocating = threading.Lock()  # two workers starting jobs at once never get the same GPU
        self.cwd = cwd
        self.env = dict(env)
        self.grace_s = grace_s
        self.sandbox = sandbox
        # Runners we launched; kept so they are reaped (no zombies) when they exit while we live.
        self._runners: list[subprocess.Popen[bytes]] = []

    # -- creation ---------------------------------------------------------------------------------

    def _new_dir(self, name: str) -> Path:
        self.jobs_dir.mkdir(parents=True, exist_ok=True)
        for _ in range(1000):
            seq = 1 + max(
                (int(p.name.split("-", 1)[0]) for p in self.jobs_dir.iterdir() if p.name.split("-", 1)[0].isdigit()),
                default=0,
            )
            job_dir = self.jobs_dir / f"{seq:03d}-{_slug(name)}"
            try:
                job_dir.mkdir()  # exclusive: two managers racing get different ids
                return job_dir
            except FileExistsError:
                continue
        raise ToolkitError(f"could not allocate a job folder in {self.jobs_dir}", "clean up the jobs folder")

    def start(self, command: str, name: str, deadline: float | None, gpus: int | None = None) -> JobStatus:
        """Start a job; with `gpus`, it gets that many GPUs no running job holds (one when the run has GPUs
        and none is asked for), as its CUDA_VISIBLE_DEVICES. Raises DevicesBusy when they are not free."""
        with self._allocating:
            devices = self._allocate(1 if gpus is None and self.devices else gpus or 0)
            return self._start(command, name, deadline, devices)

    def _allocate(self, count: int) -> list[str] | None:
        if count == 0:
            return None
        if count > len(self.devices):
            raise DevicesBusy(f"the job asks for {count} GPU(s) and this run has {len(self.devices) or 'none'}",
                              "ask for fewer GPUs" if self.devices else "start it without gpus: it runs on the CPU")
        free = self.free_devices()
        if len(free) < count:
            holders = ", ".join(f"GPU {d}: {job}" for d, job in self.device_holders().items())
            raise DevicesBusy(f"the job asks for {count} GPU(s) and {len(free)} are free ({holders})",
                              "wait for a job to end (wait_for_job), stop one, or ask for fewer GPUs")
        return free[:count]

    def device_holders(self) -> dict[str, str]:
        """GPU id -> the running job that holds it."""
        held = {}
        for job_id in self.ids():
            status = self.status(job_id)
            if status.running or status.state == jr.STARTING:
                held.update(dict.fromkeys(status.record.devices or [], job_id))
        return held

    def devices_line(self) -> str:
        """Which of the run's GPUs are free and which job holds each of the others."""
        if not self.devices:
            return "This run has no GPU: jobs run on the CPU."
        held = self.device_holders()
        return "This run's GPUs: " + ", ".join(f"{d} ({held[d]})" if d in held else f"{d} free" for d in self.devices)

    def free_devices(self) -> list[str]:
        held = self.device_holders()
        return [d for d in self.devices if d not in held]

    def _start(self, command: str, name: str, deadline: float | None, devices: list[str] | None) -> JobStatus:
        job_dir = self._new_dir(name)
        record = jr.JobRecord(
            id=job_dir.name,
            name=name,
            command=command,
            argv=None if self.sandbox is None else self.sandbox.wrap(["bash", "-c", command], die_with_parent=False),
            cwd=str(self.cwd),
            created=time.time(),
            deadline=deadline,
            # A job with little time to its deadline still gets most of it: the grace (SIGTERM that much
            # earlier) is at most a quarter of the time it has.
            grace_s=self.grace_s if deadline is None else min(self.grace_s, max(1.0, (deadline - time.time()) / 4)),
            devices=devices,
        )
        (job_dir / jr.LOG).touch()
        record.save(job_dir)
        self._launch(job_dir, devices)
        until = time.monotonic() + self.start_wait_s
        while time.monotonic() < until:
            record = jr.JobRecord.load(job_dir)
            if record.state != jr.STARTING or not self._runner_alive(job_dir):
                break
            time.sleep(0.02)
        return self.status(record.id)

    def _launch(self, job_dir: Path, devices: list[str] | None) -> None:
        """Start the job's runner (here: a detached local process; toolkit.slurm_jobs: a SLURM batch job)."""
        with open(job_dir / "runner.log", "ab") as runner_log:
            runner = subprocess.Popen(
                [sys.executable, "-I", "-c", _RUNNER_BOOT, str(job_dir)],
                cwd=job_dir,
                env=self.env if devices is None else {**self.env, "CUDA_VISIBLE_DEVICES": ",".join(devices)},
                stdin=subprocess.DEVNULL,
                stdout=runner_log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        self._runners.append(runner)
        # Kept beside the record, not in it, so the record has one writer at a time.
        atomic_write_json(job_dir / _RUNNER, {"pid": runner.pid, "start_time": process_start_time(runner.pid)})

    # -- inspection -------------------------------------------------------------------------------

    def job_dir(self, job_id: str) -> Path:
        if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", job_id or ""):
            raise KeyError(job_id)
        job_dir = self.jobs_dir / job_id
        if not (job_dir / jr.RECORD).is_file():
            raise KeyError(job_id)
        return job_dir

    def ids(self) -> list[str]:
        if not self.jobs_dir.is_dir():
            return []
        return sorted(p.name for p in self.jobs_dir.iterdir() if (p / jr.RECORD).is_file())

    def _runner_alive(self, job_dir: Path) -> bool:
        self._reap()
        try:
            runner = json.loads((job_dir / _RUNNER).read_text(encoding="utf-8"))
            return runner["start_time"] is not None and is_same_process(runner["pid"], runner["start_time"])
        except (OSError, ValueError, KeyError, TypeError):
            return False

    def _reap(self) -> None:
        self._runners = [r for r in self._runners if r.poll() is None]

    def _refresh(self, job_dir: Path) -> jr.JobRecord:
        """Load the record; if its runner is gone, settle what we can: liveness, deadline, loss."""
        record = jr.JobRecord.load(job_dir)
        if record.state not in (jr.RUNNING, jr.STARTING) or self._runner_alive(job_dir):
            return record
        alive = (
            record.pid is not None and record.start_time is not None and is_same_process(record.pid, record.start_time)
        )
        if alive and record.deadline is not None and time.time() >= record.deadline - record.grace_s:
            # Nobody is enforcing the deadline any more, so we do (as the runner would have).
            kill_process_group(record.pid, grace_before(record.deadline))
            record.state, record.end_reason, record.ended = jr.STOPPED, "deadline reached", time.time()
            record.save(job_dir)
        elif not alive:
            record.state, record.ended = jr.LOST, time.time()
            record.end_reason = "ended while no runner watched it; exit status unknown"
            record.save(job_dir)
        return record

    def status(self, job_id: str) -> JobStatus:
        job_dir = self.job_dir(job_id)
        record = self._refresh(job_dir)
        log_path = job_dir / jr.LOG
        tail = read_tail_text(log_path, _PROGRESS_WINDOW_BYTES)
        elapsed = None if record.started is None else (record.ended or time.time()) - record.started
        last, _ = tail_lines(log_path, 1, max_bytes=8_000)
        return JobStatus(record, record.state, log_path, parse_progress(tail, elapsed), last[0] if last else "",
                         self.shown(log_path))

    def shown(self, path: Path) -> str:
        """A path as the agents' commands see it (inside the sandbox, the run's folders have paths of their own)."""
        return str(path if self.sandbox is None else self.sandbox.inside(path))

    def tail(self, job_id: str, lines: int, max_chars: int) -> str:
        status = self.status(job_id)
        shown, more = tail_lines(status.log_path, lines)
        text = "\n".join(shown)
        if len(text) > max_chars:
            text = "[... line starts cut ...]\n" + text[-max_chars:]
            more = True
        head = f"[job {job_id}: {status.state}; last {len(shown)} line(s) of {status.log_shown}"
        head += "; earlier output not shown]" if more else "]"
        return head + "\n" + (text or "(no output yet)")

    def stop(self, job_id: str, grace_s: float | None = None) -> JobStatus:
        """Stop a job (SIGTERM, SIGKILL after the grace) and record it stopped unless its runner recorded its end."""
        job_dir = self.job_dir(job_id)
        record = self._refresh(job_dir)
        if record.state not in jr.FINISHED and self._stoppable(job_dir):
            atomic_write_text(job_dir / jr.STOP_MARKER, jr.utc_iso() + "\n")
            self._end_runner(job_dir, record, self.grace_s if grace_s is None else grace_s)
            record = jr.JobRecord.load(job_dir)
            if record.state in (jr.RUNNING, jr.STARTING):
                record.state, record.end_reason, record.ended = jr.STOPPED, "stopped on request", time.time()
                record.save(job_dir)
        return self.status(job_id)

    def _stoppable(self, job_dir: Path) -> bool:
        return True

    def _end_runner(self, job_dir: Path, record: jr.JobRecord, grace_s: float) -> None:
        """Signal the job (here: its process group) and give its runner a moment to record the exit it sees."""
        if record.pid is not None and record.start_time is not None and is_same_process(record.pid, record.start_time):
            kill_process_group(record.pid, grace_s)
        self._await_runner(job_dir, 5.0, poll_s=0.02)

    def _await_runner(self, job_dir: Path, seconds: float, poll_s: float) -> None:
        until = time.monotonic() + seconds
        while time.monotonic() < until and self._runner_alive(job_dir):
            time.sleep(poll_s)

    def running_pids(self) -> dict[int, str]:
        """pid -> job id for every live process of our running jobs."""
        owners: dict[int, str] = {}
        for job_id in self.ids():
            record = jr.JobRecord.load(self.jobs_dir / job_id)
            if record.state == jr.RUNNING and record.pid is not None:
                for pid in group_members(record.pid):
                    owners[pid] = job_id
        return owners
