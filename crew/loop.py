"""The crew's step loop: the supervisor decides, one worker at a time acts, the harness scores.

A step is one agent turn (crew/agent.py): one model call and the tool calls it asked for. Decisions come
back as typed signals with the turn; limits are raised by `_check_limits` and caught in `run`, the one
place a run ends. Everything between steps is plain data (`LoopState`), saved once per step.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from challenges.spec import Preset
from crew.agent import AgentSession, Turn
from crew.budget import BudgetGuard
from crew.context import BoundedContext
from crew.loop_state import LoopEnd, LoopLimits, LoopState, Subtask, observation_digest
from crew.prompts import report_note, subtask_brief, supervisor_briefing, supervisor_system, worker_system, wrapup_note
from crew.replay import ReplayExhausted
from crew.signals import Delegated, LimitExceeded, Reported, Submitted, SubtaskOver, Waiting
from crew.snapshots import restore_loop, save_loop
from crew.tools import CrewTools
from crew.trace import Trace
from crew.usage_meter import UsageMeter

TURN_GRACE_S = 30.0


class CrewLoop:
    def __init__(self, *, preset: Preset, tools: CrewTools, clients: dict[str, Any], meter: UsageMeter,
                 budget: BudgetGuard, trace: Trace, state_dir: Path, limits: LoopLimits | None = None,
                 memories: str = "") -> None:
        self.preset, self.tools, self.clients, self.meter, self.budget = preset, tools, clients, meter, budget
        self.trace = trace
        self.state_dir, self.limits, self.memories = state_dir, limits or LoopLimits(), memories
        self.state = LoopState()
        self.supervisor = self._session("supervisor")
        self.worker: AgentSession | None = None

    def _session(self, role: str) -> AgentSession:
        challenge, preset = self.tools.challenge, self.preset
        system = (supervisor_system(challenge, preset) if role == "supervisor"
                  else worker_system(role, challenge, preset))
        context = BoundedContext(max_tokens=self.limits.context_tokens, anchors=0 if role == "supervisor" else 1)
        return AgentSession(role, self.clients[role], system, self.tools.for_role(role), context)

    async def run(self) -> LoopEnd:
        """Run (or, after restore(), continue) until a submission, a limit or the final phase."""
        try:
            while True:
                self._check_limits()
                await (self._worker_step() if self.state.subtask else self._supervisor_step())
                self.save()
        except Submitted as submitted:
            self.state.submitted = submitted.evaluation_id
            return LoopEnd("the supervisor submitted", submitted=submitted.evaluation_id)
        except LimitExceeded as limit:
            return LoopEnd(str(limit))
        except ReplayExhausted as err:
            return LoopEnd(f"the supervisor's model has no more answers ({err})")
        finally:
            self.save()

    def _check_limits(self) -> None:
        phase = self.budget.phase()
        if phase != self.state.phase:
            self._enter_phase(phase)
        if phase == "final":
            raise LimitExceeded("final_phase", self.budget.final_s, self.budget.deadline.time_left_s())
        if self.state.step >= self.limits.max_steps:
            raise LimitExceeded("steps", self.limits.max_steps, self.state.step)
        if self.limits.max_cost_usd is not None and self.meter.cost_usd >= self.limits.max_cost_usd:
            raise LimitExceeded("cost", self.limits.max_cost_usd, self.meter.cost_usd)

    def _enter_phase(self, phase: str) -> None:
        self.state.phase = phase
        self.trace.emit("phase", phase=phase, time_left_s=round(self.budget.deadline.time_left_s(), 1))
        if phase != "wrap-up":
            return
        stopped = self.tools.stop_running_jobs()  # SIGTERM first, so training saves a checkpoint
        self.state.notes.append(wrapup_note(self.budget, stopped))
        if self.state.subtask:
            self.state.subtask.stop = "the run entered its wrap-up phase"


    async def _supervisor_step(self) -> None:
        notes, self.state.notes = self.state.notes, []
        turn = await self._turn(self.supervisor, supervisor_briefing(self.tools, self.budget, self.meter, notes,
                                                                     self.memories))
        decision = turn.decision
        if isinstance(decision, Submitted):
            raise decision
        self.state.idle = 0 if isinstance(decision, Delegated | Waiting) else self.state.idle + 1
        if isinstance(decision, Delegated):
            return self._start_subtask(decision)
        if isinstance(decision, Waiting):
            return self.state.notes.append(await self._wait(decision.minutes * 60))
        self.state.notes.append("You neither delegated, waited nor submitted: use delegate, wait or submit.")
        if self.state.idle >= self.limits.idle_turns:
            self.state.idle = 0
            self.state.notes.append(await self._wait(self.limits.idle_wait_s))

    async def _wait(self, seconds: float) -> str:
        jobs = [s.record.id for s in self.tools.running_jobs()]
        event = await asyncio.to_thread(self.tools.wait_for_event, jobs, "progress",
                                        min(seconds, self.budget.time_left_s()))
        self.trace.emit("waited", agent="supervisor", event=event)
        return f"Waited: {event}"

    def _start_subtask(self, delegated: Delegated) -> None:
        seconds = min(delegated.minutes * 60, self.budget.time_left_s())
        self.state.subtask = Subtask(delegated.role, delegated.subtask, delegated.minutes,
                                     ends_at_s=self.budget.deadline.elapsed_s() + seconds)
        self.state.next_message = subtask_brief(delegated, self.tools, self.budget)
        self.trace.emit("subtask_started", agent="supervisor", role=delegated.role, subtask=delegated.subtask,
                        minutes=delegated.minutes)
        self.worker = self._session(delegated.role)


    async def _worker_step(self) -> None:
        sub = self.state.subtask
        message, self.state.next_message = self.state.next_message, f"[budget] {self.budget.line()}"
        try:
            if stop := sub.stop or self._subtask_over(sub):
                raise SubtaskOver(stop)
            sub.steps += 1
            turn = await self._turn(self.worker, message)
            if isinstance(turn.decision, Reported):
                return self._end_subtask(turn.decision, None)
            self._watch_repeats(sub, turn)
        except SubtaskOver as over:
            self._end_subtask(await self._final_report(str(over)), str(over))
        except ReplayExhausted as err:
            self._end_subtask(None, f"its model had no more answers ({err})")

    def _subtask_over(self, sub: Subtask) -> str | None:
        if sub.steps >= self.limits.subtask_steps:
            return f"it used its {self.limits.subtask_steps} steps"
        if self.budget.deadline.elapsed_s() >= sub.ends_at_s:
            return "its time allotment ran out"
        return None

    def _watch_repeats(self, sub: Subtask, turn: Turn) -> None:
        digest = observation_digest(turn.calls, turn.text, turn.results)
        sub.signatures = [*sub.signatures, digest][-self.limits.repeat_limit:]
        if len(sub.signatures) == self.limits.repeat_limit and len(set(sub.signatures)) == 1:
            sub.stop = f"it repeated the same actions and observations {self.limits.repeat_limit} times"
            self.trace.emit("worker_stopped", agent=sub.role, reason=sub.stop)

    async def _final_report(self, reason: str) -> Reported | None:
        """A stopped worker is asked once for its report (it may call nothing else)."""
        try:
            turn = await self._turn(self.worker, f"[crew] Stop now: {reason}. Call report(...) with what you did, "
                                    "which evaluations you made and what you learned.", only_tool="report")
        except ReplayExhausted:
            return None
        return turn.decision if isinstance(turn.decision, Reported) else None

    def _end_subtask(self, reported: Reported | None, stopped: str | None) -> None:
        role = self.state.subtask.role
        report = reported.report if reported else None
        self.trace.emit("subtask_finished", agent=role, report=report, stopped=stopped)
        self.state.subtask, self.worker = None, None
        self._check_claims(role, json.dumps(report or {}))
        self.state.notes.append(report_note(role, report, stopped))


    async def _turn(self, session: AgentSession, message: str | None, only_tool: str | None = None) -> Turn:
        """One agent turn, bounded by the start of the final phase (commands inside it by their own phase)."""
        self.state.step += 1
        limit = max(1.0, self.budget.deadline.time_left_s() - self.budget.final_s) + TURN_GRACE_S
        try:
            turn = await asyncio.wait_for(session.turn(message, only_tool), timeout=limit)
        except TimeoutError:  # the session gave every call started a result: its conversation stays valid
            self.trace.emit("turn_cut", agent=session.role, step=self.state.step)
            return Turn(session.role)
        usage = self.meter.record(session.role, turn.usage)
        self.trace.emit("model_response", agent=session.role, step=self.state.step, response=turn.response(),
                        usage=usage,
                        cost_usd=round(self.meter.cost_usd, 6), truncated_retries=turn.retried_truncation or None)
        if turn.results:
            self.trace.emit("tool_results", agent=session.role, step=self.state.step, results=turn.results)
        self._check_claims(session.role, turn.text)
        return turn

    def _check_claims(self, role: str, text: str) -> None:
        for claim in self.tools.ledger.unverified_claims(text):
            self.state.unverified.append({"agent": role, "value": claim.value, "context": claim.context})
            self.trace.emit("unverified_claim", agent=role, value=claim.value, context=claim.context)


    def save(self) -> None:
        save_loop(self)

    def restore(self, snapshot: dict[str, Any], journal: dict[str, dict[str, Any]]) -> None:
        """Continue from a saved snapshot: contexts, loop position, plan and usage."""
        restore_loop(self, snapshot, journal)
