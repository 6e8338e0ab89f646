"""The crew's step loop: the supervisor decides, one worker at a time acts, the harness scores.

A step is one agent turn: one model call and the tools it asked for, run by an autogen AssistantAgent
(max_tool_iterations=1). Between steps everything the loop knows is plain data (`state()`), saved to
state/ after each one; every model response and tool result goes to the trace.
"""

from __future__ import annotations

import json
import logging
import os
import re
import time
from dataclasses import dataclass, field
from typing import Any

from autogen_agentchat.agents import AssistantAgent
from autogen_agentchat.base import Response
from autogen_agentchat.messages import TextMessage, ThoughtEvent, ToolCallExecutionEvent, ToolCallRequestEvent
from autogen_core import CancellationToken
from autogen_core.models import ChatCompletionClient, SystemMessage

from challenges.spec import Challenge, Preset
from checkpoints import atomic_write_json
from crew.clock import Deadline
from crew.context import BoundedContext, estimate_text_tokens, estimate_tokens
from crew.durations import format_duration
from crew.ledger import Ledger
from crew.plan import Plan
from crew.prompts import supervisor_system, worker_system
from crew.replay import ReplayExhausted
from crew.rundir import RunDir
from crew.tools import CrewTools, Decisions
from crew.trace import Trace
from crew.usage_meter import UsageMeter

log = logging.getLogger(__name__)
TOOL_RESULT_TRACE_CHARS = 20_000
DIGITS = re.compile(r"\d+")


@dataclass
class LoopLimits:
    max_steps: int = 5000
    subtask_steps: int = 60
    repeat_limit: int = 3  # the same action and observation this many times in a row stops a worker
    idle_turns: int = 3  # supervisor turns without a decision before the loop ends the run
    context_tokens: int = 32_000  # the whole prompt: system, tools and messages (estimated)
    max_cost_usd: float | None = None


@dataclass
class LoopEnd:
    reason: str
    submitted: str | None = None  # the evaluation id the supervisor chose, if it did
    notes: list[str] = field(default_factory=list)


class WorkClock:
    """Time left before the scoring reserve: what commands and jobs may use (toolkit's TimeLeft)."""

    def __init__(self, deadline: Deadline, reserve_s: float) -> None:
        self.deadline, self.reserve_s = deadline, reserve_s

    def time_left_s(self) -> float:
        return max(0.0, self.deadline.time_left_s() - self.reserve_s)


class CrewLoop:
    def __init__(self, *, run: RunDir, challenge: Challenge, preset: Preset, deadline: Deadline, trace: Trace,
                 tools: CrewTools, clients: dict[str, ChatCompletionClient], meter: UsageMeter,
                 work_clock: WorkClock, limits: LoopLimits | None = None) -> None:
        self.rundir, self.challenge, self.preset, self.deadline, self.trace = run, challenge, preset, deadline, trace
        self.tools, self.clients, self.meter, self.clock = tools, clients, meter, work_clock
        self.limits = limits or LoopLimits()
        self.ledger: Ledger = tools.ledger
        self.plan: Plan = tools.plan
        self.steps = 0
        self.unverified: list[dict[str, str]] = []
        self._pending_thought: dict[str, str] = {}
        self.supervisor = self._agent("supervisor")

    # -- agents -----------------------------------------------------------------------------------

    def _agent(self, role: str) -> AssistantAgent:
        system = (supervisor_system(self.challenge, self.preset) if role == "supervisor"
                  else worker_system(role, self.challenge, self.preset))
        tools = self.tools.for_role(role)
        # The cap is for the whole prompt: what the system prompt and the tool schemas take is fixed.
        fixed = (estimate_tokens(SystemMessage(content=system))
                 + estimate_text_tokens(json.dumps([t.schema for t in tools])))
        context = BoundedContext(max_tokens=self.limits.context_tokens - fixed, anchors=0 if role == "supervisor"
                                 else 1)
        return AssistantAgent(name=role, model_client=self.clients[role], tools=tools, system_message=system,
                              model_context=context, reflect_on_tool_use=False, max_tool_iterations=1,
                              model_client_stream=False)

    # -- the run ----------------------------------------------------------------------------------

    async def run(self) -> LoopEnd:
        note = "The run starts now. Write your plan (update_plan) and delegate the first subtask."
        idle = 0
        while True:
            stop = self._must_stop()
            if stop:
                return LoopEnd(stop)
            self.tools.decisions = Decisions()
            try:
                await self._step(self.supervisor, "supervisor", self._supervisor_message(note))
            except ReplayExhausted as err:
                return LoopEnd(f"the supervisor's model has no more answers ({err})")
            decisions = self.tools.decisions
            if decisions.submission:
                return LoopEnd("the supervisor submitted", submitted=decisions.submission["evaluation"])
            if decisions.delegation:
                idle = 0
                note = await self._run_subtask(decisions.delegation)
            else:
                idle += 1
                if idle >= self.limits.idle_turns:
                    return LoopEnd(f"the supervisor made no decision in {idle} turns")
                note = "You neither delegated nor submitted. Use delegate(...) or submit(...)."

    async def _run_subtask(self, delegation: dict[str, Any]) -> str:
        role, subtask, minutes = delegation["role"], delegation["subtask"], delegation["minutes"]
        ends_at = min(time.time() + minutes * 60, time.time() + self.clock.time_left_s())
        self.trace.emit("subtask_started", agent="supervisor", role=role, subtask=subtask, minutes=minutes)
        worker = self._agent(role)
        message = (f"Your subtask (time allotted {format_duration(minutes * 60)}):\n{subtask}\n\n"
                   f"Ledger:\n{self.ledger.summary()}")
        signatures: list[str] = []
        warned, reason = False, ""
        for _ in range(self.limits.subtask_steps):
            if (stop := self._must_stop()) is not None:
                reason = stop
                break
            if time.time() >= ends_at:
                if warned:
                    reason = "its time allotment ran out"
                    break
                warned, message = True, "Your time allotment is over: call report(...) now."
            try:
                signature = await self._step(worker, role, message)
            except ReplayExhausted as err:
                reason = f"its model had no more answers ({err})"
                break
            message = None
            if self.tools.decisions.report is not None:
                break
            signatures.append(signature)
            if len(signatures) >= self.limits.repeat_limit and len(set(signatures[-self.limits.repeat_limit:])) == 1:
                reason = f"it repeated the same action and observation {self.limits.repeat_limit} times"
                self.trace.emit("worker_stopped", agent=role, reason=reason)
                break
        else:
            reason = f"it used its {self.limits.subtask_steps} steps"
        report = self.tools.decisions.report
        self.trace.emit("subtask_finished", agent=role, report=report, stopped=reason or None)
        if report is None:
            return f"The {role} was stopped because {reason}, without a report."
        self._check_claims(role, json.dumps(report))
        text = "\n".join(f"- {key}: {value}" for key, value in report.items())
        return f"Report from the {role}" + (f" (stopped: {reason})" if reason else "") + f":\n{text}"

    def _must_stop(self) -> str | None:
        if self.clock.time_left_s() <= 0:
            return "the time before the scoring reserve is used up"
        if self.steps >= self.limits.max_steps:
            return f"the step limit ({self.limits.max_steps}) was reached"
        if self.limits.max_cost_usd is not None and self.meter.cost_usd >= self.limits.max_cost_usd:
            return f"the cost limit (${self.limits.max_cost_usd:g}) was reached"
        return None

    # -- one step ---------------------------------------------------------------------------------

    async def _step(self, agent: AssistantAgent, role: str, message: str | None) -> str:
        """One agent turn; returns a signature of its actions and observations (for repeat detection)."""
        self.steps += 1
        messages = [TextMessage(content=message, source="crew")] if message else []
        actions: list[str] = []
        async for event in agent.on_messages_stream(messages, CancellationToken()):
            if isinstance(event, ThoughtEvent):
                self._pending_thought[role] = event.content
            elif isinstance(event, ToolCallRequestEvent):
                calls = [{"id": c.id, "name": c.name, "arguments": c.arguments} for c in event.content]
                response = {"tool_calls": calls}
                if thought := self._pending_thought.pop(role, None):
                    response["text"] = thought
                    self._check_claims(role, thought)
                self._record_model_call(role, response)
                actions.append(json.dumps([(c.name, c.arguments) for c in event.content]))
            elif isinstance(event, ToolCallExecutionEvent):
                results = [{"call_id": r.call_id, "name": r.name, "is_error": r.is_error,
                            "content": r.content[:TOOL_RESULT_TRACE_CHARS]} for r in event.content]
                self.trace.emit("tool_results", agent=role, step=self.steps, results=results)
                # Timings, log names and pids differ on every run of the same command: not a new observation.
                actions.append(json.dumps([(r.name, DIGITS.sub("#", r.content)) for r in event.content]))
            elif isinstance(event, Response) and isinstance(event.chat_message, TextMessage):
                self._record_model_call(role, {"text": event.chat_message.content})
                self._check_claims(role, event.chat_message.content)
                actions.append(event.chat_message.content)
        self._save_state(role, agent)
        return "\n".join(actions)

    def _record_model_call(self, role: str, response: dict[str, Any]) -> None:
        usage = self.meter.record(role, self.clients[role])
        self.trace.emit("model_response", agent=role, step=self.steps, response=response, usage=usage,
                        cost_usd=round(self.meter.cost_usd, 6))

    def _check_claims(self, role: str, text: str) -> None:
        for claim in self.ledger.unverified_claims(text):
            entry = {"agent": role, "value": claim.value, "context": claim.context}
            self.unverified.append(entry)
            self.trace.emit("unverified_claim", agent=role, value=claim.value, context=claim.context)

    def _supervisor_message(self, note: str) -> str:
        return (f"## Budget\nelapsed {format_duration(self.deadline.elapsed_s())}, "
                f"{format_duration(self.clock.time_left_s())} left before the scoring reserve "
                f"({format_duration(self.clock.reserve_s)}); phase: work; model cost so far "
                f"${self.meter.cost_usd:.2f}\n\n## Plan\n{self.plan.render()}\n\n"
                f"## Ledger (harness records)\n{self.ledger.summary()}\n\n## Since your last turn\n{note}")

    # -- state ------------------------------------------------------------------------------------

    def _save_state(self, role: str, agent: AssistantAgent) -> None:
        """The loop's state after a step, as plain data: new messages go once to an append-only journal,
        the state lists their ids; so saving costs the same at any step."""
        contexts = self._contexts(role, agent)
        fresh = [line for ctx in contexts.values() for line in ctx.fresh_messages()]
        if fresh:
            with open(self.rundir.state / "messages.jsonl", "a", encoding="utf-8") as journal:
                journal.writelines(json.dumps({"id": i, "message": m}, default=str) + "\n" for i, m in fresh)
                journal.flush()
                os.fsync(journal.fileno())
        atomic_write_json(self.rundir.state / "latest.json", self.state_after(role, contexts))

    def _contexts(self, role: str, agent: AssistantAgent) -> dict[str, BoundedContext]:
        # autogen has no public getter for an agent's context, and its save_state is async.
        contexts = {role: agent._model_context}
        if role != "supervisor":
            contexts["supervisor"] = self.supervisor._model_context
        return contexts

    def state_after(self, role: str, contexts: dict[str, BoundedContext]) -> dict[str, Any]:
        return {
            "step": self.steps, "active": role, "plan": self.plan.to_dict(),
            "contexts": {name: ctx.snapshot() for name, ctx in contexts.items()},
            "usage": self.meter.to_dict(), "unverified": len(self.unverified),
            "decisions": {"delegation": self.tools.decisions.delegation,
                          "evaluations": self.tools.decisions.evaluations},
        }
