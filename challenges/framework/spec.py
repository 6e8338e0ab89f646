"""The parsed form of a challenge folder's challenge.toml."""

from __future__ import annotations

import re
import shlex
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path

PLACEHOLDERS = ("data_dir", "submission_dir", "budget_s", "seed")
# Without score_minutes, a preset keeps this much for scoring, or a quarter of its own length if that is
# less: a three-minute smoke preset must not be refused for a ten-minute reserve before any scoring was timed.
DEFAULT_SCORE_MINUTES = 10.0
DEFAULT_SCORE_SHARE = 0.25


def default_score_minutes(hours: float) -> float:
    return min(DEFAULT_SCORE_MINUTES, DEFAULT_SCORE_SHARE * hours * 60.0)


@dataclass(frozen=True)
class Metric:
    name: str
    direction: str  # "max" or "min"
    success_threshold: float = 0.10
    # Values a scorer returns for "could not score" (MLAgentBench's vectorization returns 1e10 on any error):
    # the harness records them as violations, never as scores.
    sentinels: tuple[float, ...] = ()

    def better(self, a: float, b: float) -> bool:
        """True when score `a` is strictly better than `b`."""
        return a > b if self.direction == "max" else a < b

    def improvement(self, score: float, baseline: float) -> float:
        """Relative improvement over the baseline, positive when better, as MLAgentBench counts it."""
        if baseline == 0:
            return 0.0 if score == baseline else float("inf")
        gain = (score - baseline) if self.direction == "max" else (baseline - score)
        return gain / abs(baseline)


@dataclass(frozen=True)
class Preset:
    name: str
    hours: float
    gpus: int = 0
    gpu_memory_gb: float = 0.0
    description: str = ""
    score_minutes: float | None = None  # time reserved at the end for the harness to score; None: the default
    disk_gb: float = 0.0  # free disk the prepared data and the work need (0: not stated)
    download_gb: float = 0.0  # what preparing downloads (0: nothing, or not stated)
    # Baseline runs train and score the recipe this many times with seeds 0, 1, ... (each in an equal share of
    # the budget; the command takes {seed}), so that their spread measures the baseline's noise.
    baseline_seeds: int = 1
    # Limits on each agent command or job (toolkit/limits.py): processes and threads it may run at once; its
    # address space in GB (0: the machine's memory, and no cap when the run uses GPUs); and the free disk under
    # the run below which running jobs are stopped, so the disk never fills and saving state never fails.
    max_processes: int = 2048
    max_memory_gb: float = 0.0
    disk_reserve_gb: float = 2.0
    # Variables the agents' commands and jobs get (`env = { NAME = "value" }`): fixed values, never a secret,
    # never a name the toolkit passes from the machine or sets itself (checkpoints/env_names.py).
    env: tuple[tuple[str, str], ...] = ()
    # A preset may score a stated proxy instead of the challenge's metric (`[presets.smoke.metric]`): where the
    # real metric cannot move at that size (SuperGLUE after a minute on CPU), a run still needs a score that does.
    metric: Metric | None = None
    metric_note: str = ""  # why this preset scores a proxy: shown by `challenges show`

    def __post_init__(self) -> None:
        if self.score_minutes is None:
            object.__setattr__(self, "score_minutes", default_score_minutes(self.hours))

    @property
    def budget_s(self) -> float:
        return self.hours * 3600.0

    @property
    def min_budget_s(self) -> float:
        """Scoring reserve plus at least as long again for the work itself."""
        return 2 * self.score_minutes * 60.0


@dataclass(frozen=True)
class Challenge:
    name: str
    title: str
    directory: Path
    metric: Metric
    submission: str
    presets: dict[str, Preset]
    source: str = ""
    allowed: tuple[str, ...] = ()
    forbidden: tuple[str, ...] = ()
    baseline_command: str | None = None
    builtin: bool = False
    extra: dict = field(default_factory=dict)
    # A fixed reference (a peer suite's published baseline): when set, success is judged against it; the
    # baseline policy's measured score is still reported beside it.
    reference_score: float | None = None
    requirements: tuple[str, ...] = ()  # pip specifiers the challenge's code needs ([environment])
    agent_feedback: str = "dev"  # "dev": evaluate shows agents the dev score; "none": blind, agents see no score
    # What prepare reads from outside the folder ([prepare] env / paths): part of the data cache key.
    prepare_env: tuple[str, ...] = ()
    prepare_paths: tuple[str, ...] = ()

    @property
    def blind(self) -> bool:
        return self.agent_feedback == "none"

    @property
    def task_text(self) -> str:
        return (self.directory / "task.md").read_text(encoding="utf-8")

    @property
    def has_prepare(self) -> bool:
        return (self.directory / "prepare.py").is_file()

    def preset(self, name: str) -> Preset:
        from challenges.framework.api import ChallengeError

        if name not in self.presets:
            raise ChallengeError(
                f"challenge '{self.name}' has no preset '{name}'",
                f"choose one of: {', '.join(self.presets)}",
            )
        return self.presets[name]

    def for_preset(self, name: str) -> Challenge:
        """The challenge as a run of preset `name` sees it: with that preset's proxy metric, if it has one."""
        preset = self.preset(name)
        return replace(self, metric=preset.metric) if preset.metric else self

    def baseline_command_line(self, data_dir: Path, submission_dir: Path, budget_s: float, seed: int = 0) -> str:
        """The baseline command with its placeholders filled; a leading `python` is this interpreter."""
        assert self.baseline_command is not None
        command = self.baseline_command.format(
            data_dir=shlex.quote(str(data_dir)),
            submission_dir=shlex.quote(str(submission_dir)),
            budget_s=int(budget_s),
            seed=seed,
        )
        return re.sub(r"^python3?(?=\s)", shlex.quote(sys.executable), command)
