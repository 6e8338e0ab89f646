"""The supervisor's research plan: a time allocation per phase and a status line per item."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from crew.loop.sizing import SIZES
from crew.run.durations import format_duration

# Default shares of the budget; the supervisor changes them with update_plan.
DEFAULT_SHARES = {"baseline": 0.10, "exploration": 0.25, "main training": 0.45, "final evaluation": 0.10,
                  "reserve": 0.10}


@dataclass
class PlanItem:
    phase: str
    minutes: float
    status: str = "not started"


@dataclass
class Plan:
    items: list[PlanItem] = field(default_factory=list)

    @classmethod
    def initial(cls, budget_s: float) -> Plan:
        plan = cls([PlanItem(phase, round(budget_s * share / 60, 1)) for phase, share in DEFAULT_SHARES.items()])
        short = format_duration(SIZES[0][1] * budget_s)
        plan.update("exploration", f"not started: short fixed-length experiments (≤ {short} each), one change each")
        plan.update("main training", "not started: the exploration's winner, scaled up")
        return plan

    def update(self, phase: str, status: str, minutes: float | None = None) -> str:
        """Set one item's status (and time); an unknown phase is added. Returns a line for the tool result."""
        item = next((i for i in self.items if i.phase.lower() == phase.strip().lower()), None)
        if item is None:
            item = PlanItem(phase.strip(), 0.0)
            self.items.insert(max(0, len(self.items) - 1), item)  # before the reserve
        item.status = status.strip() or item.status
        if minutes is not None and minutes >= 0:
            item.minutes = round(float(minutes), 1)
        return f"plan: {item.phase} — {format_duration(item.minutes * 60)} — {item.status}"

    def render(self) -> str:
        total = sum(i.minutes for i in self.items)
        lines = [f"- {i.phase}: {format_duration(i.minutes * 60)} — {i.status}" for i in self.items]
        return "\n".join(lines + [f"(allocated {format_duration(total * 60)})"])

    def to_dict(self) -> dict:
        return {"items": [asdict(i) for i in self.items]}

    @classmethod
    def from_dict(cls, data: dict) -> Plan:
        return cls([PlanItem(**i) for i in data.get("items", [])])
