"""The cost of scoring in the scorer's own bubblewrap sandbox against scoring without it, on the MiniPile smoke
preset: the same frozen model scored by the real harness both ways, alternating (side by side, so drift in
machine load hits each equally). Prints each scoring's wall time, the medians and their ratio.

    python benchmarks/scoring_sandbox.py [--runs 2] [--train-s 60]

The model comes from the challenge's own baseline recipe, trained for --train-s seconds on the smoke data.
"""

from __future__ import annotations

import argparse
import logging
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from challenges.framework.api import ScoreContext
from challenges.framework.data import prepare_data
from challenges.framework.harness import evaluate
from challenges.framework.loader import load_challenge
from challenges.framework.score_sandbox import bwrap_works

log = logging.getLogger("benchmarks.scoring_sandbox")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=2, help="scorings each way")
    parser.add_argument("--train-s", type=float, default=60.0, help="seconds the baseline recipe trains")
    args = parser.parse_args()
    if not bwrap_works():
        print("bubblewrap cannot run here: nothing to compare")
        return 1
    challenge = load_challenge("minipile")
    data = prepare_data(challenge, "smoke")
    with tempfile.TemporaryDirectory() as tmp:
        model = Path(tmp) / "model"
        command = challenge.baseline_command_line(data.data_dir, model, args.train_s)
        subprocess.run(command, shell=True, cwd=challenge.directory, check=True, capture_output=True)
        ctx = ScoreContext(challenge="minipile", preset="smoke", data_dir=data.data_dir, private_dir=data.private_dir,
                           scratch_dir=Path(tmp) / "scratch")
        times: dict[bool, list[float]] = {True: [], False: []}
        for run in range(args.runs):
            for sandboxed in (True, False):
                record = evaluate(challenge, model, ctx, Path(tmp) / "evaluations", sandboxed=sandboxed)
                if not record.ok:
                    print(f"scoring failed ({'sandboxed' if sandboxed else 'unsandboxed'}): {record.error}")
                    return 1
                times[sandboxed].append(record.duration_s)
                print(f"run {run + 1}: {'sandboxed  ' if sandboxed else 'unsandboxed'} {record.duration_s:7.2f} s  "
                      f"score {record.score:.4f}")
    inside, outside = statistics.median(times[True]), statistics.median(times[False])
    print(f"median wall time per scoring: sandboxed {inside:.2f} s, unsandboxed {outside:.2f} s, "
          f"ratio {inside / outside:.3f}")
    return 0


if __name__ == "__main__":
    logging.basicConfig(level=logging.WARNING)
    sys.exit(main())
