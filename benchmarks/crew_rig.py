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

from challenges.framework.api import ScoreContext
from challenges.framework.loader import load_challenge
from crew.agent.models.anthropic_convert import request_params
from crew.agent.models.retry import RetryingClient
from crew.agent.replay import ReplayClient
from crew.agent.usage_meter import UsageMeter
from crew.loop.plan import Plan
from crew.loop.step_loop import CrewLoop, LoopLimits
from crew.loop.tools import CrewTools
from crew.run.clock import Clock
from crew.run.ledger import Ledger
from crew.run.rundir import RunDir
from crew.run.trace import Trace
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
    """A replayed model that keeps each call's prompt as sent (the Anthropic request body): per message, a
    fingerprint and its size in tokens (four characters a token of the JSON), and the system and tools."""

    def __init__(self, answers, agent):
        super().__init__(answers, agent)
        self.prompts: list[list[tuple[int, int]]] = []
        self.fixed_tokens = 0  # system prompt and tool schemas

    async def create(self, messages, *, tools=(), **kwargs):
        params = request_params("replay", 8192, messages, tools)
        self.prompts.append([(hash(json.dumps(m)), len(json.dumps(m)) // 4) for m in params["messages"]])
        self.fixed_tokens = len(json.dumps(params.get("system", [])) + json.dumps(params.get("tools", []))) // 4
        return await super().create(messages, tools=tools, **kwargs)


def toy_challenge(root: Path):
    folder = root / "toy"
    folder.mkdir(parents=True, exist_ok=True)  # may exist: a second loop on the same folders
    (folder / "challenge.toml").write_text(TOY_TOML)
    (folder / "task.md").write_text("Write a number into a file; higher is better.\n")
    (folder / "scorer.py").write_text("from challenges import Score\n\ndef score(submission, ctx):\n"
                                      "    return Score(float(submission.read_text()))\n")
    return load_challenge(folder)


def build(root: Path, steps: int, engineer_answer: Callable[[int], dict], context_tokens: int = 32_000,
          record: bool = True, existing_run: RunDir | None = None):
    """Return (loop, run directory, replay clients by role) ready to `asyncio.run(loop.run())`;
    `engineer_answer(i)` is the engineer's i-th answer ({"tool_calls": [...], "text": thought}); `record`
    keeps prompts. With `existing_run`, the loop works on that run directory (to resume it)."""
    challenge = toy_challenge(root / "challenges")
    run = existing_run or RunDir.create("toy", root / "run")
    clock = Clock.start(24 * 3600, scoring_s=60)
    trace = Trace(run.trace)
    toolkit = Toolkit(run.root, workspace=run.workspace, clock=clock)
    ctx = ScoreContext(challenge="toy", preset="smoke", data_dir=root, private_dir=root, scratch_dir=run.scratch)
    tools = CrewTools(challenge=challenge, toolkit=toolkit, ledger=Ledger(run.evaluations, challenge),
                      plan=Plan.initial(clock.budget_s), trace=trace, score_context=ctx,
                      evaluations_dir=run.evaluations, memory=None, clock=clock)
    supervisor = [{"tool_calls": [{"name": "delegate", "arguments": {
        "role": "engineer", "subtask": "Work through the files step by step.", "minutes": 10**6}}]}]
    engineer = [engineer_answer(i) for i in range(steps)]
    replay = RecordingReplay if record else ReplayClient
    recorders = {"supervisor": replay(supervisor, "supervisor"), "engineer": replay(engineer, "engineer"),
                 "scout": replay([], "scout")}
    clients = {role: RetryingClient(client) for role, client in recorders.items()}
    limits = LoopLimits(subtask_steps=steps + 10, repeat_limit=50, context_tokens=context_tokens)
    loop = CrewLoop(preset=challenge.presets["smoke"], tools=tools, clients=clients,
                    meter=UsageMeter(dict.fromkeys(recorders, "")), clock=clock, trace=trace,
                    state_dir=run.state, limits=limits)
    return loop, run, recorders


def time_steps(loop: CrewLoop) -> tuple[list[float], list[float]]:
    """Run the loop; return each step's wall time and its CPU time (the latter is what a busy machine
    does not inflate; tools run in worker threads, so it is the process's). A step: the limits check, the
    model call, the tools, trace events and the state save; it is timed from one save to the next."""
    wall: list[float] = []
    cpu: list[float] = []
    original = loop.save
    last = [time.perf_counter(), time.process_time()]

    def timed() -> None:
        original()
        now = [time.perf_counter(), time.process_time()]
        wall.append(now[0] - last[0])
        cpu.append(now[1] - last[1])
        last[:] = now

    loop.save = timed
    asyncio.run(loop.run())
    return wall, cpu


def read_slice_answer(i: int, thought_chars: int = 560, write_every: int = 5, write_chars: int = 4000) -> dict:
    """A realistic engineer answer: a thought (about 140 tokens) and a tool call; every `write_every`-th
    call writes a file of `write_chars` characters (long tool arguments), the others read file slices."""
    thought = f"Step {i}: " + ("looking at the next part of the data and deciding what to change. " * 20)
    thought = thought[:thought_chars]
    if write_every and i % write_every == write_every - 1:
        content = "\n".join(f"x_{i}_{n} = {n} * 0.5  # a line of the script being written" for n in range(200))
        call = {"name": "write_file", "arguments": {"path": f"script_{i % 7}.py", "content": content[:write_chars]}}
    else:
        start = 1 + (i * 37) % 900
        call = {"name": "read_file", "arguments": {"path": "big.txt", "start_line": start,
                                                   "end_line": start + 10 + (i * 13) % 90}}
    return {"text": thought, "tool_calls": [call]}


def write_big_file(workspace: Path) -> None:
    lines = (f"line {n}: " + "lorem ipsum dolor sit amet " * (2 + n % 5) for n in range(1000))
    (workspace / "big.txt").write_text("\n".join(lines))
