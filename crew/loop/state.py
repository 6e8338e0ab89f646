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
    no_call_turns: int = 5  # supervisor turns in a row with no tool call that ran: the model cannot act, the run ends
    context_tokens: int = 32_000  # the whole prompt: system, tools and messages
    max_cost_usd: float | None = None
    max_workers: int = 3  # subtasks at once (engineers are also bounded by the GPUs, see crew/capacity.py)
    round_poll_s: float = 5.0  # while workers act, the loop looks at limits and saves at least this often


@dataclass
class Subtask:
    id: str  # engineer-1, scout-2, ...: names its worker in the trace and its context in snapshots
    role: str
    brief: str
    minutes: float
    ends_at_s: float  # on the run's clock (the deadline's elapsed seconds)
    steps: int = 0
    signatures: list[str] = field(default_factory=list)
    stop: str | None = None  # why it must end now; the worker is then asked for its final report
    next_message: str | None = None  # what its worker's next turn is sent


@dataclass
class WorkerSlots:
    """Which subtasks may start now: at most `max_workers` at once, one scout, and engineers by the run's job
    slots (at least one). Locally a slot is a GPU: engineers share the workspace, and on one GPU their jobs would
    only queue. With `--jobs slurm` a slot is a SLURM allocation: `cluster_jobs` (`run --max-jobs`) jobs at once,
    whichever engineers hold them, however many GPUs this machine has."""

    gpus: int = 0
    max_workers: int = 3
    running: list[str] = field(default_factory=list)  # the roles at work
    reserved: list[str] = field(default_factory=list)  # delegated in the supervisor's turn under way
    cluster_jobs: int | None = None  # --jobs slurm: the jobs the run may hold on the cluster at once

    def refusal(self, role: str) -> str | None:
        busy = self.running + self.reserved
        if len(busy) >= self.max_workers:
            return f"{len(busy)} subtasks are under way, the most at once ({self.max_workers}); wait for a report."
        if role != "engineer":
            limit, why = 1, "one at a time"
        elif self.cluster_jobs is not None:
            limit = max(1, self.cluster_jobs)
            why = f"at most one per job this run may hold on the cluster, {self.cluster_jobs} (--max-jobs)"
        else:
            limit, why = max(1, self.gpus), f"one per GPU and this run has {self.gpus or 'no'} GPU"
        if busy.count(role) >= limit:
            other = "scout" if role == "engineer" else "engineer"
            return (f"{busy.count(role)} {role} subtask(s) already under way ({why}); wait for its report, "
                    f"or give the {other} something to do meanwhile.")
        return None

    def reserve(self, role: str) -> None:
        self.reserved.append(role)

    def allow(self, max_workers: int) -> None:
        self.max_workers = max_workers

    def at_work(self, roles: list[str]) -> None:
        self.running = list(roles)

    def turn_over(self) -> None:
        """The supervisor's turn ended: what it delegated is at work now (or was refused)."""
        self.reserved = []


@dataclass
class LoopState:
    step: int = 0
    phase: str = "work"
    notes: list[str] = field(default_factory=lambda: [START])  # for the supervisor's next turn, in order
    idle: int = 0
    no_calls: int = 0  # supervisor turns in a row with no tool call that ran
    subtasks: list[Subtask] = field(default_factory=list)  # running at once, in the order they started
    started_subtasks: int = 0
    supervisor_due: bool = False  # a subtask ended while others run: the supervisor gets a turn next
    submitted: str | None = None
    unverified: list[dict[str, str]] = field(default_factory=list)


@dataclass
class LoopEnd:
    reason: str
    submitted: str | None = None




def state_from_snapshot(loop: dict[str, Any]) -> LoopState:
    loop = dict(loop)
    subtasks = [Subtask(**s) for s in loop.pop("subtasks", [])]
    if old := loop.pop("subtask", None):  # a snapshot from before parallel subtasks: one worker, no id
        subtasks.append(Subtask(id=f"{old['role']}-1", **old, next_message=loop.get("next_message")))
        loop.setdefault("started_subtasks", 1)
    loop.pop("next_message", None)
    return LoopState(**loop, subtasks=subtasks)


def observation_digest(calls: list[dict[str, Any]], text: str, results: list[dict[str, Any]]) -> str:
    """A short digest of a turn's actions and observations, for repeat detection (saved state stays small)."""
    observed = json.dumps([(c["name"], c["arguments"]) for c in calls]) + text + json.dumps(
        [VOLATILE.sub("#", r["content"]) for r in results])
    return hashlib.sha1(observed.encode()).hexdigest()[:16]
