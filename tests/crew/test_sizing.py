"""Experiment sizes for the supervisor: real jobs, sized by the wall time they took against the budget."""

from __future__ import annotations

import time

from challenges.framework.harness import Evaluation
from crew.loop.plan import Plan
from crew.loop.sizing import experiment_costs, size_bounds
from toolkit import Toolkit


def _record(eval_id: str, score: float, job: str) -> Evaluation:
    return Evaluation(id=eval_id, challenge="toy", preset="smoke", artifact="answer.txt", sha256="", ok=True,
                      score=score, metric={"name": "value", "direction": "max"}, experiment={"job": job})


def _wait(tk: Toolkit, job_id: str) -> None:
    deadline = time.monotonic() + 20
    while tk.jobs.status(job_id).running and time.monotonic() < deadline:
        time.sleep(0.1)


def test_jobs_are_grouped_by_size_with_their_wall_time_gpu_time_and_best_score(tmp_path):
    tk = Toolkit(tmp_path / "run", devices=["0", "1"])
    short = tk.start_job("true", "short")
    _wait(tk, short.record.id)
    medium = tk.start_job("sleep 1.5", "medium", gpus=2)
    _wait(tk, medium.record.id)
    jobs = [tk.jobs.status(j) for j in tk.jobs.ids()]
    records = [_record("eval-0001", 0.5, short.record.id), _record("eval-0002", 0.7, medium.record.id),
               _record("eval-0003", 0.6, medium.record.id)]
    # A 20 s budget: short is up to 1 s, medium up to 4 s.
    table = experiment_costs(jobs, records, budget_s=20, better=lambda a, b: a > b)
    lines = table.splitlines()
    assert lines[0].startswith("- short: 1 job(s), median ") and lines[0].endswith("; best 0.5000 (eval-0001)")
    assert lines[1].startswith("- medium: 1 job(s), median ") and lines[1].endswith(
        " GPU-min; best 0.7000 (eval-0002)")  # two GPUs for about 2 s
    assert "CPU only" not in lines[1] and "CPU only" not in lines[0]
    assert len(lines) == 2
    assert experiment_costs([], [], 20, lambda a, b: a > b) == "No jobs yet."


def test_the_plan_and_the_sizes_follow_the_budget():
    assert size_bounds(24 * 3600) == "short ≤ 1h12m, medium ≤ 4h48m, long above"
    exploration = next(i for i in Plan.initial(24 * 3600).items if i.phase == "exploration")
    assert "short fixed-length experiments (≤ 1h12m each)" in exploration.status
