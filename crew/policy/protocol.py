"""How a run is worked, as the runner sees it: one protocol for the baseline recipe and the LLM crew.

The runner holds a `Policy` and never asks which one: what differs between them is on the protocol
(`picks_final`, `reference_records`); `make_policy` is the one place that chooses by the run's model.
"""

from __future__ import annotations

from typing import Protocol

from challenges.framework.api import ScoreContext
from challenges.framework.harness import Evaluation
from challenges.framework.spec import Challenge, Preset
from crew.run.clock import Clock
from crew.run.config import RunConfig
from crew.run.results import Outcome
from crew.run.rundir import RunDir
from crew.run.trace import Trace


class Policy(Protocol):
    """`execute` returns how the run ended; a policy that stops on an error raises. Either way the runner
    submits the best verified evaluation when the policy submitted none (crew/policy/runner.py)."""

    run: RunDir
    challenge: Challenge
    picks_final: bool  # the final pick (crew/run/final_pick.py) chooses among its records

    def execute(self) -> Outcome: ...

    def reference_records(self, outcome: Outcome) -> list[Evaluation]:
        """The scored records that become the challenge's baseline reference (crew/run/reference.py)."""
        ...


def make_policy(run: RunDir, config: RunConfig, challenge: Challenge, preset: Preset, clock: Clock, trace: Trace,
                score_context: ScoreContext, snapshot: dict | None = None) -> Policy:
    from crew.agent.specs import parse_spec
    from crew.loop.step_loop import LoopLimits
    from crew.policy.baseline import BaselinePolicy
    from crew.policy.crew_policy import CrewPolicy, open_memory

    if config.model == "baseline":
        return BaselinePolicy(run, challenge, preset, clock, trace, score_context)
    return CrewPolicy(run, challenge, preset, clock, trace, score_context, parse_spec(config.supervisor_model),
                      parse_spec(config.worker_model), limits=LoopLimits(max_cost_usd=config.max_cost_usd),
                      memory=None if challenge.blind else open_memory(run, config), snapshot=snapshot,
                      floor=config.floor, retry_window_s=config.retry_window_s)
