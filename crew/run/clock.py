"""The run's clock: the one owner of time. Every "time left" in the project asks it, by a name that says which.

- the budget: `elapsed_s`, `to_deadline_s` (wall time, downtime counted, or active time, only while alive);
- the phases: work, wrap-up, final. Wrap-up starts when what is left is the wrap-up reserve: the expected
  scoring time (the slowest harness scoring so far, else the preset's score_minutes) with a margin, and at
  least a minimum share of the budget. The final phase is the last moments: everything still running is
  ended and the best evaluation record is submitted. `phase_left_s` is what a command, job or model call may
  use now; `work_left_s` the time to wrap-up; `until_final_s` the time to the final margin;
- the scoring reserve: `scoring_reserve_s(n)`, the time n harness scorings need (the baseline keeps one
  per seed still to train).

Active time survives a crash the same way for every policy: the policy saves the clock (`save`) as it goes,
and a resumed run starts its clock that far into the budget. The saved file (state/clock.json) is also what
the live panel and the report read, so they show the same elapsed time, phase and reserve as the run.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from checkpoints.atomic import atomic_write_json
from crew.run.durations import format_duration

CLOCK_FILE = "clock.json"  # in the run's state/ folder
EVAL_MARGIN = 1.25
MIN_RESERVE_SHARE = 0.05
FINAL_MIN_S, FINAL_SHARE = 15.0, 0.01
MODES = ("wall", "active")


@dataclass
class Clock:
    budget_s: float
    started_at: float  # time.time() at the start of the budget (on the active clock: now less the time used)
    mode: str = "wall"
    scoring_s: float = 0.0  # what one harness scoring is expected to take

    @classmethod
    def start(cls, budget_s: float, mode: str = "wall", scoring_s: float = 0.0) -> Clock:
        return cls(budget_s, time.time(), mode, scoring_s)

    @classmethod
    def resume(cls, budget_s: float, started_at: float, mode: str, state_dir: Path, scoring_s: float = 0.0) -> Clock:
        """The clock of a resumed run: on the wall clock from the run's first start; on the active clock from
        the time used as last saved, so the time the run was down does not count."""
        saved = read_saved(state_dir)
        if mode == "active" and saved.get("used_s") is not None:
            return cls(budget_s, time.time() - float(saved["used_s"]), mode, scoring_s)
        return cls(budget_s, started_at, mode, scoring_s)  # nothing saved yet: down before its first save

    # the budget
    @property
    def ends_at(self) -> float:
        return self.started_at + self.budget_s

    def elapsed_s(self) -> float:
        return time.time() - self.started_at

    def to_deadline_s(self) -> float:
        return max(0.0, self.ends_at - time.time())

    # the reserve and the margins
    def scoring_reserve_s(self, scorings: int = 1) -> float:
        return self.scoring_s * scorings

    @property
    def final_s(self) -> float:
        return max(FINAL_MIN_S, FINAL_SHARE * self.budget_s)

    @property
    def wrapup_s(self) -> float:
        """Seconds before the deadline at which wrap-up starts."""
        return max(EVAL_MARGIN * self.scoring_s, MIN_RESERVE_SHARE * self.budget_s) + self.final_s

    def observe_scoring(self, duration_s: float) -> None:
        """A slower scoring than assumed moves wrap-up earlier (never later)."""
        self.scoring_s = max(self.scoring_s, duration_s)

    # the phases
    def phase(self) -> str:
        left = self.to_deadline_s()
        if left <= self.final_s:
            return "final"
        return "wrap-up" if left <= self.wrapup_s else "work"

    def phase_left_s(self) -> float:
        """What a command, job or model call may use now: the time to the end of the current phase."""
        left, phase = self.to_deadline_s(), self.phase()
        if phase == "work":
            return max(0.0, left - self.wrapup_s)
        return max(0.0, left - self.final_s) if phase == "wrap-up" else left

    def work_left_s(self) -> float:
        return max(0.0, self.to_deadline_s() - self.wrapup_s)

    def until_final_s(self) -> float:
        """Time to the final margin: the longest a turn or a scoring may take and still be submitted."""
        return max(0.0, self.to_deadline_s() - self.final_s)

    def share_before_scoring_s(self, parts: int, grace_s: float = 0.0) -> float:
        """One of `parts` equal shares of the time left once each part's scoring reserve (and a grace) is kept."""
        return (self.to_deadline_s() - self.scoring_reserve_s(parts) - grace_s) / parts

    def line(self) -> str:
        return (f"phase {self.phase()} ({format_duration(self.phase_left_s())} left in it); "
                f"elapsed {format_duration(self.elapsed_s())} of {format_duration(self.budget_s)}; "
                f"{format_duration(self.to_deadline_s())} to the deadline; wrap-up reserve "
                f"{format_duration(self.wrapup_s)}")

    def save(self, state_dir: Path, reserve_s: float | None = None) -> None:
        """Record the budget used so far and the reserve kept at the end (state/clock.json; the wrap-up reserve
        unless the policy keeps another): a resume on the active clock starts from it, and the panel reads it."""
        reserve_s = self.wrapup_s if reserve_s is None else reserve_s
        atomic_write_json(Path(state_dir) / CLOCK_FILE, {
            "used_s": round(self.elapsed_s(), 3), "saved_at": time.time(), "reserve_s": round(reserve_s, 3)})


def read_saved(state_dir: Path) -> dict[str, Any]:
    try:
        saved = json.loads((Path(state_dir) / CLOCK_FILE).read_text())
    except (OSError, ValueError):
        return {}
    return saved if isinstance(saved, dict) else {}


def observed_elapsed_s(started_at: float, mode: str, state_dir: Path, stopped_at: float | None = None) -> float:
    """A run's elapsed budget as an onlooker sees it from its files: on the active clock the time used as last
    saved, plus the time since then while the run is alive; on the wall clock the time since its start (to
    `stopped_at` for a run that is gone)."""
    saved = read_saved(state_dir)
    if mode == "active" and saved.get("used_s") is not None:
        since = 0.0 if stopped_at is not None else time.time() - float(saved.get("saved_at", time.time()))
        return float(saved["used_s"]) + max(0.0, since)
    return max(0.0, (stopped_at or time.time()) - started_at) if started_at else 0.0
