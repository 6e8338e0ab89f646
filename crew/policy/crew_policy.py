"""The LLM crew as a policy: build the clients, tools and loop for a run, run it, and say how it ended."""

from __future__ import annotations

import asyncio
import logging
import traceback
from typing import Any

from challenges.framework.api import ScoreContext
from challenges.framework.harness import release_unfinished
from challenges.framework.spec import Challenge, Preset
from crew.agent.models.errors import ModelOutage
from crew.agent.replay import ReplayClient, load_script
from crew.agent.specs import ModelSpec
from crew.agent.usage_meter import UsageMeter
from crew.loop.plan import Plan
from crew.loop.snapshots import load_journal
from crew.loop.step_loop import CrewLoop, LoopEnd, LoopLimits
from crew.loop.tools import CrewTools
from crew.policy.floor import Floor
from crew.run import events
from crew.run.clock import Clock
from crew.run.config import RunConfig
from crew.run.devices import visible_devices
from crew.run.disk_watch import DiskWatch
from crew.run.ledger import Ledger
from crew.run.results import Outcome, Usage
from crew.run.rundir import RunDir
from crew.run.sandboxing import agent_sandbox, declared_env, slurm_max_jobs, slurm_partition
from crew.run.trace import Trace
from toolkit import Toolkit

log = logging.getLogger(__name__)
ROLES = ("supervisor", "engineer", "scout")
# Replayed "API errors" are retried like real ones, only without the real waits.
REPLAY_RETRY = {"base_delay_s": 0.01, "max_delay_s": 0.05, "give_up_after_s": 30.0}
MEMORIES_K = 5


def build_clients(supervisor: ModelSpec, worker: ModelSpec, trace: Trace, positions: dict[str, int] | None = None,
                  retry_window: float | None = None) -> tuple[dict[str, Any], dict[str, str]]:
    """A client per role, each behind the one retry wrapper, and the model name each is priced by."""
    from crew.agent.models.factory import make_client
    from crew.agent.models.retry import WINDOW_ATTEMPTS, RetryingClient, retry_window_s
    from crew.agent.models.usage import billed_model

    clients, models = {}, {}
    scripts: dict[str, dict] = {}
    for role in ROLES:
        spec = supervisor if role == "supervisor" else worker

        def on_retry(attempt: int, delay: float, err: BaseException, role: str = role) -> None:
            trace.emit(events.ModelRetry(agent=role, attempt=attempt, delay_s=round(delay, 2), error=str(err)[:300]))

        if spec.kind == "replay":
            script = scripts.setdefault(spec.model, load_script(spec.model))
            replay = ReplayClient(script.get(role, []), agent=role)
            replay.position = (positions or {}).get(role, 0)  # a resumed replay goes on where it was
            clients[role] = RetryingClient(replay, on_retry=on_retry, **REPLAY_RETRY)
            models[role] = ""
        else:
            clients[role] = make_client(str(spec), on_retry=on_retry, max_attempts=WINDOW_ATTEMPTS,
                                        give_up_after_s=retry_window_s(spec.base_url, retry_window))
            models[role] = billed_model(spec.model, spec.base_url)
    return clients, models


class CrewPolicy:
    picks_final = True  # the final pick chooses among its records (crew/run/final_pick.py)

    def __init__(self, run: RunDir, challenge: Challenge, preset: Preset, clock: Clock, trace: Trace,
                 score_context: ScoreContext, supervisor: ModelSpec, worker: ModelSpec,
                 limits: LoopLimits | None = None, memory: Any | None = None,
                 snapshot: dict[str, Any] | None = None, floor: bool = True,
                 retry_window_s: float | None = None) -> None:
        self.run, self.challenge, self.preset, self.clock = run, challenge, preset, clock
        self.trace, self.score_context = trace, score_context
        self.specs = (supervisor, worker)
        self.limits = limits or LoopLimits()
        self.memory = memory
        self.snapshot = snapshot  # set when resuming
        self.retry_window_s = retry_window_s
        self.floor = Floor(run, challenge, preset, clock, trace, score_context) \
            if floor and Floor.applies(challenge) else None

    def execute(self) -> Outcome:
        """Run the crew. However it ends, the jobs are stopped and the outcome says what the supervisor submitted,
        if anything (the runner submits the best verified record otherwise); an outage, an interruption or an
        error leaves the run resumable."""
        positions = (self.snapshot or {}).get("clients", {})
        clients, models = build_clients(*self.specs, trace=self.trace, positions=positions,
                                        retry_window=self.retry_window_s)
        ledger = Ledger(self.run.evaluations, self.challenge)
        measured = [r.duration_s for r in ledger.records() if r.ok]
        for duration_s in measured:  # a resumed run keeps wrap-up where the slowest scoring put it
            self.clock.observe_scoring(duration_s)
        devices = visible_devices() if self.score_context.device == "cuda" else []
        toolkit = Toolkit(self.run.root, workspace=self.run.workspace, clock=self.clock, devices=devices,
                          data_dir=self.score_context.data_dir,
                          sandbox=agent_sandbox(self.run.run_toml, self.preset, gpus=bool(devices)),
                          slurm_partition=slurm_partition(self.run.run_toml),
                          slurm_max_jobs=slurm_max_jobs(self.run.run_toml), env=declared_env(self.preset))
        tools = CrewTools(challenge=self.challenge, toolkit=toolkit, ledger=ledger,
                          plan=Plan.initial(self.clock.budget_s), trace=self.trace,
                          score_context=self.score_context, evaluations_dir=self.run.evaluations,
                          memory=self.memory, clock=self.clock)
        meter = UsageMeter(models)
        loop = CrewLoop(preset=self.preset, tools=tools, clients=clients, meter=meter, clock=self.clock,
                        trace=self.trace, state_dir=self.run.state, limits=self.limits, memories=self._memories())
        if self.snapshot is not None:
            self._resume(loop, tools)
        if self.floor is not None:
            loop.state.notes.append(self.floor.start())
        # Interrupted unless the loop ends by itself: then the run is resumable (exit 3).
        interrupted, stopped_by_signal = True, False
        resume = f"continue with `research-crew resume {self.run.root}`"
        def disk_low(note: str) -> None:
            loop.state.notes.append(note)
            self.trace.emit(events.DiskLow(agent="crew", note=note))

        tools.disk_watch = DiskWatch(self.run.root, int(self.preset.disk_reserve_gb * 2**30),
                                     tools.stop_running_jobs, disk_low)
        try:
            with tools.disk_watch:
                end = asyncio.run(loop.run())
            interrupted = False
        except ModelOutage as err:
            end = LoopEnd(f"model API outage: {err.message}; {resume} when it is back")
        except KeyboardInterrupt:
            stopped_by_signal = True
            end = LoopEnd(f"interrupted at step {loop.state.step}; {resume}")
        except Exception as err:  # noqa: BLE001 - a bug or an API refusal: the best record is still submitted
            self.run.error_txt.write_text(traceback.format_exc())
            end = LoopEnd(f"stopped by an error at step {loop.state.step}: {type(err).__name__}: {err} "
                          f"(see error.txt); {resume}")
            log.error("the crew stopped on an error: %s", err)
        finally:
            if self.floor is not None:  # whatever ended the run, experiment 0 is scored (unless it was stopped)
                self.floor.settle(wait=not stopped_by_signal)
            stopped = tools.stop_running_jobs()  # SIGTERM first, so training saves a checkpoint
            self.trace.emit(events.CrewUsage(usage=meter.to_dict(), cost_usd=meter.cost_usd,
                            unverified_claims=len(loop.state.unverified), jobs_stopped=stopped))
        outcome = self._outcome(end, ledger, loop, meter)
        outcome.interrupted = interrupted
        return outcome

    def reference_records(self, outcome: Outcome) -> list:
        return []  # only the baseline policy's scores are the challenge's reference

    def _memories(self) -> str:
        """What earlier runs on this challenge tried and how it scored, for the supervisor's briefing."""
        if self.memory is None:
            return ""
        query = f"{self.challenge.title}: {self.challenge.metric.name} experiment lesson"
        earlier = {"challenge": self.challenge.name}
        try:  # hypotheses with their outcomes, and the lessons of earlier runs' experiments
            hits = [*self.memory.recall(query, k=MEMORIES_K),
                    *[h for h in self.memory.search_log(query, k=MEMORIES_K, filters=earlier)
                      if h.entry.run_id != self.run.run_id]]
        except Exception as err:  # noqa: BLE001 - memory is a help, never a reason to stop a run
            log.warning("memory recall failed: %s", err)
            return ""
        return "\n".join(f"- {hit}" for hit in hits)

    def _resume(self, loop: CrewLoop, tools: CrewTools) -> None:
        """Continue from the last completed step; reconcile what the step in flight had begun."""
        loop.restore(self.snapshot, load_journal(self.run.state))
        freed = release_unfinished(self.run.evaluations)
        tools.adopt_unfinished(set(self.snapshot["known_jobs"]), set(self.snapshot["known_evaluations"]))
        self.trace.emit(events.Resumed(from_step=loop.state.step, inflight_jobs=sorted(tools.inflight_jobs.values()),
                        inflight_evaluations=tools.inflight_evaluations, freed_evaluation_ids=freed))

    def _outcome(self, end: LoopEnd, ledger: Ledger, loop: CrewLoop, meter: UsageMeter) -> Outcome:
        chosen = ledger.get(end.submitted) if end.submitted else None  # none: the runner submits the best
        total = meter.total
        usage = Usage(input=total.input, output=total.output, cache_read=total.cache_read,
                      cache_write=total.cache_write, cost_usd=round(meter.cost_usd, 6))
        note = end.reason if end.submitted is None else ""
        status = "submitted" if chosen is not None and chosen.ok else "no_submission"
        return Outcome(status, submission=chosen if status == "submitted" else None, note=note,
                       steps=loop.state.step, usage=usage, unverified=loop.state.unverified,
                       supervisor_choice=chosen if end.submitted and chosen is not None else None)


def open_memory(run: RunDir, config: RunConfig):
    """The run's memory (its own store plus the global one); a run goes on without it if it cannot load."""
    from memory import Memory, MemoryStoreError

    try:
        return Memory(run.root, run_id=run.run_id, challenge=config.challenge, preset=config.preset)
    except MemoryStoreError as err:
        log.warning("memory is off for this run: %s", err)
        return None
