"""How large the supervisor's turn message is as a run grows: at experiment 1, 10 and 50 (and --experiments).

    python benchmarks/briefing_size.py [--experiments 50]

A toy run with the real tools: each experiment is a real background job, a real harness evaluation (every
seventh one fails), a hypothesis, a parent link and a lesson. At each mark the briefing the supervisor
would get now is built as the loop builds it, with a worker's report as "since your last turn" and ten
memory lines of typical length (what an earlier run on the challenge leaves). Tokens are characters / 4.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from crew_rig import build

from crew.loop.prompts import report_note, supervisor_briefing

MEMORIES = "\n".join(f"- eval-{n:04d} (raise the learning rate to {n}e-4 with a longer warm-up): score 0.4{n:03d}. "
                     "Lesson: a longer warm-up helps only with the larger batch; keep batch 64." for n in range(10))
REPORT = {"changed": "train.py (cosine schedule, warm-up 200 steps), configs/small.yaml",
          "commands": "start_job exp-small (4 min), evaluate ckpt/final", "evaluations": ["eval-0007"],
          "learned": "The cosine schedule beats the linear one at this size by a small margin; loss curves agree.",
          "proposes": "Scale the winner to the medium size (20 min) and try a wider model in parallel."}


def experiment(tools, n: int) -> None:
    answer = tools.toolkit.workspace / "answer.txt"
    answer.write_text("nan" if n % 7 == 0 else f"{0.5 + n / 1000:.3f}")
    job = tools.toolkit.start_job("true", f"exp-{n}")
    while tools.toolkit.jobs.status(job.record.id).running:
        time.sleep(0.05)
    parent = f"eval-{n - 1:04d}" if n > 1 else ""
    tools.evaluate("answer.txt", hypothesis=f"experiment {n}: a warm-up of {n * 10} steps lowers the loss early",
                   parent=parent, kind="improve" if parent else "draft", job_id=job.record.id)
    tools.note_lesson(f"eval-{n:04d}", f"a warm-up of {n * 10} steps changes the score by {n / 1000:.3f}; "
                      "keep it only if the next size agrees")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--experiments", type=int, default=50)
    args = parser.parse_args()
    marks = sorted({1, 10, args.experiments})
    print(f"{'experiments':>11} {'chars':>7} {'~tokens':>8} {'ledger':>7} {'jobs':>6} {'costs':>6}")
    with tempfile.TemporaryDirectory() as tmp:
        loop, _, _ = build(Path(tmp), 1, lambda i: {"text": "unused"}, record=False)
        tools = loop.tools
        for n in range(1, args.experiments + 1):
            experiment(tools, n)
            if n in marks:
                text = supervisor_briefing(tools, loop.clock, loop.meter, [report_note("engineer-3", REPORT, None)],
                                           MEMORIES, "- scout-4: search arXiv for warm-up schedules (3 steps, 9m left)")
                sections = {s.split("\n", 1)[0]: len(s) for s in text.split("\n\n## ")}
                section = {key: next((v for k, v in sections.items() if key in k), 0)
                           for key in ("Ledger", "Jobs", "What experiments cost")}
                print(f"{n:>11} {len(text):>7} {len(text) // 4:>8} {section['Ledger']:>7} {section['Jobs']:>6} "
                      f"{section['What experiments cost']:>6}")


if __name__ == "__main__":
    main()
