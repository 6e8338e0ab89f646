"""A background job's metadata, saved atomically as `jobs/<id>/job.json`.

Writers take turns: the toolkit writes the record when it creates the job; from then on the job's
runner process owns it (pid, start time, exit status). The toolkit writes again only when the runner
is gone, to record what it can still learn.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, fields
from datetime import UTC, datetime
from pathlib import Path

from checkpoints import atomic_write_json

RECORD = "job.json"
LOG = "log"
STOP_MARKER = "stop_requested"

STARTING, RUNNING, EXITED, STOPPED, FAILED, LOST = (
    "starting",
    "running",
    "exited",
    "stopped",
    "failed",
    "lost",
)
PENDING = "pending"  # a SLURM job waiting in the queue (toolkit.slurm_jobs); never saved in a record
FINISHED = frozenset({EXITED, STOPPED, FAILED, LOST})


def utc_iso(epoch: float | None = None) -> str:
    return datetime.fromtimestamp(time.time() if epoch is None else epoch, UTC).isoformat(timespec="seconds")


@dataclass
class JobRecord:
    id: str
    name: str
    command: str
    cwd: str
    created: float
    argv: list[str] | None = None  # what the runner starts, when not `bash -c command` (the sandboxed command)
    deadline: float | None = None
    grace_s: float = 30.0
    state: str = STARTING
    pid: int | None = None  # the command's pid, also its process group id
    start_time: float | None = None  # the command process's start time, to tell a reused pid apart
    started: float | None = None
    ended: float | None = None
    exit_code: int | None = None
    end_reason: str | None = None
    devices: list[str] | None = None  # the GPUs it was given (its CUDA_VISIBLE_DEVICES); None: no GPU asked

    def save(self, job_dir: Path) -> None:
        data = asdict(self)
        # Human-readable copies of the epoch times; the epoch fields stay the source of truth.
        for key in ("created", "deadline", "started", "ended"):
            if data[key] is not None:
                data[f"{key}_utc"] = utc_iso(data[key])
        atomic_write_json(job_dir / RECORD, data)

    @classmethod
    def load(cls, job_dir: Path) -> JobRecord:
        data = json.loads((job_dir / RECORD).read_text(encoding="utf-8"))
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})
