"""Tokens and cost per agent and per run, read from each model client after each call."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from crew.agent.models.usage import CallUsage, cost_usd


class UsageMeter:
    def __init__(self, models: dict[str, str]) -> None:
        """`models`: the model name behind each agent, for its price ('' for a replayed model: free)."""
        self.models = models
        self.by_agent: dict[str, CallUsage] = {role: CallUsage() for role in models}
        self.cost_by_agent: dict[str, float] = {role: 0.0 for role in models}

    def record(self, role: str, usage: CallUsage) -> dict[str, int]:
        """Add one call's usage to the totals; return it as plain data."""
        self.by_agent[role] = self.by_agent.get(role, CallUsage()) + usage
        if self.models.get(role):
            self.cost_by_agent[role] = self.cost_by_agent.get(role, 0.0) + cost_usd(self.models[role], usage)
        return asdict(usage)

    @property
    def total(self) -> CallUsage:
        total = CallUsage()
        for usage in self.by_agent.values():
            total = total + usage
        return total

    @property
    def cost_usd(self) -> float:
        return sum(self.cost_by_agent.values())

    def to_dict(self) -> dict[str, Any]:
        return {"by_agent": {role: asdict(u) for role, u in self.by_agent.items()},
                "cost_by_agent": self.cost_by_agent}

    def load(self, data: dict[str, Any]) -> None:
        self.by_agent = {role: CallUsage(**u) for role, u in data.get("by_agent", {}).items()}
        self.cost_by_agent = dict(data.get("cost_by_agent", {}))
