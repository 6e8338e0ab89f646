"""A run's frozen configuration, saved as run.toml (never with secrets)."""

from __future__ import annotations

import json
import tomllib
from dataclasses import MISSING, asdict, dataclass, field, fields
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

import tomli_w

from checkpoints import atomic_write_text
from crew.errors import CrewError
from crew.run.rundir import RunDir


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
    agent_network: bool | str = "egress"  # egress, off or host (crew/run/sandboxing.py); true in older runs
    requirements_env: str | None = None  # the folder `--install-requirements` installed into (PYTHONPATH first)
    retry_window_s: float | None = None  # how long model calls are retried in an outage (crew/agent/models/retry.py)
    floor: bool = True  # experiment 0: the baseline recipe at the short size (crew/policy/floor.py); --no-floor
    jobs: str = "local"  # where the engineer's jobs run: "local" or "slurm"; resume keeps it
    jobs_partition: str | None = None
    jobs_max: int | None = None  # --jobs slurm: the run's jobs on the cluster at once (`run --max-jobs`)
    research_crew_version: str = field(default_factory=lambda: _version())

    def save(self, path: Path) -> None:
        # TOML has no null: an unset value is left out.
        data = {key: value for key, value in asdict(self).items() if value is not None}
        atomic_write_text(path, tomli_w.dumps(data))

    @classmethod
    def load(cls, path: Path) -> RunConfig:
        """The saved configuration; a damaged file raises CrewError naming it (never a traceback)."""
        path = Path(path)
        try:
            data = tomllib.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as err:
            raise _damaged(path, str(err)) from err
        known = {f.name for f in fields(cls)}
        missing = [f.name for f in fields(cls) if f.name not in data
                   and f.default is MISSING and f.default_factory is MISSING]  # required fields
        if missing:
            raise _damaged(path, f"no {', '.join(missing)}")
        if not all(isinstance(data[k], int | float) for k in ("budget_s", "started_at")):
            raise _damaged(path, "budget_s and started_at must be numbers")
        return cls(**{k: v for k, v in data.items() if k in known})  # a newer version's extra keys are left


def check_run_dir(root: Path) -> RunConfig:
    """A run directory's configuration, after checking the files every command reads: run.toml, and
    result.json once it exists. Anything missing or damaged raises CrewError naming the file and the fix, so
    no command goes on with a guess (and `report` never replaces a good report with a worse one)."""
    run = RunDir(Path(root))
    if not run.is_run():
        raise CrewError(f"{run.root} is not a run directory (it has no run.toml)",
                        "give a folder made by `research-crew run`; `research-crew runs` lists them")
    config = RunConfig.load(run.run_toml)
    result = run.result
    if result.exists():
        try:
            if not isinstance(json.loads(result.read_text(encoding="utf-8")), dict):
                raise ValueError("not a JSON object")
        except (OSError, UnicodeDecodeError, ValueError) as err:
            raise _damaged(result, str(err)) from err
    return config


def _damaged(path: Path, why: str) -> CrewError:
    written = ("research-crew writes it once, at the start, and never edits it" if path.name == "run.toml"
               else "the run's evaluations/ and trace.jsonl still hold its records")
    return CrewError(f"{path} is damaged ({why.splitlines()[0] if why else 'unreadable'})",
                     f"restore {path.name} from a backup ({written}), or move the run directory out of the way; "
                     "nothing was changed")


def _version() -> str:
    try:
        return version("research-crew")
    except PackageNotFoundError:
        return "unknown"
