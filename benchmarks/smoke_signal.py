"""Does a better recipe score better on each challenge's smoke preset? The baseline recipe at two strengths
(two training lengths; for compression, layers dropped or not; for merging, one expert or all), a few seeds
each, scored by the harness as a run scores it; one row per challenge.

    python benchmarks/smoke_signal.py [NAME ...] [--seeds 2] [--out DIR]

A row separates when the two strengths' mean scores are further apart than either strength's seed spread
(max minus min), in the metric's better direction. The score is the smoke preset's metric: a stated proxy
where it has one (`challenges show NAME`). Exit 1 if any row does not separate.
"""

from __future__ import annotations

import argparse
import os
import shlex
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from challenges.framework.api import ScoreContext
from challenges.framework.data import prepare_data
from challenges.framework.harness import evaluate
from challenges.framework.loader import load_challenge

# Per challenge: (weak, strong) extra recipe arguments, and the budget the recipe is given. Step counts where
# the recipe takes them (no race with a busy machine's clock), else two budgets.
# Pretraining: the smallest model size, batches of 8, 10 against 60 steps (a few minutes on a busy 2-core CPU).
STEPS = {"weak": ["--max-steps", "10"], "strong": ["--max-steps", "60"]}
PRETRAINING = {"budget_s": 900, **STEPS, "seeded": True, "extra": ["--size", "2L-64d", "--batch-size", "8"]}
STRENGTHS = {
    "minipile": PRETRAINING,
    "babylm": PRETRAINING,
    "edge_llm_training": PRETRAINING,
    "math_autoformalization": {"weak": [], "strong": [], "budget_s": {"weak": 25, "strong": 120}, "seeded": False},
    "llm_efficiency": {"weak": [], "strong": [], "budget_s": {"weak": 25, "strong": 120}, "seeded": False},
    # Compression: half the decoder layers dropped against none (the model fits the limit in float16).
    "edge_llm_compression": {"weak": ["--drop-fraction", "0.5"], "strong": [], "budget_s": 300, "seeded": False},
    # Merging: one expert alone against the average of all three (the held-out text spans every domain).
    "llm_merging": {"weak": ["--experts", "math_expert"], "strong": [], "budget_s": 300, "seeded": False},
}
SCORE_TIMEOUT_S = 600


@dataclass
class Cell:
    scores: list[float]

    @property
    def mean(self) -> float:
        return sum(self.scores) / len(self.scores)

    @property
    def spread(self) -> float:
        return max(self.scores) - min(self.scores)


def train_and_score(name: str, strength: str, seed: int, out: Path) -> float:
    challenge = load_challenge(name).for_preset("smoke")
    data = prepare_data(challenge, "smoke")
    plan = STRENGTHS[name]
    budget = plan["budget_s"][strength] if isinstance(plan["budget_s"], dict) else plan["budget_s"]
    submission = out / f"{name}-{strength}-{seed}" / "submission"
    command = challenge.baseline_command_line(data.data_dir, submission, budget)
    extra = [*plan.get("extra", []), *plan[strength], *(["--seed", str(seed)] if plan["seeded"] else [])]
    command += "".join(f" {shlex.quote(a)}" for a in extra)
    proc = subprocess.run(command, shell=True, cwd=challenge.directory, capture_output=True, text=True,
                          env={**os.environ, "PYTHONUNBUFFERED": "1"})
    if proc.returncode != 0:
        raise RuntimeError(f"{name} {strength} seed {seed}: the recipe failed\n{proc.stderr[-2000:]}")
    scratch = submission.parent / "scratch"
    scratch.mkdir(exist_ok=True)
    ctx = ScoreContext(challenge=name, preset="smoke", data_dir=data.data_dir, private_dir=data.private_dir,
                       scratch_dir=scratch, time_limit_s=SCORE_TIMEOUT_S)
    record = evaluate(challenge, submission, ctx, submission.parent / "evaluations", SCORE_TIMEOUT_S)
    if not record.ok:
        raise RuntimeError(f"{name} {strength} seed {seed}: scoring failed: {record.error}")
    return record.full


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("names", nargs="*", help=f"default: {', '.join(STRENGTHS)}")
    parser.add_argument("--seeds", type=int, default=2)
    parser.add_argument("--out", type=Path, help="where the models go (default: a temporary folder)")
    args = parser.parse_args()
    out = args.out or Path(tempfile.mkdtemp(prefix="smoke-signal-"))
    print("| challenge | smoke metric | weak: mean (spread) | strong: mean (spread) | separates | time |")
    print("|---|---|---|---|---|---|")
    all_separate = True
    for name in args.names or list(STRENGTHS):
        started = time.monotonic()
        metric = load_challenge(name).for_preset("smoke").metric
        cells = {s: Cell([train_and_score(name, s, seed, out) for seed in range(args.seeds)])
                 for s in ("weak", "strong")}
        weak, strong = cells["weak"], cells["strong"]
        gap = (strong.mean - weak.mean) if metric.direction == "max" else (weak.mean - strong.mean)
        separates = gap > max(weak.spread, strong.spread)
        all_separate &= separates
        print(f"| {name} | {metric.name} ({metric.direction}) | {weak.mean:.4f} ({weak.spread:.4f}) | "
              f"{strong.mean:.4f} ({strong.spread:.4f}) | {'yes' if separates else 'NO'} "
              f"(gap {gap:+.4f}) | {time.monotonic() - started:.0f}s |", flush=True)
    return 0 if all_separate else 1


if __name__ == "__main__":
    sys.exit(main())
