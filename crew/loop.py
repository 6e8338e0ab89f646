"""The crew's step loop: the supervisor decides, one worker at a time acts, the harness scores.

A step is one agent turn: one model call and the tools it asked for, run by an autogen AssistantAgent
(max_tool_iterations=1). Between steps everything the loop knows is plain data (`state()`), saved to
state/ after each one; every model response and tool result goes to the trace.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import os
import re
import time
from dataclasses import asdict, dataclass, field
from typing import Any

from autogen_agentchat.agents import AssistantAgent
from autogen_agentchat.base import Response
from autogen_agentchat.messages import TextMessage, ThoughtEvent, ToolCallExecutionEvent, ToolCallRequestEvent
from autogen_core import CancellationToken
from autogen_core.models import ChatCompletionClient, SystemMessage

from challenges.spec import Challenge, Preset
from crew.budget import BudgetGuard
from crew.clock import Deadline
from crew.context import BoundedContext, estimate_text_tokens, estimate_tokens
from crew.durations import format_duration
from crew.ledger import Ledger
from crew.plan import Plan
from crew.prompts import supervisor_system, worker_system
from crew.replay import ReplayExhausted
from crew.rundir import RunDir
from crew.snapshots import JOURNAL, client_positions, save_snapshot
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


@dataclass
class LoopState:
    """Where the loop is between two steps, as plain data; with the contexts, all a resume needs."""

    step: int = 0
    note: str = "The run starts now. Write your plan (update_plan) and delegate the first subtask."
    idle: int = 0
    phase: str = "work"
    subtask: dict[str, Any] | None = None  # role, subtask, minutes, ends_at, message, warned, signatures
    submitted: str | None = None
    unverified: list[dict[str, str]] = field(default_factory=list)


class CrewLoop:
    def __init__(self, *, run: RunDir, challenge: Challenge, preset: Preset, deadline: Deadline, trace: Trace,
                 tools: CrewTools, clients: dict[str, ChatCompletionClient], meter: UsageMeter,
                 budget: BudgetGuard, limits: LoopLimits | None = None) -> None:
        self.rundir, self.challenge, self.preset, self.deadline, self.trace = run, challenge, preset, deadline, trace
        self.tools, self.clients, self.meter, self.budget = tools, clients, meter, budget
        self.limits = limits or LoopLimits()
        self.ledger: Ledger = tools.ledger
        self.plan: Plan = tools.plan
        self.state = LoopState()
        self._pending_thought: dict[str, str] = {}
        self.supervisor = self._agent("supervisor")
        self.worker: AssistantAgent | None = None

    @property
    def steps(self) -> int:
        return self.state.step

    @property
    def unverified(self) -> list[dict[str, str]]:
        return self.state.unverified

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
        """Run (or, after restore(), continue) until a submission, the final phase or a stop."""
        state = self.state
        while True:
            if (stop := self._must_stop()) is not None:
                return LoopEnd(stop, submitted=state.submitted)
            if state.subtask is not None:
                state.note = await self._continue_subtask()
                continue
            self.tools.decisions = Decisions()
            try:
                await self._step(self.supervisor, "supervisor", self._supervisor_message(state.note))
            except ReplayExhausted as err:
                return LoopEnd(f"the supervisor's model has no more answers ({err})")
            except TimeoutError:
                continue  # the phase ended during the call: the next turn starts in the new phase
            decisions = self.tools.decisions
            if decisions.submission:
                state.submitted = decisions.submission["evaluation"]
                self._save_state()
                return LoopEnd("the supervisor submitted", submitted=state.submitted)
            if decisions.delegation:
                state.idle = 0
                self._start_subtask(decisions.delegation)
            else:
                state.idle += 1
                if state.idle >= self.limits.idle_turns:
                    return LoopEnd(f"the supervisor made no decision in {state.idle} turns")
                state.note = "You neither delegated nor submitted. Use delegate(...) or submit(...)."
            self._save_state()

    def _start_subtask(self, delegation: dict[str, Any]) -> None:
        role, subtask, minutes = delegation["role"], delegation["subtask"], delegation["minutes"]
        ends_at = time.time() + min(minutes * 60, self.budget.time_left_s())
        self.trace.emit("subtask_started", agent="supervisor", role=role, subtask=subtask, minutes=minutes)
        self.worker = self._agent(role)
        message = (f"Your subtask (time allotted {format_duration(minutes * 60)}):\n{subtask}\n\n"
                   f"Budget: {self.budget.line()}\n\nLedger:\n{self.ledger.summary()}")
        self.state.subtask = {"role": role, "subtask": subtask, "minutes": minutes, "ends_at": ends_at,
                              "message": message, "warned": False, "signatures": [], "steps": 0}

    async def _continue_subtask(self) -> str:
        """Run the active subtask's steps until its report or a stop; return the note for the supervisor."""
        sub, role = self.state.subtask, self.state.subtask["role"]
        reason = ""
        while True:
            if (stop := self._must_stop()) is not None or self.budget.phase() != self.state.phase:
                reason = stop or f"the run entered its {self.budget.phase()} phase"
                break
            if sub["steps"] >= self.limits.subtask_steps:
                reason = f"it used its {self.limits.subtask_steps} steps"
                break
            if time.time() >= sub["ends_at"]:
                if sub["warned"]:
                    reason = "its time allotment ran out"
                    break
                sub["warned"], sub["message"] = True, "Your time allotment is over: call report(...) now."
            message = sub["message"] or f"[budget] {self.budget.line()}"
            sub["message"] = None
            sub["steps"] += 1
            try:
                signature = await self._step(self.worker, role, message)
            except ReplayExhausted as err:
                reason = f"its model had no more answers ({err})"
                break
            except TimeoutError:
                continue
            if self.tools.decisions.report is not None:
                break
            # A digest is enough to see a repeat, and keeps the saved state small.
            digest = hashlib.sha1(signature.encode()).hexdigest()[:16]
            sub["signatures"] = (sub["signatures"] + [digest])[-self.limits.repeat_limit:]
            if len(sub["signatures"]) == self.limits.repeat_limit and len(set(sub["signatures"])) == 1:
                reason = f"it repeated the same action and observation {self.limits.repeat_limit} times"
                self.trace.emit("worker_stopped", agent=role, reason=reason)
                break
        report = self.tools.decisions.report
        self.tools.decisions.report = None
        self.trace.emit("subtask_finished", agent=role, report=report, stopped=reason or None)
        self.state.subtask, self.worker = None, None
        self._save_state()
        if report is None:
            return f"The {role} was stopped because {reason}, without a report."
        self._check_claims(role, json.dumps(report))
        text = "\n".join(f"- {key}: {value}" for key, value in report.items())
        return f"Report from the {role}" + (f" (stopped: {reason})" if reason else "") + f":\n{text}"

    def _must_stop(self) -> str | None:
        phase = self.budget.phase()
        if phase != self.state.phase:
            self._enter_phase(phase)
        if phase == "final":
            return "the final phase began: the best evaluation record is submitted"
        if self.state.step >= self.limits.max_steps:
            return f"the step limit ({self.limits.max_steps}) was reached"
        if self.limits.max_cost_usd is not None and self.meter.cost_usd >= self.limits.max_cost_usd:
            return f"the cost limit (${self.limits.max_cost_usd:g}) was reached"
        return None

    def _enter_phase(self, phase: str) -> None:
        self.state.phase = phase
        self.trace.emit("phase", phase=phase, time_left_s=round(self.deadline.time_left_s(), 1))
        if phase == "wrap-up":
            stopped = self.tools.stop_running_jobs()  # SIGTERM first, so training saves a checkpoint
            self.state.note = (f"WRAP-UP: {format_duration(self.budget.time_left_s())} left before the final phase. "
                               f"Running jobs were stopped so they saved checkpoints ({', '.join(stopped) or 'none'}). "
                               "Evaluate the best checkpoints if needed, then submit the best evaluation.\n"
                               + self.state.note)

    # -- one step ---------------------------------------------------------------------------------

    async def _step(self, agent: AssistantAgent, role: str, message: str | None) -> str:
        """One agent turn, bounded by the end of the current phase; returns a signature of its actions and
        observations (for repeat detection). The state is saved after it."""
        self.state.step += 1
        timeout = max(1.0, self.budget.time_left_s())
        signature = await asyncio.wait_for(self._turn(agent, role, message), timeout=timeout)
        self._save_state()
        return signature

    async def _turn(self, agent: AssistantAgent, role: str, message: str | None) -> str:
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
                self.trace.emit("tool_results", agent=role, step=self.state.step, results=results)
                # Timings, log names and pids differ on every run of the same command: not a new observation.
                actions.append(json.dumps([(r.name, DIGITS.sub("#", r.content)) for r in event.content]))
            elif isinstance(event, Response) and isinstance(event.chat_message, TextMessage):
                self._record_model_call(role, {"text": event.chat_message.content})
                self._check_claims(role, event.chat_message.content)
                actions.append(event.chat_message.content)
        return "\n".join(actions)

    def _record_model_call(self, role: str, response: dict[str, Any]) -> None:
        usage = self.meter.record(role, self.clients[role])
        self.trace.emit("model_response", agent=role, step=self.state.step, response=response, usage=usage,
                        cost_usd=round(self.meter.cost_usd, 6))

    def _check_claims(self, role: str, text: str) -> None:
        for claim in self.ledger.unverified_claims(text):
            entry = {"agent": role, "value": claim.value, "context": claim.context}
            self.state.unverified.append(entry)
            self.trace.emit("unverified_claim", agent=role, value=claim.value, context=claim.context)

    def _supervisor_message(self, note: str) -> str:
        jobs = self.tools.job_warnings(self.budget)
        return (f"## Budget\n{self.budget.line()}; model cost so far ${self.meter.cost_usd:.2f}\n\n"
                f"## Plan\n{self.plan.render()}\n\n## Ledger (harness records)\n{self.ledger.summary()}\n\n"
                + (f"## Jobs that will not finish before wrap-up\n{jobs}\n\n" if jobs else "")
                + f"## Since your last turn\n{note}")

    # -- state ----------------------------------------------------------------------------------

    def _contexts(self) -> dict[str, BoundedContext]:
        # autogen has no public getter for an agent's context, and its save_state is async.
        contexts = {"supervisor": self.supervisor._model_context}
        if self.worker is not None:
            contexts["worker"] = self.worker._model_context
        return contexts

    def _save_state(self) -> None:
        """The loop's state as plain data: new messages go once to an append-only journal and the state
        lists their ids, so a save costs the same at any step. The previous snapshot is kept."""
        contexts = self._contexts()
        fresh = [line for ctx in contexts.values() for line in ctx.fresh_messages()]
        if fresh:
            with open(self.rundir.state / JOURNAL, "a", encoding="utf-8") as journal:
                journal.writelines(json.dumps({"id": i, "message": m}, default=str) + "\n" for i, m in fresh)
                journal.flush()
                os.fsync(journal.fileno())
        save_snapshot(self.rundir.state, {
            "step": self.state.step, "loop": asdict(self.state), "plan": self.plan.to_dict(),
            "contexts": {name: ctx.snapshot() for name, ctx in contexts.items()},
            "usage": self.meter.to_dict(), "clients": client_positions(self.clients),
            "known_jobs": self.tools.job_ids(), "known_evaluations": [r.id for r in self.ledger.records()],
            "trace_seq": self.trace.seq, "saved_at": time.time(), "active_s": self.deadline.elapsed_s(),
        })

    def restore(self, snapshot: dict[str, Any], journal: dict[str, dict[str, Any]]) -> None:
        """Continue from a saved snapshot: contexts, loop position, plan and usage."""
        self.state = LoopState(**snapshot["loop"])
        self.plan.items[:] = Plan.from_dict(snapshot["plan"]).items
        self.meter.load(snapshot["usage"])
        self.supervisor._model_context.restore(snapshot["contexts"]["supervisor"], journal)
        if self.state.subtask is not None:
            self.worker = self._agent(self.state.subtask["role"])
            self.worker._model_context.restore(snapshot["contexts"]["worker"], journal)
