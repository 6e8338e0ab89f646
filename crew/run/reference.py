"""The baseline policy's latest scores per (challenge, preset): the reference every crew is compared with.

Scores are full scores (the scorer's value on the whole set). Where a preset trains the baseline with several
seeds (`baseline_seeds`), all their scores are kept: the reference is their mean, and their spread is the
noise band an improvement must clear to count.
"""

from __future__ import annotations

import fcntl
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from challenges.framework.data import cache_root
from checkpoints import atomic_write_json


@dataclass(frozen=True)
class Baseline:
    scores: tuple[float, ...]  # full scores, one per seed
    run_id: str = ""
    dev_scores: tuple[float, ...] = ()  # the same records' dev scores: what agents may compare with theirs

    @property
    def score(self) -> float:
        return sum(self.scores) / len(self.scores)

    @property
    def spread(self) -> float | None:
        """Max minus min of the seeds' scores; None with one seed (the noise is then unknown)."""
        return max(self.scores) - min(self.scores) if len(self.scores) > 1 else None

    def within_noise(self, score: float) -> bool | None:
        """Whether `score` is no farther from the reference than the seeds are from each other."""
        if self.spread is None:
            return None
        return abs(score - self.score) <= self.spread

    def within_dev_noise(self, dev_score: float) -> bool | None:
        """The same test in dev scores: what an experiment row the agents see can be marked with."""
        dev = self.dev_scores
        if len(dev) < 2:
            return None
        return abs(dev_score - sum(dev) / len(dev)) <= max(dev) - min(dev)

    def noise_record(self) -> dict[str, Any] | None:
        if self.spread is None:
            return None
        return {"seed_scores": list(self.scores), "spread": self.spread,
                "band": [min(self.scores), max(self.scores)]}

    def describe(self) -> str:
        """The supervisor's briefing line, in dev scores like the ledger's (full scores would tell agents
        something of the held-out part); without dev scores (recorded before the split), nothing."""
        dev = self.dev_scores
        if not dev:
            return "baseline scored before dev/held-out splits: rerun `--model baseline` to compare"
        line = f"baseline policy's dev score: {sum(dev) / len(dev):.4f}"
        if len(dev) > 1:
            line += (f" (mean of {len(dev)} seeds, {', '.join(f'{s:.4f}' for s in dev)}: a gain under "
                     f"{max(dev) - min(dev):.4f} is within the baseline's seed noise)")
        return line


def _path() -> Path:
    return cache_root() / "baseline_scores.json"


def baseline(challenge: str, preset: str, metric: str | None = None) -> Baseline | None:
    """The recorded reference; with `metric`, only one recorded in that metric (a preset that now scores a
    proxy, say, is not compared with scores of its former metric)."""
    path = _path()
    if not path.is_file():
        return None
    entry = json.loads(path.read_text()).get(f"{challenge}/{preset}")
    if not entry or entry.get("score") is None or (metric and entry.get("metric") != metric):
        return None
    return Baseline(tuple(entry.get("scores") or [entry["score"]]), entry.get("run_id", ""),
                    tuple(entry.get("dev_scores") or ()))


def baseline_score(challenge: str, preset: str) -> float | None:
    found = baseline(challenge, preset)
    return found.score if found else None


def record_baseline_scores(challenge: str, preset: str, scores: list[float], dev_scores: list[float],
                           run_id: str, metric: str | None = None) -> None:
    """Record a baseline run's full and dev scores, one per seed."""
    path = _path()
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.with_suffix(".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        recorded = json.loads(path.read_text()) if path.is_file() else {}
        recorded[f"{challenge}/{preset}"] = {"score": sum(scores) / len(scores), "scores": list(scores),
                                            "dev_scores": list(dev_scores), "run_id": run_id, "metric": metric}
        atomic_write_json(path, recorded)
