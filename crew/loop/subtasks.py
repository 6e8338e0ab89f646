"""The subtasks' side of the crew loop: each delegated subtask's worker takes its turns as an asyncio task of its
own, until it reports, runs out of steps or time, repeats itself, or wrap-up stops it; a stopped worker is
asked once for its report. CrewLoop (crew/loop/step_loop.py) takes these steps; the state is its own.
"""

from __future__ import annotations

import asyncio
import json
from typing import TYPE_CHECKING

from crew.agent.models.errors import ModelExhausted
from crew.agent.session import AgentSession, Turn
from crew.agent.signals import Delegated, Reported, SubtaskOver
from crew.loop.prompts import report_note, subtask_brief
from crew.loop.state import Subtask, observation_digest
from crew.run import events

if TYPE_CHECKING:
    from crew.loop.state import LoopLimits, LoopState
    from crew.loop.tools import CrewTools
    from crew.run.clock import Clock
    from crew.run.trace import Trace


class SubtaskSteps:
    """Mixed into CrewLoop: starting subtasks, their workers' turns, and how each subtask ends (a turn is the
    loop's `_turn`, a new worker its `_session`)."""

    state: LoopState
    tools: CrewTools
    clock: Clock
    trace: Trace
    limits: LoopLimits
    workers: dict[str, AgentSession]  # subtask id -> its worker
    _turns: dict[str, asyncio.Task]  # subtask id -> its worker's turn under way
    _before_turn: dict[str, tuple[set[str], set[str]]]

    def _start_subtask(self, delegated: Delegated) -> None:
        seconds = min(delegated.minutes * 60, self.clock.phase_left_s())
        self.state.started_subtasks += 1
        sub = Subtask(f"{delegated.role}-{self.state.started_subtasks}", delegated.role, delegated.subtask,
                      delegated.minutes, ends_at_s=self.clock.elapsed_s() + seconds)
        others = [s.id for s in self.state.subtasks]
        sub.next_message = subtask_brief(delegated, self.tools, self.clock, others)
        self.state.subtasks.append(sub)
        self.tools.workers.at_work([s.role for s in self.state.subtasks])
        self.trace.emit(events.SubtaskStarted(agent="supervisor", subtask_id=sub.id, role=delegated.role,
                        subtask=delegated.subtask, minutes=delegated.minutes))
        self.workers[sub.id] = self._session(delegated.role)

    async def _workers_step(self) -> None:
        """Let every subtask's worker take turns until one turn ends (or a poll passes: limits, a save)."""
        for sub in self.state.subtasks:
            if sub.id not in self._turns:
                self._turns[sub.id] = asyncio.create_task(self._worker_step(sub), name=sub.id)
        done, _ = await asyncio.wait(self._turns.values(), timeout=self.limits.round_poll_s,
                                     return_when=asyncio.FIRST_COMPLETED)
        for task in done:
            del self._turns[task.get_name()]
            task.result()  # a worker's error is the run's (crew_policy ends it resumable)

    async def _cancel_worker_turns(self) -> None:
        """The run ends: turns under way are cancelled (each call started gets its result, crew/agent/session.py)."""
        for task in self._turns.values():
            task.cancel()
        await asyncio.gather(*self._turns.values(), return_exceptions=True)
        self._turns.clear()

    async def _worker_step(self, sub: Subtask) -> None:
        worker = self.workers[sub.id]
        try:
            if stop := sub.stop or self._subtask_over(sub):
                raise SubtaskOver(stop)
            sub.steps += 1
            self._before_turn[sub.id] = (set(self.tools.job_ids()), {r.id for r in self.tools.ledger.records()})
            try:
                turn = await self._turn(worker, sub.next_message, agent=sub.id)
            finally:
                self._before_turn.pop(sub.id, None)
            sub.next_message = f"[budget] {self.clock.line()}"
            if isinstance(turn.decision, Reported):
                return self._end_subtask(sub, turn.decision, None)
            self._watch_repeats(sub, turn)
        except SubtaskOver as over:
            self._end_subtask(sub, await self._final_report(sub, str(over)), str(over))
        except ModelExhausted as err:
            self._end_subtask(sub, None, f"its model had no more answers ({err})")

    def _subtask_over(self, sub: Subtask) -> str | None:
        if sub.steps >= self.limits.subtask_steps:
            return f"it used its {self.limits.subtask_steps} steps"
        if self.clock.elapsed_s() >= sub.ends_at_s:
            return "its time allotment ran out"
        return None

    def _watch_repeats(self, sub: Subtask, turn: Turn) -> None:
        digest = observation_digest(turn.calls, turn.text, turn.results)
        sub.signatures = [*sub.signatures, digest][-self.limits.repeat_limit:]
        if len(sub.signatures) == self.limits.repeat_limit and len(set(sub.signatures)) == 1:
            sub.stop = f"it repeated the same actions and observations {self.limits.repeat_limit} times"
            self.trace.emit(events.WorkerStopped(agent=sub.role, subtask_id=sub.id, reason=sub.stop))

    async def _final_report(self, sub: Subtask, reason: str) -> Reported | None:
        """A stopped worker is asked once for its report (it may call nothing else)."""
        try:
            ask = (f"[crew] Stop now: {reason}. Call report(...) with what you did, which evaluations you made "
                   "and what you learned.")
            turn = await self._turn(self.workers[sub.id], ask, only_tool="report", agent=sub.id)
        except ModelExhausted:
            return None
        return turn.decision if isinstance(turn.decision, Reported) else None

    def _end_subtask(self, sub: Subtask, reported: Reported | None, stopped: str | None) -> None:
        report = reported.report if reported else None
        self.trace.emit(events.SubtaskFinished(agent=sub.role, subtask_id=sub.id, report=report, stopped=stopped))
        self.state.subtasks.remove(sub)
        self.workers.pop(sub.id)
        self.tools.workers.at_work([s.role for s in self.state.subtasks])
        self.state.supervisor_due = True
        self._check_claims(sub.role, json.dumps(report or {}))
        self.state.notes.append(report_note(sub.id if self.state.started_subtasks > 1 else sub.role, report,
                                            stopped))

    def known_jobs(self) -> list[str]:
        """Jobs no turn under way may have started."""
        jobs = set(self.tools.job_ids())
        return sorted(jobs.intersection(*(before[0] for before in self._before_turn.values())))

    def known_evaluations(self) -> list[str]:
        records = {r.id for r in self.tools.ledger.records()}
        return sorted(records.intersection(*(before[1] for before in self._before_turn.values())))
