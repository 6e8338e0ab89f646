"""What the agents read. The system prompts and the task stay the same all run (a cacheable prefix);
what changes (budget, plan, ledger, memories, the last report) comes in each turn's message."""

from __future__ import annotations

from challenges.framework.spec import Challenge, Preset
from crew.loop.sizing import experiment_costs, size_bounds
from crew.run import reference
from crew.run.durations import format_duration

CHECKPOINT_EXAMPLE = """\
from checkpoints.training import TrainingCheckpointer
ckpt = TrainingCheckpointer("ckpt", every_s=300)          # saves every 5 min and on SIGTERM
state = ckpt.restore(model, optimizer, scheduler) or {"step": 0}
for step in range(state["step"], total_steps):
    train_one_step(step); ckpt.maybe_save(model, optimizer, scheduler, step=step + 1)
    if ckpt.stop_requested: break"""


def challenge_brief(challenge: Challenge, preset: Preset) -> str:
    rules = "\n".join([f"- allowed: {r}" for r in challenge.allowed]
                      + [f"- forbidden: {r}" for r in challenge.forbidden])
    return (f"# Challenge: {challenge.title} ({challenge.name}, preset {preset.name})\n"
            f"Metric: {challenge.metric.name}, {'higher' if challenge.metric.direction == 'max' else 'lower'} "
            f"is better. {_success_line(challenge)}\n"
            f"Submission: {challenge.submission}\nHardware: {preset.gpus} GPU(s).\nRules:\n{rules}\n\n"
            f"{challenge.task_text}")


def _success_line(challenge: Challenge) -> str:
    threshold = f"{challenge.metric.success_threshold:.0%}"
    if challenge.blind:  # no figure at all, the fixed reference's included
        return (f"Success: {threshold} better than the reference. BLIND: no agent sees any score; evaluate records "
                "each artifact for the final pick, so validate on your own split of the training data.")
    if challenge.reference_score is not None:
        return f"Success: {threshold} better than the reference score {challenge.reference_score:g}."
    return f"Success: {threshold} better than the baseline policy."


def supervisor_system(challenge: Challenge, preset: Preset) -> str:
    return f"""You are the supervisor of a research crew working on an ML challenge inside a hard time budget.
You plan and decide; you never run commands yourself. Each turn you get the budget and time left per phase,
the plan, the ledger of evaluations (the only scores that count: the scoring harness made them) with the
baseline's score, the jobs table, memories of earlier runs, and what happened since your last turn. Then act:
- update_plan(phase, status, minutes): keep the written plan current, one phase at a time.
- delegate(role, subtask, minutes): give a subtask to a worker: "engineer" (files, commands, training jobs,
  GPU, evaluate) or "scout" (arXiv, GitHub, memory). Be specific; say what to report back. Workers run at
  once: delegate to the engineer and the scout in the same turn (one engineer per GPU); you get a turn
  whenever one reports.
- wait(minutes): while a job trains, wait without spending model calls; you are woken by a job event.
- recall(query): search what this and earlier runs tried and how it scored.
- submit(evaluation_id, rationale): choose the final submission by naming an evaluation record. This ends the run.
Rules: quote scores only from the ledger. Size experiments to the budget: first short, fixed-length ones (each a
few percent of the budget: the briefing gives the sizes and what jobs of each size have cost so far), one change
each, kept or discarded by its score; then scale up the winner. Never start work that cannot finish before
wrap-up; submit the best verified evaluation before the deadline.

{challenge_brief(challenge, preset)}"""


def supervisor_briefing(tools, clock, meter, notes: list[str], memories: str, workers: str = "") -> str:
    """The supervisor's turn message: what changes between turns, compact and bounded."""
    baseline = reference.baseline(tools.challenge.name, tools.score_context.preset, tools.challenge.metric.name)
    baseline_line = baseline.describe() if baseline is not None else "baseline not scored yet"
    if tools.challenge.blind:
        baseline_line = "blind challenge: no scores shown"
    parts = [f"## Budget\n{clock.line()}; model cost so far ${meter.cost_usd:.2f}",
             f"## Plan\n{tools.plan.render()}",
             f"## Ledger (harness records; {baseline_line})\n{tools.ledger.summary()}",
             f"## Jobs\n{tools.jobs_table()}\n{tools.toolkit.jobs.devices_line()}",
             f"## What experiments cost so far ({size_bounds(clock.budget_s)})\n{experiment_costs_of(tools)}",
             f"## Subtasks under way\n{workers or 'None.'}"]
    if memories:
        parts.append(f"## Memories of earlier runs on this challenge\n{memories}")
    parts.append("## Since your last turn\n" + ("\n\n".join(notes) or "Nothing new."))
    return "\n\n".join(parts)


def experiment_costs_of(tools) -> str:
    jobs = [tools.toolkit.jobs.status(j) for j in tools.job_ids()]
    records = [] if tools.challenge.blind else tools.ledger.records()  # blind: no "best score" per size
    return experiment_costs(jobs, records, tools.clock.budget_s,
                            tools.challenge.metric.better)


def wrapup_note(clock, stopped_jobs: list[str]) -> str:
    return (f"WRAP-UP: {clock.line()}. Running jobs were stopped so they saved checkpoints "
            f"({', '.join(stopped_jobs) or 'none'}). Evaluate the best checkpoint if it has no record yet, then "
            "submit the best evaluation.")


def report_note(role: str, report: dict | None, stopped: str | None) -> str:
    """How a worker's subtask ended, for the supervisor's next turn."""
    if report is None:
        return f"The {role} was stopped because {stopped}, without a report."
    text = "\n".join(f"- {key}: {value}" for key, value in report.items())
    return f"Report from the {role}" + (f" (stopped: {stopped})" if stopped else "") + f":\n{text}"


def subtask_brief(delegated, tools, clock, others: list[str]) -> str:
    beside = (f"\n\nAt work beside you: {', '.join(others)}. You share the workspace: keep your files apart "
              "(a folder of your own for new code) and use only the GPUs gpu_status shows free." if others else "")
    return (f"Your subtask (time allotted {format_duration(delegated.minutes * 60)}):\n{delegated.subtask}\n\n"
            f"Budget: {clock.line()}\n\nLedger:\n{tools.ledger.summary()}{beside}")


def worker_system(role: str, challenge: Challenge, preset: Preset) -> str:
    if role == "engineer":
        duties = f"""You are the engineer. You work in the workspace (your current directory); the challenge data is
read-only under data/. Write code with write_file/edit_file, run short things with run_bash/run_python, and
run training as a background job with start_job, then wait for it with wait_for_job (no polling, no sleep).
The challenge's reference recipe is in baseline/. Long jobs must save
checkpoints and resume; use this helper:
{CHECKPOINT_EXAMPLE}
Score an artifact only with evaluate(artifact_path): a score exists only as an evaluation record. Record
what you try with propose_hypothesis before running it."""
    else:
        duties = """You are the scout. You find ideas and evidence: search_arxiv/read_arxiv_paper, search_github/
read_github_file, and recall (what earlier runs tried and how it turned out). You do not run experiments."""
    return f"""{duties}
Every command and job is bounded by the time budget. Keep outputs short. Never state a score that no
evaluation record holds. End your subtask by calling report(changed, commands, evaluations, learned, proposes).

{challenge_brief(challenge, preset)}"""
