"""The run directory of DESIGN.md: where a run keeps everything, and how it is named."""

from __future__ import annotations

import os
import secrets
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from crew.errors import CrewError

# Names inside the run's folders, owned by their writers' formats but placed here so that readers ask RunDir.
STATE_LATEST = "latest.json"  # crew/loop/snapshots.py writes it
JOB_LOG = "log"  # toolkit/jobs.py writes each job's output there


@dataclass(frozen=True)
class RunDir:
    root: Path

    @property
    def run_id(self) -> str:
        return self.root.name

    run_toml = property(lambda self: self.root / "run.toml")
    trace = property(lambda self: self.root / "trace.jsonl")
    state = property(lambda self: self.root / "state")
    workspace = property(lambda self: self.root / "workspace")
    jobs = property(lambda self: self.root / "jobs")
    memory = property(lambda self: self.root / "memory")
    evaluations = property(lambda self: self.root / "evaluations")
    scratch = property(lambda self: self.root / "scratch")
    result = property(lambda self: self.root / "result.json")
    report_md = property(lambda self: self.root / "report.md")
    report_html = property(lambda self: self.root / "report.html")
    report_files = property(lambda self: self.root / "report_files")  # report.md's plots
    error_txt = property(lambda self: self.root / "error.txt")  # the traceback of a run stopped by an error
    latest_state = property(lambda self: self.state / STATE_LATEST)  # the crew's last saved step

    def job_dir(self, job_id: str) -> Path:
        return self.jobs / job_id

    def job_log(self, job_id: str) -> Path:
        return self.jobs / job_id / JOB_LOG

    def job_logs(self) -> list[Path]:
        return sorted(self.jobs.glob(f"*/{JOB_LOG}"))

    def is_run(self) -> bool:
        """Whether the folder holds a run (its run.toml is written first, before anything else)."""
        return self.run_toml.is_file()

    @classmethod
    def create(cls, challenge: str, run_dir: Path | None = None) -> RunDir:
        """Make a new run directory; refuse one that exists, so no earlier run is overwritten."""
        root = Path(run_dir) if run_dir else default_runs_root() / new_run_id(challenge)
        if root.exists():
            raise CrewError(
                f"run directory {root} already exists",
                f"choose another --run-dir, or continue that run with `research-crew resume {root}`",
            )
        root.mkdir(parents=True)
        run = cls(root.resolve())
        for folder in (run.state, run.workspace, run.jobs, run.memory, run.evaluations, run.scratch):
            folder.mkdir()
        return run


def new_run_id(challenge: str) -> str:
    return f"{challenge}-{datetime.now(UTC):%Y%m%dT%H%M%SZ}-{secrets.token_hex(2)}"


def default_runs_root() -> Path:
    return Path(os.environ.get("RESEARCH_CREW_RUNS", "runs"))
