"""What a challenge's scorer and prepare step receive and return."""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

# Caps the rows a prepare step reads from each hub dataset, for a quick end-to-end check of a full preset (the
# opt-in network test). The data cache keys a capped preparation apart from a full one.
ROW_LIMIT_VARIABLE = "RESEARCH_CREW_ROW_LIMIT"


def row_limit() -> int | None:
    value = os.environ.get(ROW_LIMIT_VARIABLE, "").strip()
    return int(value) if value else None


class ChallengeError(Exception):
    """A problem with a challenge, its data or its scoring; `hint` says what to do about it."""

    def __init__(self, message: str, hint: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return f"{self.message}\n  hint: {self.hint}" if self.hint else self.message


class DatasetUnavailable(ChallengeError):
    """A dataset or model could not be fetched from its hub."""


@dataclass(frozen=True)
class EnvironmentCheck:
    """A check a scorer asks `research-crew doctor` to make (`environment_checks(preset)` in scorer.py), such as
    a toolchain it uses: verdict is "ok", "warn", "fail" or "skip"; `fix` says what to do when it is not ok."""

    name: str
    verdict: str
    detail: str
    fix: str = ""


@dataclass
class Score:
    """A scorer's answer: the metric's value and any details worth keeping.

    `items`, when the scorer can give them, are its per-item results by group, {group: {item_id: value}}, such
    that `value` is the mean over groups of each group's mean (one group: the plain mean over its items), as
    lm-eval averages tasks. The harness then splits the items into a dev part, whose score is all agents see,
    and a held-out part used only for the final pick (challenges/framework/split.py). Agents then see the dev part's
    per-group scores in place of `details["per_task"]`; keep other whole-set scores out of `details`. A scorer
    without items still works: its value is then the dev score too, and the run has no held-out pick.
    """

    value: float
    details: dict[str, Any] = field(default_factory=dict)
    items: dict[str, dict[str, float]] | None = None


@dataclass
class ScoreContext:
    """Everything `prepare`, `check` and `score` may use.

    data_dir is what agents see (read-only to them); private_dir holds answers and held-out data
    that only the scorer reads.
    """

    challenge: str
    preset: str
    data_dir: Path
    private_dir: Path
    scratch_dir: Path
    device: str = "cpu"
    time_limit_s: float = 3600.0
    challenge_dir: Path | None = None
    partial_file: Path | None = None  # where the harness looks for a partial score (set by the harness)

    def report_partial(self, score: Score) -> None:
        """Record `score` as the result should scoring be stopped before `score()` returns (a time limit): the
        value must be a valid score of its own, with details saying what is missing."""
        if self.partial_file is not None:
            from checkpoints.atomic import atomic_write_json

            atomic_write_json(self.partial_file, {"score": float(score.value), "details": score.details})

    def to_json(self) -> str:
        return json.dumps({k: str(v) if isinstance(v, Path) else v for k, v in asdict(self).items()})

    @classmethod
    def from_json(cls, text: str) -> ScoreContext:
        raw = json.loads(text)
        for key in ("data_dir", "private_dir", "scratch_dir", "challenge_dir", "partial_file"):
            if raw.get(key) is not None:
                raw[key] = Path(raw[key])
        return cls(**raw)
