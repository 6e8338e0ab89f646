"""`research-crew run`: check the request, prepare data, make the run directory, run the policy, record the end."""

from __future__ import annotations

import logging
import os
import signal
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from challenges.api import ChallengeError, ScoreContext
from challenges.data import prepare_data
from challenges.loader import load_challenge
from challenges.spec import Challenge, Preset
from crew import reference
from crew.baseline import BaselinePolicy
from crew.clock import Deadline
from crew.config import RunConfig
from crew.devices import gpu_count
from crew.durations import format_duration, parse_duration
from crew.errors import EXIT_DONE, EXIT_INTERRUPTED, EXIT_NO_SUBMISSION, CrewError
from crew.results import Outcome, build_result, write_report, write_result
from crew.rundir import RunDir
from crew.specs import ModelSpec, default_spec, parse_spec
from crew.trace import Trace

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RunRequest:
    challenge: str
    preset: str = "full"
    model: str | None = None
    supervisor_model: str | None = None
    worker_model: str | None = None
    budget: str | None = None
    max_cost_usd: float | None = None
    run_dir: Path | None = None


def start_run(request: RunRequest, say: Callable[[str], None] = log.info) -> tuple[int, RunDir]:
    """Run a challenge end to end; return the exit code and the run directory. Bad input raises CrewError."""
    try:
        challenge = load_challenge(request.challenge)
        preset = challenge.preset(request.preset)
    except ChallengeError as err:
        raise CrewError(err.message, err.hint) from err
    spec = _choose_policy(request, say)
    budget_s = parse_duration(request.budget) if request.budget else preset.budget_s
    _check_budget(challenge, preset, budget_s)
    device = _check_device(challenge, preset)
    if request.run_dir and Path(request.run_dir).exists():
        RunDir.create(challenge.name, request.run_dir)  # raises the "already exists" error before any work
    say(f"preparing data for {challenge.name} ({preset.name} preset)")
    try:
        data = prepare_data(challenge, preset.name, device)
    except ChallengeError as err:
        raise CrewError(err.message, err.hint) from err
    run = RunDir.create(challenge.name, request.run_dir)
    deadline = Deadline.start(budget_s)
    config = RunConfig(
        run_id=run.run_id, challenge=challenge.name, challenge_dir=str(challenge.directory), preset=preset.name,
        model=str(spec), supervisor_model=request.supervisor_model or str(spec),
        worker_model=request.worker_model or str(spec), budget_s=budget_s, started_at=deadline.started_at,
        device=device, data_dir=str(data.data_dir), max_cost_usd=request.max_cost_usd,
    )
    config.save(run.run_toml)
    (run.workspace / "data").symlink_to(data.data_dir, target_is_directory=True)
    trace = Trace(run.trace)
    trace.emit("run_started", challenge=challenge.name, preset=preset.name, model=str(spec),
               budget_s=budget_s, device=device, data_cached=data.cached)
    say(f"run {run.root} (budget {format_duration(budget_s)}, {device})")
    ctx = ScoreContext(challenge=challenge.name, preset=preset.name, data_dir=data.data_dir,
                       private_dir=data.private_dir, scratch_dir=run.scratch, device=device,
                       time_limit_s=preset.score_minutes * 60)
    exit_code, outcome = _execute(BaselinePolicy(run, challenge, preset, deadline, trace, ctx))
    baseline_score = outcome.submission.score if outcome.submission else None
    if baseline_score is None:
        baseline_score = reference.baseline_score(challenge.name, preset.name)
    else:
        reference.record_baseline_score(challenge.name, preset.name, baseline_score, run.run_id)
    write_result(run, build_result(config, challenge, outcome, deadline.elapsed_s(), baseline_score))
    trace.emit("run_finished", status=outcome.status, exit_code=exit_code, note=outcome.note)
    write_report(run, challenge)
    return exit_code, run


def _execute(policy: BaselinePolicy) -> tuple[int, Outcome]:
    """Run the policy; every way it can end becomes an Outcome, so result.json is always written."""
    previous = signal.signal(signal.SIGTERM, _raise_interrupt)
    try:
        evaluation = policy.execute()
    except CrewError as err:
        if err.exit_code != EXIT_INTERRUPTED:
            raise
        return EXIT_INTERRUPTED, Outcome("no_submission", note=err.message)
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED, Outcome("no_submission", note="interrupted")
    except Exception as err:  # a bug or a broken recipe: recorded, and the run still ends with its files
        (policy.run.root / "error.txt").write_text(traceback.format_exc())
        return EXIT_NO_SUBMISSION, Outcome("failed", note=f"{type(err).__name__}: {err} (see error.txt)")
    finally:
        signal.signal(signal.SIGTERM, previous)
    if evaluation is not None and evaluation.ok:
        return EXIT_DONE, Outcome("submitted", submission=evaluation)
    note = evaluation.error if evaluation is not None else "no artifact to score"
    return EXIT_NO_SUBMISSION, Outcome("no_submission", note=note)


def _raise_interrupt(signum, frame) -> None:
    raise KeyboardInterrupt


def _choose_policy(request: RunRequest, say: Callable[[str], None]) -> ModelSpec:
    for text in (request.supervisor_model, request.worker_model):
        if text:
            parse_spec(text)  # reject a malformed spec even where it is not used yet
    if request.model:
        spec = parse_spec(request.model)
        if spec.kind != "baseline":
            raise CrewError(f"model spec '{spec}' needs the LLM crew, which this version does not include yet",
                            "use --model baseline (the reference recipe, no LLM)")
        return spec
    spec, why = default_spec()
    if spec.kind != "baseline":
        say(f"{why}, but this version has no LLM crew yet: using the baseline policy")
        return ModelSpec("baseline")
    say(why)
    return spec


def _check_budget(challenge: Challenge, preset: Preset, budget_s: float) -> None:
    if budget_s < preset.min_budget_s:
        raise CrewError(
            f"a budget of {format_duration(budget_s)} is too small for {challenge.name}'s {preset.name} preset: "
            f"{format_duration(preset.score_minutes * 60)} is kept for scoring, so it needs at least "
            f"{format_duration(preset.min_budget_s)}",
            f"use --budget {format_duration(preset.min_budget_s)} or more "
            f"(the preset's own is {format_duration(preset.budget_s)})",
        )


def _check_device(challenge: Challenge, preset: Preset) -> str:
    available = gpu_count()
    if preset.gpus > available:
        cpu_presets = [name for name, p in challenge.presets.items() if p.gpus == 0]
        raise CrewError(
            f"{challenge.name}'s {preset.name} preset needs {preset.gpus} GPU(s) and this machine has "
            f"{available or 'none'} that torch can use",
            (f"run on a GPU machine, or try --preset {cpu_presets[0]} on this one" if cpu_presets
             else "run on a GPU machine"),
        )
    if available and os.environ.get("CUDA_VISIBLE_DEVICES") != "":
        return "cuda"
    return "cpu"
