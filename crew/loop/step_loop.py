"""The crew's step loop: the supervisor decides, workers act (several at once when the slots allow), the
harness scores.

A step is one agent turn (crew/agent/session.py): one model call and the tool calls it asked for. Each subtask's worker
takes its turns as an asyncio task of its own, so a scout searches while the engineer waits on a training
job; the supervisor gets a turn whenever no subtask is under way or one has reported. Decisions come back as
typed signals with the turn; limits are raised by `_check_limits` and caught in `run`, the one place a run
ends. Everything between steps is plain data (`LoopState`), saved after every step; a worker's turn still
under way is saved as it was before that turn. The subtasks' side (their workers' turns, how each ends) is in
crew/loop/subtasks.py.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from challenges.framework.spec import Preset
from crew.agent.context import BoundedContext
from crew.agent.models.errors import ModelExhausted
from crew.agent.session import AgentSession, Turn
from crew.agent.signals import Delegated, LimitExceeded, Submitted, Waiting
from crew.agent.usage_meter import UsageMeter
from crew.loop.prompts import supervisor_briefing, supervisor_system, worker_system, wrapup_note
from crew.loop.snapshots import restore_loop, save_loop
from crew.loop.state import LoopEnd, LoopLimits, LoopState
from crew.loop.subtasks import SubtaskSteps
from crew.loop.tools import CrewTools
from crew.run import events
from crew.run.clock import Clock
from crew.run.durations import format_duration
from crew.run.trace import Trace

TURN_GRACE_S = 30.0


class CrewLoop(SubtaskSteps):
    def __init__(self, *, preset: Preset, tools: CrewTools, clients: dict[str, Any], meter: UsageMeter,
                 clock: Clock, trace: Trace, state_dir: Path, limits: LoopLimits | None = None,
                 memories: str = "") -> None:
        self.preset, self.tools, self.clients, self.meter, self.clock = preset, tools, clients, meter, clock
        self.trace = trace
        self.state_dir, self.limits, self.memories = state_dir, limits or LoopLimits(), memories
        self.state = LoopState()
        self.supervisor = self._session("supervisor")
        self.workers: dict[str, AgentSession] = {}  # subtask id -> its worker
        self._turns: dict[str, asyncio.Task] = {}  # subtask id -> its worker's turn under way
        # What existed when each turn under way began: a save names only those as done, so that after a crash
        # the turn, done again, re-attaches to the jobs and records it had begun (crew_policy._resume).
        self._before_turn: dict[str, tuple[set[str], set[str]]] = {}
        self.tools.workers.allow(self.limits.max_workers)

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
                if self.state.subtasks and not self.state.supervisor_due:
                    await self._workers_step()
                else:
                    await self._supervisor_step()
                self.save()
        except Submitted as submitted:
            self.state.submitted = submitted.evaluation_id
            return LoopEnd("the supervisor submitted", submitted=submitted.evaluation_id)
        except LimitExceeded as limit:
            return LoopEnd(str(limit))
        except ModelExhausted as err:
            return LoopEnd(f"the supervisor's model has no more answers ({err})")
        finally:
            await self._cancel_worker_turns()
            self.save()

    def _check_limits(self) -> None:
        phase = self.clock.phase()
        if phase != self.state.phase:
            self._enter_phase(phase)
        if phase == "final":
            raise LimitExceeded("final_phase", self.clock.final_s, self.clock.to_deadline_s())
        if self.state.step >= self.limits.max_steps:
            raise LimitExceeded("steps", self.limits.max_steps, self.state.step)
        if self.limits.max_cost_usd is not None and self.meter.cost_usd >= self.limits.max_cost_usd:
            raise LimitExceeded("cost", self.limits.max_cost_usd, self.meter.cost_usd)
        if self.state.no_calls >= self.limits.no_call_turns:
            raise LimitExceeded("no_calls", self.limits.no_call_turns, self.state.no_calls)

    def _enter_phase(self, phase: str) -> None:
        self.state.phase = phase
        self.trace.emit(events.PhaseEntered(phase=phase, time_left_s=round(self.clock.to_deadline_s(), 1)))
        if phase != "wrap-up":
            return
        stopped = self.tools.stop_running_jobs()  # SIGTERM first, so training saves a checkpoint
        self.state.notes.append(wrapup_note(self.clock, stopped))
        for sub in self.state.subtasks:
            sub.stop = "the run entered its wrap-up phase"

    async def _supervisor_step(self) -> None:
        notes, self.state.notes = self.state.notes, []
        briefing = supervisor_briefing(self.tools, self.clock, self.meter, notes, self.memories, self._at_work())
        try:
            turn = await self._turn(self.supervisor, briefing)
        except BaseException:  # the briefing was never answered: its news goes into the next one (a resume's too)
            self.state.notes = notes + self.state.notes
            raise
        self.state.supervisor_due = False
        self.tools.workers.turn_over()
        ran = any(not r["is_error"] for r in turn.results)
        self.state.no_calls = 0 if ran or turn.decisions else self.state.no_calls + 1
        decision = turn.decision
        if isinstance(decision, Submitted):
            raise decision
        for delegated in (d for d in turn.decisions if isinstance(d, Delegated)):
            self._start_subtask(delegated)
        if self.state.subtasks:  # the workers go on; waiting is what the supervisor does until one reports
            self.state.idle = 0
            return
        self.state.idle = 0 if isinstance(decision, Waiting) else self.state.idle + 1
        if isinstance(decision, Waiting):
            return self.state.notes.append(await self._wait(decision.minutes * 60))
        self.state.notes.append("You neither delegated, waited nor submitted: use delegate, wait or submit.")
        if self.state.idle >= self.limits.idle_turns:
            self.state.idle = 0
            self.state.notes.append(await self._wait(self.limits.idle_wait_s))

    def _at_work(self) -> str:
        now = self.clock.elapsed_s()
        return "\n".join(f"- {s.id}: {' '.join(s.brief.split())[:120]} ({s.steps} steps, "
                         f"{format_duration(max(0.0, s.ends_at_s - now))} of its time left)"
                         for s in self.state.subtasks)

    async def _wait(self, seconds: float) -> str:
        jobs = [s.record.id for s in self.tools.running_jobs()]
        event = await asyncio.to_thread(self.tools.wait_for_event, jobs, "progress",
                                        min(seconds, self.clock.phase_left_s()))
        self.trace.emit(events.Waited(agent="supervisor", event=event))
        return f"Waited: {event}"

    async def _turn(self, session: AgentSession, message: str | None, only_tool: str | None = None,
                    agent: str | None = None) -> Turn:
        """One agent turn, bounded by the start of the final phase (commands inside it by their own phase)."""
        self.state.step += 1
        step, ids = self.state.step, ({"subtask_id": agent} if agent else {})
        limit = max(1.0, self.clock.until_final_s()) + TURN_GRACE_S
        try:
            turn = await asyncio.wait_for(session.turn(message, only_tool), timeout=limit)
        except TimeoutError:  # the session gave every call started a result: its conversation stays valid
            self.trace.emit(events.TurnCut(agent=session.role, step=step, **ids))
            return Turn(session.role)
        usage = self.meter.record(session.role, turn.usage)
        self.trace.emit(events.ModelResponse(agent=session.role, step=step, response=turn.response(),
                        usage=usage, **ids,
                        cost_usd=round(self.meter.cost_usd, 6), truncated_retries=turn.retried_truncation or None,
                        text_calls=turn.text_calls or None, cut=turn.cut or None))
        if turn.results:
            self.trace.emit(events.ToolResults(agent=session.role, step=step, **ids, results=turn.results))
        self._check_claims(session.role, turn.text)
        return turn

    def _check_claims(self, role: str, text: str) -> None:
        for claim in self.tools.ledger.unverified_claims(text):
            self.state.unverified.append({"agent": role, "value": claim.value, "context": claim.context})
            self.trace.emit(events.UnverifiedClaim(agent=role, value=claim.value, context=claim.context))

    def save(self) -> None:
        save_loop(self)

    def restore(self, snapshot: dict[str, Any], journal: dict[str, dict[str, Any]]) -> None:
        """Continue from a saved snapshot: contexts, loop position, plan and usage."""
        restore_loop(self, snapshot, journal)
