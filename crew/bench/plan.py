"""What a bench runs: its cells (challenge, model, repeat), where each one's run directory is, how far it got,
and the command that starts or resumes it."""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

from crew.errors import EXIT_INTERRUPTED
from crew.run.events import Resumed, RunFinished, RunStarted
from crew.run.rundir import RunDir
from crew.run.trace import read_events

BASELINE = "baseline"
PENDING, FINISHED, INTERRUPTED = "pending", "finished", "interrupted"


@dataclass(frozen=True)
class BenchSpec:
    challenges: tuple[str, ...]
    models: tuple[str, ...]  # the baseline policy first: it is every crew's reference
    runs: int
    preset: str = "smoke"
    budget: str | None = None

    @classmethod
    def make(cls, challenges: list[str], models: list[str], runs: int, preset: str, budget: str | None) -> BenchSpec:
        ordered = [BASELINE, *(m for m in models if m != BASELINE)]
        return cls(tuple(dict.fromkeys(challenges)), tuple(dict.fromkeys(ordered)), runs, preset, budget)

    def key(self) -> str:
        """Names the default bench folder: the same bench (any --runs) lands in the same folder."""
        text = json.dumps([self.challenges, self.models, self.preset, self.budget])
        return hashlib.sha256(text.encode()).hexdigest()[:8]

    def cells(self, root: Path) -> list[Cell]:
        return [Cell(root, challenge, model, repeat, self.preset, self.budget)
                for challenge in self.challenges for model in self.models for repeat in range(1, self.runs + 1)]

    @classmethod
    def load(cls, root: Path) -> BenchSpec:
        data = json.loads((root / "bench.json").read_text())
        return cls(**{k: tuple(v) if isinstance(v, list) else v for k, v in data.items()})

    def save(self, root: Path) -> None:
        from checkpoints import atomic_write_json

        root.mkdir(parents=True, exist_ok=True)
        atomic_write_json(root / "bench.json", asdict(self))


@dataclass(frozen=True)
class Cell:
    root: Path  # the bench folder
    challenge: str
    model: str
    repeat: int
    preset: str
    budget: str | None

    @property
    def name(self) -> str:
        return f"{Path(self.challenge).name}--{model_slug(self.model)}--{self.repeat}"

    @property
    def run_dir(self) -> Path:
        return self.root / "runs" / self.name

    @property
    def log(self) -> Path:
        return self.root / "logs" / f"{self.name}.log"

    def state(self) -> str:
        """finished (ended for good, however), interrupted (resumable), or pending (not started, or torn)."""
        run = RunDir(self.run_dir)
        if not run.is_run():
            return PENDING
        last_end = None
        for event in read_events(run.trace):
            if isinstance(event, RunStarted | Resumed):
                last_end = None
            elif isinstance(event, RunFinished):
                last_end = event
        if last_end is None or last_end.exit_code == EXIT_INTERRUPTED:
            return INTERRUPTED
        return FINISHED

    def command(self) -> list[str]:
        """The research-crew command for this cell now: run it, resume it, or run it again from scratch."""
        state = self.state()
        if state == INTERRUPTED:
            return [*_cli(), "resume", str(self.run_dir)]
        if state != PENDING or self.run_dir.exists():  # torn before run.toml: start over
            self._move_aside()
        command = [*_cli(), "run", self.challenge, "--preset", self.preset, "--model", self.model,
                   "--run-dir", str(self.run_dir), "--quiet"]
        return command + (["--budget", self.budget] if self.budget else [])

    def _move_aside(self) -> None:
        n = 1
        while (aside := self.run_dir.with_name(f"{self.run_dir.name}.aborted-{n}")).exists():
            n += 1
        shutil.move(self.run_dir, aside)


def model_slug(spec: str) -> str:
    """A folder-safe name for a model spec; a replay script is named by its file and a short hash of its path."""
    if spec.startswith("replay:"):
        path = spec.split(":", 1)[1]
        return f"replay-{Path(path).stem}-{hashlib.sha256(path.encode()).hexdigest()[:4]}"
    return re.sub(r"[^A-Za-z0-9._-]+", "-", spec).strip("-")[:60]


def _cli() -> list[str]:
    return [sys.executable, "-m", "crew.cli"]

