"""The LLM crew as a policy: build the clients, tools and loop for a run, run it, and say how it ended."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from autogen_core.models import ChatCompletionClient

from challenges.api import ScoreContext
from challenges.spec import Challenge, Preset
from crew.clock import Deadline
from crew.errors import EXIT_INTERRUPTED, CrewError
from crew.ledger import Ledger
from crew.loop import CrewLoop, LoopEnd, LoopLimits, WorkClock
from crew.models.errors import ModelOutage
from crew.plan import Plan
from crew.replay import ReplayClient, load_script
from crew.results import Outcome, Usage
from crew.rundir import RunDir
from crew.specs import ModelSpec
from crew.tools import CrewTools
from crew.trace import Trace
from crew.usage_meter import UsageMeter
from toolkit import Toolkit

log = logging.getLogger(__name__)
ROLES = ("supervisor", "engineer", "scout")
# Replayed "API errors" are retried like real ones, only without the real waits.
REPLAY_RETRY = {"base_delay_s": 0.01, "max_delay_s": 0.05, "give_up_after_s": 30.0}


def build_clients(supervisor: ModelSpec, worker: ModelSpec,
                  trace: Trace) -> tuple[dict[str, ChatCompletionClient], dict[str, str]]:
    """A client per role, each behind the retry wrapper, and the model name each is priced by."""
    from crew.models.factory import make_client
    from crew.models.retry import RetryingClient

    clients, models = {}, {}
    scripts: dict[str, dict] = {}
    for role in ROLES:
        spec = supervisor if role == "supervisor" else worker

        def on_retry(attempt: int, delay: float, err: BaseException, role: str = role) -> None:
            trace.emit("model_retry", agent=role, attempt=attempt, delay_s=round(delay, 2), error=str(err)[:300])

        if spec.kind == "replay":
            script = scripts.setdefault(spec.model, load_script(spec.model))
            replay = ReplayClient(script.get(role, []), agent=role)
            clients[role] = RetryingClient(replay, on_retry=on_retry, **REPLAY_RETRY)
            models[role] = ""
        else:
            clients[role] = make_client(str(spec), on_retry=on_retry)
            models[role] = spec.model
    return clients, models


class CrewPolicy:
    def __init__(self, run: RunDir, challenge: Challenge, preset: Preset, deadline: Deadline, trace: Trace,
                 score_context: ScoreContext, supervisor: ModelSpec, worker: ModelSpec,
                 limits: LoopLimits | None = None, memory: Any | None = None) -> None:
        self.run, self.challenge, self.preset, self.deadline = run, challenge, preset, deadline
        self.trace, self.score_context = trace, score_context
        self.specs = (supervisor, worker)
        self.limits = limits or LoopLimits()
        self.memory = memory
        self.reserve_s = preset.score_minutes * 60.0

    def execute(self) -> Outcome:
        clients, models = build_clients(*self.specs, trace=self.trace)
        clock = WorkClock(self.deadline, self.reserve_s)
        toolkit = Toolkit(self.run.root, workspace=self.run.workspace, budget=clock,
                          read_only=[self.run.workspace / "data"])
        ledger = Ledger(self.run.evaluations, self.challenge)
        tools = CrewTools(challenge=self.challenge, toolkit=toolkit, ledger=ledger, plan=Plan.initial(
            self.deadline.budget_s), trace=self.trace, score_context=self.score_context,
            evaluations_dir=self.run.evaluations, memory=self.memory,
            eval_timeout_s=lambda: max(30.0, min(self.deadline.time_left_s(), self.reserve_s)))
        meter = UsageMeter(models)
        loop = CrewLoop(run=self.run, challenge=self.challenge, preset=self.preset, deadline=self.deadline,
                        trace=self.trace, tools=tools, clients=clients, meter=meter, work_clock=clock,
                        limits=self.limits)
        try:
            end = asyncio.run(loop.run())
        except ModelOutage as err:
            self._stop_jobs(toolkit)
            raise CrewError(f"model API outage: {err.message}", err.hint, exit_code=EXIT_INTERRUPTED) from err
        finally:
            self.trace.emit("crew_usage", usage=meter.to_dict(), cost_usd=meter.cost_usd,
                            unverified_claims=len(loop.unverified))
        self._stop_jobs(toolkit)
        return self._outcome(end, ledger, loop, meter)

    def _outcome(self, end: LoopEnd, ledger: Ledger, loop: CrewLoop, meter: UsageMeter) -> Outcome:
        chosen = ledger.get(end.submitted) if end.submitted else None
        if chosen is None:
            chosen = ledger.best()  # the deadline or a stop: the best verified record is submitted
        total = meter.total
        usage = Usage(input=total.input, output=total.output, cache_read=total.cache_read,
                      cache_write=total.cache_write, cost_usd=round(meter.cost_usd, 6))
        note = end.reason if chosen is None or end.submitted is None else ""
        status = "submitted" if chosen is not None and chosen.ok else "no_submission"
        return Outcome(status, submission=chosen if status == "submitted" else None, note=note, steps=loop.steps,
                       usage=usage, unverified=loop.unverified)

    def _stop_jobs(self, toolkit: Toolkit) -> None:
        for job_id in toolkit.jobs.ids():
            if toolkit.jobs.status(job_id).running:
                toolkit.jobs.stop(job_id)
