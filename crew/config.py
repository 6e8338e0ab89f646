"""A run's frozen configuration, saved as run.toml (never with secrets)."""

from __future__ import annotations

import tomllib
from dataclasses import asdict, dataclass, field
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

import tomli_w

from checkpoints import atomic_write_text


@dataclass(frozen=True)
class RunConfig:
    run_id: str
    challenge: str
    challenge_dir: str
    preset: str
    model: str
    supervisor_model: str
    worker_model: str
    budget_s: float
    started_at: float  # UTC epoch seconds: the budget's start; the deadline is started_at + budget_s
    device: str
    data_dir: str
    max_cost_usd: float | None = None
    budget_clock: str = "wall"  # "wall": downtime counts, as in the competitions; "active": only time alive
    sandbox: str = "bwrap"  # agents' commands and jobs: "bwrap" or "none" (an integrity warning); resume keeps it
    agent_network: bool = True
    jobs: str = "local"  # where the engineer's jobs run: "local" or "slurm"; resume keeps it
    jobs_partition: str | None = None
    research_crew_version: str = field(default_factory=lambda: _version())

    def save(self, path: Path) -> None:
        # TOML has no null: an unset value is left out.
        data = {key: value for key, value in asdict(self).items() if value is not None}
        atomic_write_text(path, tomli_w.dumps(data))

    @classmethod
    def load(cls, path: Path) -> RunConfig:
        return cls(**tomllib.loads(Path(path).read_text(encoding="utf-8")))


def _version() -> str:
    try:
        return version("research-crew")
    except PackageNotFoundError:
        return "unknown"
