"""Background jobs as the run directory shows them: jobs/<id>/job.json (toolkit or baseline format) and the log."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path

import psutil

from crew.run.rundir import JOB_LOG
from toolkit.excerpt import read_tail_text
from toolkit.progress import Progress, parse_progress

TAIL_BYTES = 16_000  # enough for the last progress line, small enough to read every second


@dataclass(frozen=True)
class JobView:
    id: str
    name: str
    state: str  # running, exited, failed, stopped, lost, starting
    started: float | None
    ended: float | None
    exit_code: int | None
    progress: Progress | None

    @property
    def running(self) -> bool:
        return self.state in ("running", "starting")

    def runtime_s(self, now: float | None = None) -> float | None:
        if self.started is None:
            return None
        return (self.ended if self.ended is not None else (now or time.time())) - self.started


def read_jobs(jobs_dir: Path) -> list[JobView]:
    """Every job with a readable record, oldest first; a record mid-write is skipped until the next look."""
    views = []
    for record in sorted(Path(jobs_dir).glob("*/job.json")):
        try:
            views.append(_view(record.parent, json.loads(record.read_text(encoding="utf-8"))))
        except (OSError, json.JSONDecodeError, TypeError, ValueError):
            continue
    return sorted(views, key=lambda v: v.started or 0.0)


def _view(job_dir: Path, data: dict) -> JobView:
    # The toolkit writes started/ended/state; the baseline policy writes started_at/ended_at and no state.
    started = data.get("started", data.get("started_at"))
    ended = data.get("ended", data.get("ended_at"))
    exit_code = data.get("exit_code")
    state = data.get("state") or _baseline_state(ended, exit_code, data.get("pid"))
    progress = None
    log_path = job_dir / JOB_LOG
    if log_path.is_file():
        runtime = ((ended or time.time()) - started) if started else None
        progress = parse_progress(read_tail_text(log_path, TAIL_BYTES), elapsed_s=runtime)
    return JobView(id=str(data.get("id", job_dir.name)), name=str(data.get("name", data.get("id", job_dir.name))),
                   state=state, started=started, ended=ended, exit_code=exit_code, progress=progress)


def _baseline_state(ended: float | None, exit_code: int | None, pid: int | None) -> str:
    if ended is not None:
        return "exited" if exit_code == 0 else "failed"
    return "running" if pid and psutil.pid_exists(pid) else "lost"
