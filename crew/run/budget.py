"""The budget guard: phases (work, wrap-up, final) inside the run's deadline, and the time each may use.

Wrap-up starts when what is left is the scoring reserve: the challenge's measured evaluation time (the
slowest harness scoring so far, else the preset's score_minutes) with a margin, and at least a minimum
share of the budget. The final phase is the last moments: everything still running is ended and the best
evaluation record is submitted. Every command, job and model call is bounded by the end of its phase.
"""

from __future__ import annotations

from dataclasses import dataclass

from crew.run.clock import Deadline
from crew.run.durations import format_duration

EVAL_MARGIN = 1.25
MIN_RESERVE_SHARE = 0.05
FINAL_MIN_S, FINAL_SHARE = 15.0, 0.01


@dataclass
class BudgetGuard:
    deadline: Deadline
    eval_estimate_s: float

    @property
    def wrapup_s(self) -> float:
        """Seconds before the deadline at which wrap-up starts."""
        return max(EVAL_MARGIN * self.eval_estimate_s, MIN_RESERVE_SHARE * self.deadline.budget_s) + self.final_s

    @property
    def final_s(self) -> float:
        return max(FINAL_MIN_S, FINAL_SHARE * self.deadline.budget_s)

    def observe_evaluation(self, duration_s: float) -> None:
        """A slower scoring than assumed moves wrap-up earlier (never later)."""
        self.eval_estimate_s = max(self.eval_estimate_s, duration_s)

    def phase(self) -> str:
        left = self.deadline.time_left_s()
        if left <= self.final_s:
            return "final"
        return "wrap-up" if left <= self.wrapup_s else "work"

    def phase_ends_in_s(self) -> float:
        left = self.deadline.time_left_s()
        phase = self.phase()
        if phase == "work":
            return left - self.wrapup_s
        return left - self.final_s if phase == "wrap-up" else left

    def time_left_s(self) -> float:
        """What a command or job may use now: the time to the end of the current phase (toolkit's TimeLeft)."""
        return max(0.0, self.phase_ends_in_s())

    def work_left_s(self) -> float:
        return max(0.0, self.deadline.time_left_s() - self.wrapup_s)

    def line(self) -> str:
        return (f"phase {self.phase()} ({format_duration(self.time_left_s())} left in it); "
                f"elapsed {format_duration(self.deadline.elapsed_s())} of {format_duration(self.deadline.budget_s)}; "
                f"{format_duration(self.deadline.time_left_s())} to the deadline; wrap-up reserve "
                f"{format_duration(self.wrapup_s)}")
