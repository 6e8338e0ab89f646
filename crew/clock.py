"""The run's wall clock: a deadline saved with the run, so time spent down still counts."""

from __future__ import annotations

import time
from dataclasses import dataclass


@dataclass(frozen=True)
class Deadline:
    started_at: float  # time.time() at the start of the budget
    budget_s: float

    @classmethod
    def start(cls, budget_s: float) -> Deadline:
        return cls(time.time(), budget_s)

    @property
    def ends_at(self) -> float:
        return self.started_at + self.budget_s

    def elapsed_s(self) -> float:
        return time.time() - self.started_at

    def time_left_s(self) -> float:
        return max(0.0, self.ends_at - time.time())
