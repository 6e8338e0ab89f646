"""The run's clock: a deadline saved with the run, wall time (downtime counts) or active time (only alive).

Active time survives a crash the same way for every policy: the policy saves the time used so far
(`save_used`) as it goes, and a resumed run starts its clock that far into the budget.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path

from checkpoints.atomic import atomic_write_json

USED_FILE = "clock.json"  # in the run's state/ folder


@dataclass(frozen=True)
class Deadline:
    started_at: float  # time.time() at the start of the budget (on the active clock: now less the time used)
    budget_s: float

    @classmethod
    def start(cls, budget_s: float) -> Deadline:
        return cls(time.time(), budget_s)

    @classmethod
    def resume(cls, budget_clock: str, started_at: float, budget_s: float, state_dir: Path) -> Deadline:
        """The deadline of a resumed run: on the wall clock the run's first start; on the active clock the time
        used as last saved, so the time the run was down does not count."""
        if budget_clock == "active":
            try:
                used = json.loads((Path(state_dir) / USED_FILE).read_text())["used_s"]
                return cls(time.time() - float(used), budget_s)
            except (OSError, ValueError, KeyError, TypeError):
                pass  # nothing saved yet: the run went down before its first save
        return cls(started_at, budget_s)

    @property
    def ends_at(self) -> float:
        return self.started_at + self.budget_s

    def elapsed_s(self) -> float:
        return time.time() - self.started_at

    def time_left_s(self) -> float:
        return max(0.0, self.ends_at - time.time())

    def save_used(self, state_dir: Path) -> None:
        """Record the budget used so far (state/clock.json), for a resume on the active clock."""
        atomic_write_json(Path(state_dir) / USED_FILE, {"used_s": round(self.elapsed_s(), 3), "saved_at": time.time()})
