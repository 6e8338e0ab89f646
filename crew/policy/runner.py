"""`research-crew run`: check the request, prepare data, make the run directory, run the policy, record the end."""

from __future__ import annotations

import json
import logging
import os
import shutil
import signal
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from challenges.framework.api import ChallengeError, ScoreContext
from challenges.framework.data import prepare_data
from challenges.framework.loader import load_challenge
from challenges.framework.score_sandbox import REQUIREMENTS_VARIABLE
from challenges.framework.spec import Challenge, Preset
from crew.agent.specs import ModelSpec, default_spec, parse_spec, require_usable
from crew.errors import EXIT_DONE, EXIT_INTERRUPTED, EXIT_NO_SUBMISSION, CrewError
from crew.loop.snapshots import load_snapshot
from crew.policy.protocol import Policy, make_policy
from crew.run import events, reference
from crew.run.clock import Clock
from crew.run.cluster import check_jobs
from crew.run.config import RunConfig, check_run_dir
from crew.run.devices import gpu_count
from crew.run.durations import format_duration, parse_duration
from crew.run.final_pick import final_pick
from crew.run.ledger import Ledger
from crew.run.results import Outcome, build_result, write_report, write_result
from crew.run.rundir import RunDir
from crew.run.sandboxing import check_sandbox, parse_choice, sandbox_line
from crew.run.trace import Trace
from crew.run.workspace_git import init_repo
from toolkit.paths import DATA_DIR
from toolkit.toolkit import place_data

log = logging.getLogger(__name__)
COST_CAP_PER_HOUR = 2.0


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
    budget_clock: str = "wall"
    sandbox: str = "bwrap"
    agent_network: str = "egress"
    skip_checks: bool = False  # start even when a quick doctor check fails
    install_requirements: bool = False  # install unmet [environment] requirements into the run's own folder
    retry_window: str | None = None  # e.g. 30m: how long model calls are retried in an outage
    floor: bool = True  # a crew run starts with the baseline recipe as experiment 0 (crew/policy/floor.py)
    jobs: str = "local"  # where the engineer's jobs run: local or slurm (crew.run.cluster)
    partition: str | None = None
    max_jobs: int | None = None  # --jobs slurm: the run's jobs on the cluster at once (default DEFAULT_MAX_JOBS)


def start_run(request: RunRequest, say: Callable[[str], None] = log.info) -> tuple[int, RunDir]:
    """Run a challenge end to end; return the exit code and the run directory. Bad input raises CrewError.
    Everything that can be checked before the run directory exists is checked first (challenge, models and
    their keys, budget, sandbox, GPU, doctor's quick checks), so a refused run leaves nothing behind."""
    try:
        challenge = load_challenge(request.challenge)
        preset = challenge.preset(request.preset)
        challenge = challenge.for_preset(preset.name)  # a preset's stated proxy metric, where it has one
    except ChallengeError as err:
        raise CrewError(err.message, err.hint) from err
    supervisor_spec, worker_spec, why = _choose_models(request)
    spec = supervisor_spec
    baseline = spec.kind == "baseline"
    if request.budget_clock not in ("wall", "active"):
        raise CrewError(f"unknown budget clock '{request.budget_clock}'", "use --budget-clock wall or active")
    budget_s = parse_duration(request.budget) if request.budget else preset.budget_s
    _check_budget(challenge, preset, budget_s)
    retry_window = parse_duration(request.retry_window) if request.retry_window else None
    sandbox, agent_network = parse_choice(request.sandbox, request.agent_network)
    check_sandbox(sandbox, baseline=baseline, network=agent_network)
    if baseline:  # no agent commands: no sandbox, and run.toml, the trace and result.json all say so
        sandbox = "none"
    max_jobs = check_jobs(request.jobs, request.partition, request.max_jobs)
    device = _check_device(challenge, preset, request.skip_checks)
    requirements_env = _requirements_env(challenge, say) if request.install_requirements else None
    if not request.skip_checks:
        _preflight(challenge, preset)
    if request.run_dir and Path(request.run_dir).exists():
        RunDir.create(challenge.name, request.run_dir)  # raises the "already exists" error before any work
    if why:
        say(why)
    say(f"preparing data for {challenge.name} ({preset.name} preset)")
    try:
        data = prepare_data(challenge, preset.name, device)
    except ChallengeError as err:
        raise CrewError(err.message, err.hint) from err
    max_cost = request.max_cost_usd
    if baseline:
        if max_cost is not None:
            say("--max-cost has no effect here: the baseline policy makes no model calls")
        max_cost = None
    elif max_cost is None:
        max_cost = default_cost_cap(budget_s)
    run = RunDir.create(challenge.name, request.run_dir)
    try:
        clock = Clock.start(budget_s, request.budget_clock, scoring_s=preset.score_minutes * 60.0)
        config = RunConfig(
            run_id=run.run_id, challenge=challenge.name, challenge_dir=str(challenge.directory),
            preset=preset.name, model=str(spec), supervisor_model=str(supervisor_spec),
            worker_model=str(worker_spec), budget_s=budget_s, started_at=clock.started_at,
            device=device, data_dir=str(data.data_dir), max_cost_usd=max_cost,
            budget_clock=request.budget_clock, sandbox=sandbox, agent_network=agent_network, floor=request.floor,
            retry_window_s=retry_window, requirements_env=str(requirements_env) if requirements_env else None,
            jobs=request.jobs, jobs_partition=request.partition, jobs_max=max_jobs,
        )
        config.save(run.run_toml)
    except BaseException:
        shutil.rmtree(run.root, ignore_errors=True)  # stopped before it began: leave nothing behind
        raise
    if max_cost is not None:
        say(f"model cost cap: ${max_cost:.2f} (change it with --max-cost)")
    if not baseline:
        for line in model_lines(supervisor_spec, worker_spec, retry_window):
            say(line)
    trace = Trace(run.trace)
    try:
        place_data(run.workspace / DATA_DIR, data.data_dir, bound=sandbox == "bwrap" and not baseline)
        if (challenge.directory / "baseline").is_dir():  # the task text points the agents at it
            shutil.copytree(challenge.directory / "baseline", run.workspace / "baseline",
                            ignore=shutil.ignore_patterns("__pycache__"))
        init_repo(run.workspace)  # every evaluation commits the code behind it
        trace.emit(events.RunStarted(challenge=challenge.name, preset=preset.name, model=str(spec),
                   budget_s=budget_s, device=device, data_cached=data.cached, budget_clock=request.budget_clock,
                   sandbox=sandbox, agent_network=agent_network))
    except Exception as err:  # stopped before its first step: result.json says why
        _record_early_end(run, config, challenge, clock, trace, f"setup failed: {type(err).__name__}: {err}")
        raise
    say(f"run {run.root} (budget {format_duration(budget_s)}, {device})")
    say(sandbox_line(sandbox, agent_network, baseline=baseline))
    return _run_policy(run, config, challenge, preset, data, clock, trace)


def resume_run(run_dir: Path, say: Callable[[str], None] = log.info) -> tuple[int, RunDir]:
    """Continue a run from its last completed step (exit 0/1 at once for a run that had finished)."""
    run = RunDir(Path(run_dir).resolve())
    config = check_run_dir(run.root)  # a damaged run.toml or result.json: one line naming it, exit 2
    trace = Trace(run.trace)
    if any(isinstance(e, events.RunFinished) and e.exit_code != EXIT_INTERRUPTED for e in trace.events()):
        result = json.loads(run.result.read_text())
        say(f"run {run.root} had already finished: {result['status']}")
        return (EXIT_DONE if result["status"] == "submitted" else EXIT_NO_SUBMISSION), run
    check_sandbox(config.sandbox, baseline=config.model == "baseline", resuming=True, network=config.agent_network)
    if config.requirements_env:
        _put_first_on_pythonpath(Path(config.requirements_env))
    try:
        challenge = load_challenge(Path(config.challenge_dir))
        preset = challenge.preset(config.preset)
        challenge = challenge.for_preset(preset.name)
        data = prepare_data(challenge, preset.name, config.device)
    except ChallengeError as err:
        raise CrewError(err.message, err.hint) from err
    snapshot = load_snapshot(run.state)
    clock = Clock.resume(config.budget_s, config.started_at, config.budget_clock, run.state,
                         scoring_s=preset.score_minutes * 60.0)
    resumes = sum(isinstance(e, events.Resumed) for e in trace.events()) + 1
    say(f"resuming {run.root} at step {snapshot['step'] if snapshot else 0} "
        f"({format_duration(clock.to_deadline_s())} left); resume #{resumes}")
    say(sandbox_line(config.sandbox, config.agent_network, baseline=config.model == "baseline"))
    if snapshot is None:
        trace.emit(events.Resumed(from_step=0))
    return _run_policy(run, config, challenge, preset, data, clock, trace, snapshot=snapshot, resumes=resumes)


def _run_policy(run: RunDir, config: RunConfig, challenge: Challenge, preset: Preset, data, clock: Clock,
                trace: Trace, snapshot: dict | None = None, resumes: int = 0) -> tuple[int, RunDir]:
    """Run the configured policy and always end with result.json, the trace's end and report.md."""
    _limit_gpu_memory(preset, config.device)
    ctx = ScoreContext(challenge=challenge.name, preset=preset.name, data_dir=data.data_dir,
                       private_dir=data.private_dir, scratch_dir=run.scratch, device=config.device,
                       time_limit_s=preset.score_minutes * 60)
    try:
        policy = make_policy(run, config, challenge, preset, clock, trace, ctx, snapshot)
    except CrewError as err:  # bad input found only now: the run still ends with a result.json saying why
        _record_early_end(run, config, challenge, clock, trace, f"{err.message} ({err.hint})")
        raise
    outcome = _execute(policy, run)
    outcome.resumes = resumes
    _settle_submission(policy, outcome, run, challenge, trace)
    if seeds := policy.reference_records(outcome):  # the baseline policy's scores are the reference
        reference.record_baseline_scores(challenge.name, preset.name, [r.full for r in seeds],
                                         [r.score for r in seeds], run.run_id, challenge.metric.name)
    baseline = reference.baseline(challenge.name, preset.name, challenge.metric.name)
    write_result(run, build_result(config, challenge, outcome, clock.elapsed_s(), baseline))
    exit_code = exit_code_of(outcome)
    _finished(trace, outcome, exit_code)
    write_report(run, challenge)
    return exit_code, run


def _execute(policy: Policy, run: RunDir) -> Outcome:
    """Run the policy; every way it can end becomes an Outcome, so result.json is always written. A run stopped
    early (a signal, an error) stays resumable."""
    previous = signal.signal(signal.SIGTERM, _raise_interrupt)
    try:
        return policy.execute()
    except CrewError as err:
        if err.exit_code != EXIT_INTERRUPTED:
            raise
        return Outcome("no_submission", note=err.message, interrupted=True)
    except KeyboardInterrupt:
        return Outcome("no_submission", note="interrupted", interrupted=True)
    except Exception as err:  # a bug or a broken recipe: recorded, and the run still ends with its files
        run.error_txt.write_text(traceback.format_exc())
        return Outcome("failed", note=f"{type(err).__name__}: {err} (see error.txt)", interrupted=True)
    finally:
        signal.signal(signal.SIGTERM, previous)


def _settle_submission(policy: Policy, outcome: Outcome, run: RunDir, challenge: Challenge, trace: Trace) -> None:
    """The one place that decides what is submitted, however the run ended: the policy's submission, else the
    best verified evaluation; for a policy that picks, the final pick; and always what was scored."""
    ledger = Ledger(run.evaluations, challenge)
    if outcome.submission is None and (best := ledger.best()) is not None:
        outcome.status, outcome.submission = "submitted", best
    if policy.picks_final and outcome.submission is not None:
        _pick_submission(ledger, challenge, outcome, trace)
    if outcome.submission is not None:  # what is submitted must be what was scored
        outcome.submission, changed = ledger.checked_submission(outcome.submission)
        if changed:
            trace.emit(events.SubmissionChecked(note=changed))
            outcome.note = f"{outcome.note}; {changed}".strip("; ")
            outcome.status = "submitted" if outcome.submission else "no_submission"


def exit_code_of(outcome: Outcome) -> int:
    """Stopped early: resumable (3); else submitted (0) or not (1)."""
    if outcome.interrupted:
        return EXIT_INTERRUPTED
    return EXIT_DONE if outcome.status == "submitted" else EXIT_NO_SUBMISSION


def _pick_submission(ledger: Ledger, challenge: Challenge, outcome: Outcome, trace: Trace) -> None:
    """However the crew ended (its supervisor's submit, the automatic best, an error), the final pick decides
    what is submitted: the best held-out score among the top dev records (crew/run/final_pick.py)."""
    # Blind: the supervisor chose without seeing a score, so the harness's own best record decides.
    choice = None if challenge.blind else outcome.supervisor_choice
    pick = final_pick(ledger.records(), challenge, choice)
    if pick.submission is not None:
        outcome.submission = pick.submission
    outcome.pick = pick.to_dict()
    # Ids only: held-out scores stay out of the trace, which a resumed crew's context may draw on.
    trace.emit(events.FinalPick(by=pick.by, evaluation=outcome.pick["evaluation"], dev_best=pick.dev_best,
               supervisor_choice=pick.supervisor_choice, candidates=[c.id for c in pick.candidates]))


def _record_early_end(run: RunDir, config: RunConfig, challenge: Challenge, clock: Clock, trace: Trace,
                      note: str) -> None:
    """A run that stopped before its first step: result.json and the trace's end say why."""
    outcome = Outcome("failed", note=note)
    write_result(run, build_result(config, challenge, outcome, clock.elapsed_s(),
                                   reference.baseline(challenge.name, config.preset, challenge.metric.name)))
    _finished(trace, outcome, EXIT_NO_SUBMISSION)


def _finished(trace: Trace, outcome: Outcome, exit_code: int) -> None:
    trace.emit(events.RunFinished(status=outcome.status, exit_code=exit_code, note=outcome.note))


def _raise_interrupt(signum, frame) -> None:
    raise KeyboardInterrupt


def model_lines(supervisor: ModelSpec, worker: ModelSpec, retry_window: float | None) -> list[str]:
    """What the start says about the models: a local one's price, and how long an outage is retried."""
    from crew.agent.models.retry import retry_window_s
    from crew.agent.models.usage import PRICES_ENV, billed_model

    lines = []
    for spec in dict.fromkeys((supervisor, worker)):
        if spec.kind == "replay":
            continue
        window = format_duration(retry_window_s(spec.base_url, retry_window))
        priced = "" if billed_model(spec.model, spec.base_url) else (
            f"; $0 per token (a server of your own, not in the price table: name it in a {PRICES_ENV} file "
            "to price it)")
        lines.append(f"model {spec}: outages retried for {window} (change it with --retry-window){priced}")
    return lines


def default_cost_cap(budget_s: float) -> float:
    """USD of model calls a run may spend unless --max-cost says otherwise: COST_CAP_PER_HOUR per hour of
    budget (a 24-hour run: $48, several times the projected cost with prompt caching), at least $1."""
    return round(max(1.0, COST_CAP_PER_HOUR * budget_s / 3600), 2)


def _choose_models(request: RunRequest) -> tuple[ModelSpec, ModelSpec, str]:
    """The supervisor's and the workers' model specs (--model for both, the role flags override), checked
    for what they need (a key, a replay file), and the line that says why when --model was not given."""
    why = ""
    if request.model:
        spec = parse_spec(request.model)
    else:
        spec, why = default_spec()
        why = why if spec.kind == "baseline" else f"{why}: using {spec}"
    supervisor = parse_spec(request.supervisor_model) if request.supervisor_model else spec
    worker = parse_spec(request.worker_model) if request.worker_model else spec
    if "baseline" in (supervisor.kind, worker.kind) and supervisor.kind != worker.kind:
        raise CrewError("the baseline policy has no LLM, so it cannot be combined with a model for one role",
                        "use --model baseline alone, or give model specs to both roles")
    for role in dict.fromkeys((supervisor, worker)):
        require_usable(role)
    return supervisor, worker, why


def _requirements_env(challenge: Challenge, say: Callable[[str], None]) -> Path | None:
    """--install-requirements: what the challenge's [environment] requirements lack, installed into a folder of its
    own under the cache and put first on this run's PYTHONPATH (its recipe, jobs and scorer); the user's
    environment is left as it is."""
    from challenges.framework.data import cache_root
    from challenges.framework.requirements import install, unmet

    if not unmet(challenge.requirements):
        return None
    try:
        folder = install(challenge.requirements, cache_root() / "envs")
    except ChallengeError as err:
        raise CrewError(err.message, err.hint) from err
    _put_first_on_pythonpath(folder)
    say(f"requirements installed into {folder}, for this run's processes only")
    return folder


def _put_first_on_pythonpath(folder: Path) -> None:
    """The recipe and jobs read PYTHONPATH; the sandboxed scorer (python -I) is told the folder by name."""
    os.environ["PYTHONPATH"] = os.pathsep.join([str(folder), *filter(None, [os.environ.get("PYTHONPATH")])])
    os.environ[REQUIREMENTS_VARIABLE] = str(folder)


def _check_budget(challenge: Challenge, preset: Preset, budget_s: float) -> None:
    if budget_s < preset.min_budget_s:
        raise CrewError(
            f"a budget of {format_duration(budget_s)} is too small for {challenge.name}'s {preset.name} preset: "
            f"{format_duration(preset.score_minutes * 60)} is kept for scoring, so it needs at least "
            f"{format_duration(preset.min_budget_s)}",
            f"use --budget {format_duration(preset.min_budget_s)} or more "
            f"(the preset's own is {format_duration(preset.budget_s)})",
        )


def _preflight(challenge: Challenge, preset: Preset) -> None:
    """doctor's quick checks (GPU, disk, hub access): refuse a run that could not finish preparing its data."""
    from crew.cli.doctor_checks import preflight_problem, run_checks

    problem = preflight_problem(run_checks(challenge, preset, quick=True))
    if problem is not None:
        raise CrewError(problem.message, problem.hint)


def _limit_gpu_memory(preset: Preset, device: str) -> None:
    """Jobs and scorers started from here see at most the preset's GPU memory (challenges.framework.gpu_memory)."""
    if device == "cuda" and preset.gpu_memory_gb:
        from challenges.framework.gpu_memory import job_environment

        os.environ.update(job_environment(preset.gpu_memory_gb))


def _check_device(challenge: Challenge, preset: Preset, skip_checks: bool = False) -> str:
    available = gpu_count()
    if preset.gpus > available and not skip_checks:
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
