"""A crew loop on a toy challenge with a replayed model, for the crew benchmarks (not a benchmark itself).

The supervisor delegates one long subtask; the engineer then makes `steps` tool calls given by
`engineer_call(i)`. Every model call's messages are recorded, so prompt sizes can be measured.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from pathlib import Path

from challenges.api import ScoreContext
from challenges.loader import load_challenge
from crew.budget import BudgetGuard
from crew.clock import Deadline
from crew.context import estimate_text_tokens, estimate_tokens
from crew.ledger import Ledger
from crew.loop import CrewLoop, LoopLimits
from crew.models.retry import RetryingClient
from crew.plan import Plan
from crew.replay import ReplayClient
from crew.rundir import RunDir
from crew.tools import CrewTools
from crew.trace import Trace
from crew.usage_meter import UsageMeter
from toolkit import Toolkit

TOY_TOML = """name = "toy"
title = "Toy"
[metric]
name = "value"
direction = "max"
[submission]
description = "a file with a number"
[presets.smoke]
hours = 24
gpus = 0
score_minutes = 1
"""


class RecordingReplay(ReplayClient):
    """A replayed model that keeps each call's prompt: per message, a fingerprint and its token estimate."""

    def __init__(self, answers, agent):
        super().__init__(answers, agent)
        self.prompts: list[list[tuple[int, int]]] = []
        self.tool_tokens = 0

    async def create(self, messages, *, tools=(), **kwargs):
        self.prompts.append([(hash(json.dumps(m.model_dump(), default=str)), estimate_tokens(m)) for m in messages])
        self.tool_tokens = estimate_text_tokens(json.dumps([t if isinstance(t, dict) else t.schema for t in tools]))
        return await super().create(messages, tools=tools, **kwargs)


def toy_challenge(root: Path):
    folder = root / "toy"
    folder.mkdir(parents=True, exist_ok=True)  # may exist: a second loop on the same folders
    (folder / "challenge.toml").write_text(TOY_TOML)
    (folder / "task.md").write_text("Write a number into a file; higher is better.\n")
    (folder / "scorer.py").write_text("from challenges import Score\n\ndef score(submission, ctx):\n"
                                      "    return Score(float(submission.read_text()))\n")
    return load_challenge(folder)


def build(root: Path, steps: int, engineer_call: Callable[[int], dict], context_tokens: int = 32_000,
          record: bool = True, existing_run: RunDir | None = None):
    """Return (loop, replay clients by role) ready to `asyncio.run(loop.run())`; `record` keeps prompts.
    With `existing_run`, the loop works on that run directory (to resume it)."""
    challenge = toy_challenge(root / "challenges")
    run = existing_run or RunDir.create("toy", root / "run")
    deadline = Deadline.start(24 * 3600)
    trace = Trace(run.trace)
    budget = BudgetGuard(deadline, eval_estimate_s=60)
    toolkit = Toolkit(run.root, workspace=run.workspace, budget=budget)
    ctx = ScoreContext(challenge="toy", preset="smoke", data_dir=root, private_dir=root, scratch_dir=run.scratch)
    tools = CrewTools(challenge=challenge, toolkit=toolkit, ledger=Ledger(run.evaluations, challenge),
                      plan=Plan.initial(deadline.budget_s), trace=trace, score_context=ctx,
                      evaluations_dir=run.evaluations, memory=None, eval_timeout_s=lambda: 60.0)
    supervisor = [{"tool_calls": [{"name": "delegate", "arguments": {
        "role": "engineer", "subtask": "Work through the files step by step.", "minutes": 10**6}}]}]
    engineer = [{"tool_calls": [engineer_call(i)]} for i in range(steps)]
    replay = RecordingReplay if record else ReplayClient
    recorders = {"supervisor": replay(supervisor, "supervisor"), "engineer": replay(engineer, "engineer"),
                 "scout": replay([], "scout")}
    clients = {role: RetryingClient(client) for role, client in recorders.items()}
    limits = LoopLimits(subtask_steps=steps + 10, repeat_limit=50, context_tokens=context_tokens)
    loop = CrewLoop(run=run, challenge=challenge, preset=challenge.presets["smoke"], deadline=deadline,
                    trace=trace, tools=tools, clients=clients, meter=UsageMeter(dict.fromkeys(recorders, "")),
                    budget=budget, limits=limits)
    return loop, recorders


def time_steps(loop: CrewLoop) -> tuple[list[float], list[float]]:
    """Run the loop; return each step's wall time and its CPU time (the latter is what a busy machine
    does not inflate). A step: model call, tools, trace events and state save."""
    wall: list[float] = []
    cpu: list[float] = []
    original = loop._step

    async def timed(*args, **kwargs):
        start, start_cpu = time.perf_counter(), time.thread_time()
        try:
            return await original(*args, **kwargs)
        finally:
            wall.append(time.perf_counter() - start)
            cpu.append(time.thread_time() - start_cpu)

    loop._step = timed
    asyncio.run(loop.run())
    return wall, cpu
