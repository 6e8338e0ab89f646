"""The step loop's state between two steps, as plain data (saved with every step), and its limits."""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from typing import Any

START = "The run starts now. Write your plan (update_plan) and delegate the first subtask."
# Durations, clock times, pids and log paths differ on every run of the same command: not a new observation.
# Progress such as 13/60 -> 19/60 is.
VOLATILE = re.compile(r"\b\d+(\.\d+)?\s?(ms|s|sec|min|m|h)\b|\d\d:\d\d:\d\d(\.\d+)?|\bpid:? \d+"
                      r"|[\w.-]*(?:/[\w.-]+){2,}")


@dataclass
class LoopLimits:
    max_steps: int = 5000
    subtask_steps: int = 60
    repeat_limit: int = 3  # the same actions and observations this many turns in a row stop a worker
    idle_turns: int = 3  # supervisor turns without a decision, after which the loop waits for a job event
    idle_wait_s: float = 900.0
    context_tokens: int = 32_000  # the whole prompt: system, tools and messages
    max_cost_usd: float | None = None


@dataclass
class Subtask:
    role: str
    brief: str
    minutes: float
    ends_at_s: float  # on the run's clock (the deadline's elapsed seconds)
    steps: int = 0
    signatures: list[str] = field(default_factory=list)
    stop: str | None = None  # why it must end now; the worker is then asked for its final report


@dataclass
class LoopState:
    step: int = 0
    phase: str = "work"
    notes: list[str] = field(default_factory=lambda: [START])  # for the supervisor's next turn, in order
    idle: int = 0
    subtask: Subtask | None = None
    next_message: str | None = None  # what the active worker's next turn is sent
    submitted: str | None = None
    unverified: list[dict[str, str]] = field(default_factory=list)


@dataclass
class LoopEnd:
    reason: str
    submitted: str | None = None




def state_from_snapshot(loop: dict[str, Any]) -> LoopState:
    loop = dict(loop)
    subtask = loop.pop("subtask")
    return LoopState(**loop, subtask=Subtask(**subtask) if subtask else None)


def observation_digest(calls: list[dict[str, Any]], text: str, results: list[dict[str, Any]]) -> str:
    """A short digest of a turn's actions and observations, for repeat detection (saved state stays small)."""
    observed = json.dumps([(c["name"], c["arguments"]) for c in calls]) + text + json.dumps(
        [VOLATILE.sub("#", r["content"]) for r in results])
    return hashlib.sha1(observed.encode()).hexdigest()[:16]
